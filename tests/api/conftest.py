"""Fixtures for the API tests: a Flask test client on a fresh migrated SQLite database per test,
and a ready-made metalake, catalog, schema and table with unique names."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from connectors.memory import MemoryConnector
from connectors.properties import CatalogProperties, PropertyEntry, java_boolean
from connectors.registry import ConnectorRegistry
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Table
from gravimeta.errors import ConnectionFailed, UnsupportedOperation
from tests.api.helpers import Api, Ref


@pytest.fixture
def app(sqlite_url):
    return create_app(Settings(store_url=sqlite_url))


@pytest.fixture
def client(app) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def api(client) -> Api:
    return Api(client)


@pytest.fixture
def metalake(api) -> Ref:
    return api.create_metalake(comment="a lake", properties={"owner": "tests"})


@pytest.fixture
def catalog(api, metalake) -> Ref:
    return api.create_catalog(metalake, comment="a catalog")


@pytest.fixture
def schema(api, catalog) -> Ref:
    return api.create_schema(catalog, comment="a schema", properties={"k": "v"})


@pytest.fixture
def table(api, schema) -> Ref:
    return api.create_table(schema, comment="a table", properties={"format": "memory"})


class FlakyConnector(MemoryConnector):
    """A memory connector whose engine misbehaves on request, to test error paths:
    `reachable=false` fails testConnection; tables named explode* crash the engine; no purge."""

    catalog_properties = CatalogProperties((PropertyEntry("reachable", "false fails testConnection", decode=java_boolean),))
    supports_purge = False

    def test_connection(self) -> None:
        if self.context.properties.get("reachable") == "false":
            raise ConnectionFailed(f"cannot reach the engine of catalog {self.context.catalog}")

    def create_table(self, schema: str, table: Table, **fenced: Any) -> None:
        if table.name.startswith("explode"):
            raise RuntimeError("the engine crashed")
        super().create_table(schema, table, **fenced)

    def purge_table(self, schema: str, name: str, **fenced: Any) -> bool:
        raise UnsupportedOperation("purge is not supported")


@pytest.fixture
def flaky_catalog(app, api, metalake) -> Ref:
    """A catalog served by FlakyConnector (provider `flaky`)."""
    app.extensions["gravimeta"].connectors.registry = ConnectorRegistry(extra={"flaky": FlakyConnector})
    return api.create_catalog(metalake, provider="flaky")
