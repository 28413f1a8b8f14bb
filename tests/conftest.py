"""Shared fixtures: real databases per backend, skipped only when that server is not reachable
(.ci/run makes sure both are up, so CI never skips them)."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.support.databases import BACKENDS, backend_available, fresh_database

_available: dict[str, bool] = {}


def require_backend(backend: str) -> None:
    if backend not in _available:
        _available[backend] = backend_available(backend)
    if not _available[backend]:
        if os.environ.get("CI"):
            pytest.fail(f"{backend} is not reachable, and CI must test it")
        pytest.skip(f"{backend} server not reachable")


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path):
    """A fresh, migrated database URL on each backend (parametrized)."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path):
    with fresh_database("sqlite", tmp_path) as url:
        yield url


@pytest.fixture
def unique():
    """A short random suffix for names, so tests never collide."""
    return uuid.uuid4().hex[:8]
