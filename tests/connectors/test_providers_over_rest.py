"""The sqlite and hive providers behind the REST API: properties validated (400), testConnection per
the wire spec (HTTP 200 with code 0 or an error code), and REST changes land in the real engine."""

from __future__ import annotations

import sqlite3

import pytest

from connectors.sqlite import schema_file
from gravimeta.app import create_app
from gravimeta.config import Settings


@pytest.fixture
def client(sqlite_url, sqlite_root):
    app = create_app(Settings(store_url=sqlite_url))
    client = app.test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    return client


def create_catalog(client, provider: str, properties: dict[str, str], name: str = "c"):
    return client.post("/api/metalakes/m/catalogs", json={
        "name": name, "type": "RELATIONAL", "provider": provider, "properties": properties,
    })


@pytest.mark.parametrize("provider, properties", [
    ("sqlite", {}),
    ("sqlite", {"path": "../escape.db"}),
    ("sqlite", {"path": "/abs.db"}),
    ("sqlite", {"path": "ok.db", "busy-timeout-ms": "soon"}),
    ("sqlite", {"path": "ok.db", "in-use": "true"}),  # reserved (undeclared keys are stored as given)
    ("hive", {}),
    ("hive", {"metastore.uris": "thrift://127.0.0.1:9083"}),
])
def test_bad_catalog_properties_are_a_400(client, provider, properties):
    response = create_catalog(client, provider, properties)
    assert response.status_code == 400, response.json
    assert response.json["code"] == 1001


def test_a_sqlite_catalog_over_rest_makes_real_tables(client, sqlite_root):
    assert create_catalog(client, "sqlite", {"path": "rest/cat.db"}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs/c/testConnection").json == {"code": 0}
    assert client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "we=ird"}).status_code == 200
    response = client.post("/api/metalakes/m/catalogs/c/schemas/we=ird/tables", json={
        "name": "t--1", "columns": [{"name": "id", "type": "long", "nullable": False}, {"name": "n", "type": "varchar(5)"}],
    })
    assert response.status_code == 200, response.json
    conn = sqlite3.connect(schema_file(sqlite_root / "rest" / "cat.db", "we=ird"))
    assert [tuple(r[1:4]) for r in conn.execute('PRAGMA table_info("t--1")')] == [("id", "INTEGER", 1), ("n", "TEXT", 0)]


def test_hive_test_connection_reports_an_unreachable_metastore_with_code_1007(client):
    from tests.support.servers import free_port

    assert create_catalog(client, "hive", {"metastore.uris": f"http://127.0.0.1:{free_port()}"}).status_code == 200
    response = client.post("/api/metalakes/m/catalogs/c/testConnection")
    assert response.status_code == 200
    assert response.json["code"] == 1007 and "Hive metastore" in response.json["message"]


def test_a_hive_catalog_over_rest_uses_the_stub(client, stub):
    assert create_catalog(client, "hive", {"metastore.uris": stub.uri}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs/c/testConnection").json == {"code": 0}
    schema = f"rest_{stub.port}_{id(client)}"
    assert client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": schema}).status_code == 200
    assert stub.raw("GET", f"/databases/{schema}")[0] == 200
    stub.fault("fail", mode="reset", ops=["create_table"])
    response = client.post(f"/api/metalakes/m/catalogs/c/schemas/{schema}/tables", json={
        "name": "t", "columns": [{"name": "id", "type": "long"}],
    })
    assert response.status_code == 502 and response.json["code"] == 1007
    assert "may or may not have been applied" in response.json["message"]
