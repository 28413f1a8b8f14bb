"""Operator-facing tests: gravimeta as an operator meets it, served by real gunicorn processes
(`gravimeta serve`), on real SQLite and PostgreSQL stores. Every process a test starts is stopped in
its fixture; every wait is bounded."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.databases import fresh_database
from tests.support.servers import ServerProcess, discard


def wait_until(what: str, condition: Callable[[], Any], timeout: float = 20.0, every: float = 0.05) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(every)


def worker_pids(master_pid: int) -> set[int]:
    """The gunicorn workers of a master: its child processes."""
    try:
        return {int(p) for p in Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()}
    except FileNotFoundError:
        return set()


def get(url: str, timeout: float = 10.0) -> requests.Response:
    return requests.get(url, timeout=timeout)


def ready_status(server: ServerProcess) -> tuple[int, dict[str, Any]]:
    response = get(f"{server.url}/api/health/ready")
    return response.status_code, response.json()


def check(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The named check of a health body."""
    found = [c for c in body["checks"] if c["name"] == name]
    assert found, f"no check {name!r} in {body}"
    return found[0]


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[..., ServerProcess]]:
    """Start `gravimeta serve` (gunicorn) on a store URL (default: a fresh migrated SQLite database),
    with GRAVIMETA_* settings in `env`. Returns once /api/version answers."""
    started: list[ServerProcess] = []
    with ExitStack() as stack:

        def start(store_url: str | None = None, workers: int = 2, env: dict[str, str] | None = None,
                  timeout: float = 60.0) -> ServerProcess:
            url = store_url or stack.enter_context(fresh_database("sqlite", tmp_path))
            server = ServerProcess(url, workers=workers, env=env or {},
                                   log_path=tmp_path / f"server{len(started)}.log")
            started.append(server)
            server.start(timeout)
            return server

        try:
            yield start
        finally:
            discard(*started)


@contextmanager
def claim_held(store_url: str, *path: str, sqlite_root: str = "") -> Iterator[None]:
    """This test process holds a LEASE_TABLE claim on `path` in the store (as another replica would)
    until the block ends; then its app is taken down (heartbeat stopped, node row removed). `sqlite_root`:
    the replica's sqlite catalog root (it records it in the store for `gravimeta repair`)."""
    from connectors.sqlite import ROOT_ENV
    from gravimeta.app import create_app
    from gravimeta.config import Settings
    from gravimeta.entities import NameIdentifier

    before = os.environ.get(ROOT_ENV)
    try:  # building the app points this process's sqlite provider at the root: undone below
        services = create_app(Settings(store_url=store_url, distributed_lock_enabled=True,
                                       distributed_lock_backend="LEASE_TABLE",
                                       sqlite_catalog_root=sqlite_root)).extensions["gravimeta"]
    finally:
        if before is None:
            os.environ.pop(ROOT_ENV, None)
        else:
            os.environ[ROOT_ENV] = before
    runtime = services.coordinator.runtime
    claim = services.coordinator.claims.claim(NameIdentifier.of(*path))
    try:
        yield
    finally:
        claim.release()
        runtime.heartbeat.stop()
        runtime.registry.unregister()
        services.store.engine.dispose()
