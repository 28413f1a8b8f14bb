"""Fixtures for the hardening suite: apps with chosen settings (Flask test client), and real
`gravimeta serve` processes on SQLite for schemathesis, authentication and shutdown tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.support.databases import fresh_database
from tests.support.servers import ServerProcess, discard

ERROR_KEYS = {"code", "type", "message"}  # no "stack": Gravitino leaves out null fields


def assert_error_body(body: Any, code: int | None = None) -> None:
    """A Gravitino error body: {code, type, message, stack}, non-empty type and message."""
    assert isinstance(body, dict) and set(body) == ERROR_KEYS, body
    assert isinstance(body["code"], int) and body["code"] != 0, body
    assert isinstance(body["type"], str) and body["type"], body
    assert isinstance(body["message"], str) and body["message"], body
    if code is not None:
        assert body["code"] == code, body


@pytest.fixture
def make_app(sqlite_url) -> Callable[..., Any]:
    """create_app on this test's fresh SQLite database, with Settings overrides."""

    def make(**overrides: Any) -> Any:
        return create_app(Settings(store_url=sqlite_url, **overrides))

    return make


@pytest.fixture
def start_server(tmp_path) -> Iterator[Callable[..., ServerProcess]]:
    """Start `gravimeta serve` (gunicorn) on a fresh SQLite database with GRAVIMETA_* env settings."""
    started: list[ServerProcess] = []

    def start(env: dict[str, str] | None = None, workers: int = 1, store_url: str | None = None) -> ServerProcess:
        if store_url is None:
            store_url = stack.enter_context(fresh_database("sqlite", tmp_path))
        process = ServerProcess(store_url, workers=workers, env=env or {}, log_path=tmp_path / f"server{len(started)}.log")
        started.append(process.start())
        return process

    from contextlib import ExitStack

    with ExitStack() as stack:
        yield start
        discard(*started)  # graceful shutdown has its own test
