"""Fixtures for the Gravitino-compatibility tests: Flask test clients of apps on one fresh
database per backend and module (SQLite, PostgreSQL, MariaDB), with unique names per test; `as_user`
gives a client that authenticates as a user with `simple` (HTTP Basic), the default authenticator."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from connectors.sqlite import ROOT_ENV
from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.api.helpers import Api
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, fresh_database

ADMIN = "admin"


@pytest.fixture(scope="module", params=BACKENDS)
def backend_url(request, tmp_path_factory) -> Iterator[str]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path_factory.mktemp("compat")) as url:
        yield url


@pytest.fixture(scope="module")
def apps(backend_url, tmp_path_factory) -> Iterator[Callable[..., Flask]]:
    """apps(**settings): the app with these Settings overrides on this module's database (one per set)."""
    built: dict[tuple[Any, ...], Flask] = {}
    root = tmp_path_factory.mktemp("sqlite-root")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ROOT_ENV, str(root))

        def app(**overrides: Any) -> Flask:
            key = tuple(sorted(overrides.items()))
            if key not in built:
                built[key] = create_app(Settings(store_url=backend_url, **overrides))
            return built[key]

        yield app
    for built_app in built.values():
        services = built_app.extensions["gravimeta"]
        services.coordinator.runtime.heartbeat.stop()
        services.store.engine.dispose()


@pytest.fixture
def api(apps) -> Api:
    """Authorization off (the default): every caller may change everything."""
    return Api(apps().test_client())


AUTHORIZED = {"authorization_enabled": True, "service_admins": ADMIN}


@pytest.fixture
def as_user(apps) -> Callable[[str], Api]:
    """as_user(name): a client of the app with gravitino.authorization.enable=true, authenticated as `name`."""

    def client(name: str) -> Api:
        test_client = apps(**AUTHORIZED).test_client()
        credentials = base64.b64encode(f"{name}:secret".encode()).decode()
        test_client.environ_base["HTTP_AUTHORIZATION"] = f"Basic {credentials}"
        return Api(test_client)

    return client


@pytest.fixture
def store(apps):
    """The EntityStore of this module's database (to write rows as an older server would have)."""
    return apps().extensions["gravimeta"].store
