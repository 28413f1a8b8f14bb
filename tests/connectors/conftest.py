"""Connector fixtures: a SQLite catalog under a per-test root, and the Hive-like stub as a real
subprocess (one per test module, faults cleared before every test)."""

from __future__ import annotations

import uuid

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector
from tests.connectors.stub_process import StubProcess


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


@pytest.fixture(params=["sqlite", "hive"])
def connector(request):
    """Each real connector, for the contract every provider must keep."""
    return request.getfixturevalue(f"{request.param}_connector")


@pytest.fixture
def name():
    """A fresh name factory: name('orders') -> 'orders_1a2b3c4d'."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}_{suffix}"
