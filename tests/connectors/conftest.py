"""Connector fixtures: a SQLite catalog under a per-test root, the Hive-like stub as a real subprocess
(one per test module, faults cleared before every test), and the JDBC providers on a fresh database of
the machine's PostgreSQL and MariaDB servers (tests/support/jdbc.py)."""

from __future__ import annotations

import uuid

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.jdbc.mysql import MySQLConnector
from connectors.jdbc.postgresql import PostgreSQLConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector
from tests.conftest import require_backend
from tests.connectors.stub_process import StubProcess
from tests.support import jdbc


@pytest.fixture
def sqlite_root(tmp_path, monkeypatch):
    root = tmp_path / "sqlite-root"
    root.mkdir()
    monkeypatch.setenv(ROOT_ENV, str(root))
    return root


@pytest.fixture
def sqlite_connector(sqlite_root) -> SQLiteCatalogConnector:
    """A sqlite catalog as catalog creation leaves it (prepare_engine made its file)."""
    connector = SQLiteCatalogConnector(CatalogContext("lake", "sq", {"path": "catalogs/sq.db"}))
    connector.prepare_engine()
    return connector


@pytest.fixture
def stub(hive_stub: StubProcess) -> StubProcess:
    """The module's stub, running and without faults (a test may have crashed it)."""
    if hive_stub.process is None or hive_stub.process.poll() is not None:
        hive_stub.start()
    hive_stub.clear_faults()
    return hive_stub


@pytest.fixture
def hive_connector(stub: StubProcess) -> HiveConnector:
    return HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": stub.uri, "client.timeout-ms": "3000"}))


def _jdbc_connector(provider: str, tmp_path, name):
    require_backend(jdbc.BACKEND[provider])
    with jdbc.target(provider, tmp_path) as properties:
        kind = PostgreSQLConnector if provider == "jdbc-postgresql" else MySQLConnector
        connector = kind(CatalogContext("lake", "jd", properties))
        connector.prepare_engine()
        try:
            yield connector
        finally:
            connector.close()
            if provider == "jdbc-mysql":  # its schemas are databases of the whole server
                jdbc.drop_mysql_databases("_" + name.suffix)


@pytest.fixture
def jdbc_postgresql_connector(tmp_path, name):
    """A jdbc-postgresql catalog on a fresh database, as catalog creation leaves it."""
    yield from _jdbc_connector("jdbc-postgresql", tmp_path, name)


@pytest.fixture
def jdbc_mysql_connector(tmp_path, name):
    """A jdbc-mysql catalog on the MariaDB server with a fresh fence database; the databases the test
    made as schemas are dropped afterwards."""
    yield from _jdbc_connector("jdbc-mysql", tmp_path, name)


@pytest.fixture(params=["sqlite", "hive", "jdbc_postgresql", "jdbc_mysql"])
def connector(request):
    """Each real connector, for the contract every provider must keep."""
    return request.getfixturevalue(f"{request.param}_connector")


class Names:
    """name('orders') -> 'orders_1a2b3c4d': every name of one test ends with the test's own `suffix`."""

    def __init__(self) -> None:
        self.suffix = uuid.uuid4().hex[:8]

    def __call__(self, base: str) -> str:
        return f"{base}_{self.suffix}"


@pytest.fixture
def name() -> Names:
    """A fresh name factory."""
    return Names()
