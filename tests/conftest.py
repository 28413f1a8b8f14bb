"""Shared fixtures: real databases per backend, skipped only when that server is not reachable
(.ci/run makes sure both are up, so CI never skips them)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from tests.support.databases import BACKENDS, backend_available, drop_templates, fresh_database

_available: dict[str, bool] = {}


def require_backend(backend: str) -> None:
    if backend not in _available:
        _available[backend] = backend_available(backend)
    if not _available[backend]:
        if os.environ.get("CI"):
            pytest.fail(f"{backend} is not reachable, and CI must test it")
        pytest.skip(f"{backend} server not reachable")


def pytest_collection_modifyitems(items):
    """Run the tests marked `slow` first (in their collected order). pytest-xdist hands the first
    items out one per worker in turn, so the long ones start together at the beginning and the short
    ones fill the gaps; collected last, a 90 s soak could start when the others were almost done and
    leave its worker running alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session, exitstatus):
    """Drop this process's migrated template databases (tests/support/databases.py)."""
    drop_templates()


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path):
    """A fresh, migrated database URL on each backend (parametrized)."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="session")
def _migrated_sqlite_template(tmp_path_factory):
    """One migrated SQLite file per session; tests get copies (migrating costs ~0.3 s each time)."""
    directory = tmp_path_factory.mktemp("sqlite-template")
    with fresh_database("sqlite", directory) as url:
        yield Path(url.removeprefix("sqlite:///"))


@pytest.fixture
def sqlite_url(tmp_path, _migrated_sqlite_template):
    """A fresh, migrated SQLite database (a copy of the session's template)."""
    target = tmp_path / f"gm_{uuid.uuid4().hex[:8]}.db"
    shutil.copyfile(_migrated_sqlite_template, target)
    return f"sqlite:///{target}"


@pytest.fixture
def unique():
    """A short random suffix for names, so tests never collide."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def hive_stub(tmp_path_factory):
    """The out-of-process Hive-like metastore (connectors/hive_stub), one per test module."""
    from tests.connectors.stub_process import StubProcess

    stub = StubProcess(tmp_path_factory.mktemp("hive-stub")).start()
    yield stub
    stub.stop()
