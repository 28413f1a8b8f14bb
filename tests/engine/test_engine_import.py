"""Objects created in a catalog's engine outside gravimeta are visible, as in Gravitino.

Gravitino (core/.../catalog/SchemaOperationDispatcher.java and TableOperationDispatcher.java, v1.3.0)
lists schemas and tables from the catalog's engine, and a load of an object its entity store lacks
imports it (a new id, the engine's columns) under a WRITE lock of the parent; a drop's answer is the
engine's. gravimeta does the same for every connector with an engine of its own (sqlite, hive): lists
are the union of store and engine names, a load of an engine-only object imports it under the parent's
claim (a structural change), a drop of an engine-only object drops it in the engine and answers true.
The memory connector only mirrors the store (nothing to import).

Each test runs on SQLite, PostgreSQL and MariaDB store backends (the db_url fixture); the engines are a
sqlite catalog file made before the catalog (by a connector of its own and by plain sqlite3, as another
tool would) and the hive stub's metastore, filled through its own API.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from connectors.base import CatalogContext, Connector
from connectors.hive import HiveConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector, schema_file
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Column, Schema, Table
from gravimeta.store.database import create_store_engine
from gravimeta.store.models import CatalogRow, ColumnRow, SchemaRow, TableRow

M = "m"


@pytest.fixture
def world(db_url, tmp_path, monkeypatch) -> Iterator[dict[str, Any]]:
    root = tmp_path / "sqlite-catalogs"
    root.mkdir()
    monkeypatch.setenv(ROOT_ENV, str(root))
    client = create_app(Settings(store_url=db_url)).test_client()
    assert client.post("/api/metalakes", json={"name": M}).status_code == 200
    engine = create_store_engine(db_url)
    try:
        yield {"client": client, "root": root, "engine": engine}
    finally:
        engine.dispose()


def _columns() -> list[Column]:
    return [Column("id", "long", nullable=False), Column("note", "string")]


def sqlite_engine(world: dict[str, Any], path: str = "existing.db") -> tuple[dict[str, str], SQLiteCatalogConnector]:
    """A catalog file made before any catalog names it: schema `sales` with table `orders` (written by a
    connector of its own) and `events` (written by plain sqlite3, with SQLite's own type names)."""
    properties = {"path": path}
    outside = SQLiteCatalogConnector(CatalogContext("elsewhere", "tool", properties))
    outside.prepare_engine()
    outside.create_schema(Schema("sales"))
    outside.create_table("sales", Table("orders", _columns()))
    conn = sqlite3.connect(schema_file(world["root"] / path, "sales"))
    conn.execute('CREATE TABLE "events" (id INTEGER PRIMARY KEY, kind VARCHAR(20) NOT NULL, at REAL, raw BLOB)')
    conn.commit()
    conn.close()
    return properties, outside


def hive_engine(stub: Any) -> tuple[dict[str, str], HiveConnector, str]:
    """Databases and tables put into the stub's metastore through its own API (no gravimeta involved)."""
    properties = {"metastore.uris": stub.uri, "client.timeout-ms": "3000"}
    outside = HiveConnector(CatalogContext("elsewhere", "tool", properties))
    schema = f"sales_{uuid.uuid4().hex[:8]}"
    outside.create_schema(Schema(schema, "from hive", {"owner": "etl"}))
    outside.create_table(schema, Table("orders", _columns(), comment="outside", properties={"fmt": "orc"}))
    outside.create_table(schema, Table("events", [Column("kind", "string")]))
    return properties, outside, schema


@pytest.fixture(params=["sqlite", "hive"])
def engine_catalog(request, world) -> tuple[str, str, Connector]:
    """(catalog, schema, outside connector): a catalog created on an engine that already has schema
    `schema` with tables `orders` and `events`."""
    if request.param == "sqlite":
        properties, outside = sqlite_engine(world)
        schema = "sales"
    else:
        properties, outside, schema = hive_engine(request.getfixturevalue("hive_stub"))
    create_catalog(world["client"], "c", request.param, properties)
    return "c", schema, outside


def create_catalog(client: FlaskClient, name: str, provider: str, properties: dict[str, str]) -> None:
    response = client.post(f"/api/metalakes/{M}/catalogs", json={
        "name": name, "type": "relational", "provider": provider, "properties": properties})
    assert response.status_code == 200, response.json


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.json
    return sorted(i["name"] for i in response.json["identifiers"])


def store_rows(world: dict[str, Any], catalog: str, schema: str) -> dict[str, Any]:
    """The store's rows for the schema: its id and {table: (id, [column names])}."""
    with world["engine"].connect() as conn:
        catalog_id = conn.scalar(select(CatalogRow.id).where(CatalogRow.name == catalog))
        schema_id = conn.scalar(select(SchemaRow.id).where(SchemaRow.catalog_id == catalog_id, SchemaRow.name == schema))
        tables = {}
        for table_id, name in conn.execute(select(TableRow.id, TableRow.name).where(TableRow.schema_id == schema_id)):
            columns = conn.scalars(select(ColumnRow.name).where(ColumnRow.table_id == table_id)
                                   .order_by(ColumnRow.position))
            tables[name] = (table_id, list(columns))
        return {"schema": schema_id, "tables": tables}


# ------------------------------------------------------------------ list and load


def test_a_catalog_on_an_existing_engine_lists_its_schemas_and_tables(world, engine_catalog):
    client = world["client"]
    catalog, schema, _ = engine_catalog
    assert schema in names(client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas"))
    assert names(client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables")) == ["events", "orders"]
    assert store_rows(world, catalog, schema)["schema"] is None  # listing imports nothing (as in Gravitino)


def test_a_load_imports_the_engine_object_into_the_store(world, engine_catalog):
    client = world["client"]
    catalog, schema, _ = engine_catalog
    base = f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}"
    response = client.get(f"{base}/tables/orders")
    assert response.status_code == 200, response.json
    table = response.json["table"]
    assert [(c["name"], c["type"], c["nullable"]) for c in table["columns"]] == [("id", "long", False),
                                                                               ("note", "string", True)]
    rows = store_rows(world, catalog, schema)
    assert rows["schema"] is not None, "loading a table imports its schema first"
    assert list(rows["tables"]) == ["orders"]
    table_id, columns = rows["tables"]["orders"]
    assert table_id is not None and columns == ["id", "note"]
    # imported once: a second load reads the same row, the schema load too
    assert client.get(f"{base}/tables/orders").json["table"] == table
    assert client.get(base).status_code == 200
    assert store_rows(world, catalog, schema) == rows
    # the lists show each name once
    assert names(client.get(f"{base}/tables")) == ["events", "orders"]
    assert names(client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas")).count(schema) == 1


def test_an_imported_table_takes_tags_and_property_changes(world, engine_catalog):
    client = world["client"]
    catalog, schema, _ = engine_catalog
    full = f"{catalog}.{schema}.orders"
    assert client.post(f"/api/metalakes/{M}/tags", json={"name": "pii"}).status_code == 200
    # before the import the store has no such table; the load imports it, then it is an ordinary table
    assert client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables/orders").status_code == 200
    response = client.post(f"/api/metalakes/{M}/objects/table/{full}/tags", json={"tagsToAdd": ["pii"]})
    assert response.status_code == 200, response.json
    assert response.json["names"] == ["pii"]
    response = client.put(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables/orders",
                          json={"updates": [{"@type": "setProperty", "property": "k", "value": "v"}]})
    assert response.status_code == 200, response.json
    assert response.json["table"]["properties"]["k"] == "v"


def test_sqlite_columns_come_from_the_engine_with_their_types(world):
    client = world["client"]
    properties, _ = sqlite_engine(world)
    create_catalog(client, "c", "sqlite", properties)
    response = client.get(f"/api/metalakes/{M}/catalogs/c/schemas/sales/tables/events")
    assert response.status_code == 200, response.json
    table = response.json["table"]
    assert [(c["name"], c["type"], c["nullable"]) for c in table["columns"]] == [
        ("id", "long", True), ("kind", {"type": "unparsed", "unparsedType": "VARCHAR(20)"}, False),
        ("at", "double", True), ("raw", "binary", True)]
    assert [(i["indexType"].upper(), i["fieldNames"]) for i in table["indexes"]] == [("PRIMARY_KEY", [["id"]])]


def test_hive_schema_and_table_keep_the_metastore_definition(world, hive_stub):
    client = world["client"]
    properties, _, schema = hive_engine(hive_stub)
    create_catalog(client, "c", "hive", properties)
    response = client.get(f"/api/metalakes/{M}/catalogs/c/schemas/{schema}")
    assert response.status_code == 200, response.json
    assert (response.json["schema"]["comment"], response.json["schema"]["properties"]) == ("from hive", {"owner": "etl"})
    table = client.get(f"/api/metalakes/{M}/catalogs/c/schemas/{schema}/tables/orders").json["table"]
    assert (table["comment"], table["properties"]) == ("outside", {"fmt": "orc"})


def test_an_object_in_neither_store_nor_engine_is_still_a_404(world, engine_catalog):
    client = world["client"]
    catalog, schema, _ = engine_catalog
    response = client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables/nope")
    assert (response.status_code, response.json["type"]) == (404, "NoSuchTableException")
    response = client.get(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/nope")
    assert (response.status_code, response.json["type"]) == (404, "NoSuchSchemaException")
    assert store_rows(world, catalog, schema)["schema"] is None


# ------------------------------------------------------------------ drop


def test_a_drop_of_an_engine_only_table_drops_it_in_the_engine(world, engine_catalog):
    client = world["client"]
    catalog, schema, outside = engine_catalog
    response = client.delete(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables/orders")
    assert response.status_code == 200, response.json
    assert response.json["dropped"] is True
    assert outside.list_tables(schema) == ["events"]
    assert store_rows(world, catalog, schema)["tables"] == {}
    again = client.delete(f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}/tables/orders")
    assert again.json["dropped"] is False


def test_a_drop_of_an_engine_only_schema_drops_it_in_the_engine(world, engine_catalog):
    client = world["client"]
    catalog, schema, outside = engine_catalog
    base = f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}"
    refused = client.delete(base)  # not cascade: the engine's tables count
    assert (refused.status_code, refused.json["type"]) == (409, "NonEmptySchemaException"), refused.json
    assert schema in outside.list_schemas()
    response = client.delete(f"{base}?cascade=true")
    assert response.status_code == 200, response.json
    assert response.json["dropped"] is True
    assert schema not in outside.list_schemas()


def test_a_non_cascade_drop_counts_engine_only_tables_of_a_stored_schema(world, engine_catalog):
    client = world["client"]
    catalog, schema, outside = engine_catalog
    base = f"/api/metalakes/{M}/catalogs/{catalog}/schemas/{schema}"
    assert client.get(base).status_code == 200  # the schema is imported; its tables are not
    refused = client.delete(base)
    assert (refused.status_code, refused.json["type"]) == (409, "NonEmptySchemaException"), refused.json
    assert outside.list_tables(schema) == ["events", "orders"]


# ------------------------------------------------------------------ a catalog re-created on a dropped one's file


def test_a_sqlite_catalog_recreated_on_a_dropped_ones_path_sees_what_it_inherits(world):
    """Gravitino's catalog drop leaves the engine's data alone, and a new catalog on the same source lists
    and loads what is there: so does a sqlite catalog re-created on the file of a dropped one."""
    client = world["client"]
    create_catalog(client, "first", "sqlite", {"path": "shared.db"})
    base = f"/api/metalakes/{M}/catalogs/first"
    assert client.post(f"{base}/schemas", json={"name": "s"}).status_code == 200
    response = client.post(f"{base}/schemas/s/tables", json={"name": "t", "columns": [{"name": "id", "type": "long"}]})
    assert response.status_code == 200, response.json
    assert client.delete(f"{base}?force=true").json["dropped"] is True
    assert (world["root"] / "shared.db").exists()  # the engine's data outlives the catalog

    create_catalog(client, "second", "sqlite", {"path": "shared.db"})
    base = f"/api/metalakes/{M}/catalogs/second"
    assert names(client.get(f"{base}/schemas")) == ["s"]
    assert names(client.get(f"{base}/schemas/s/tables")) == ["t"]
    loaded = client.get(f"{base}/schemas/s/tables/t")
    assert loaded.status_code == 200, loaded.json
    assert [c["name"] for c in loaded.json["table"]["columns"]] == ["id"]
    assert client.delete(f"{base}/schemas/s?cascade=true").json["dropped"] is True
    assert names(client.get(f"{base}/schemas")) == []


# ------------------------------------------------------------------ the engine cannot be reached


def test_a_list_says_when_the_engine_cannot_be_reached(world):
    """A list is the engine's and the store's names; without the engine it would be a guess, so it is a
    ConnectionFailed (502, code 1007) that names the engine, as Gravitino's list (the engine's) fails."""
    from tests.support.servers import free_port

    client = world["client"]
    create_catalog(client, "c", "hive", {"metastore.uris": f"http://127.0.0.1:{free_port()}"})
    response = client.get(f"/api/metalakes/{M}/catalogs/c/schemas")
    assert (response.status_code, response.json["code"]) == (502, 1007), response.json
    assert "Hive metastore" in response.json["message"]


def test_a_memory_catalog_has_nothing_to_import(world):
    client = world["client"]
    create_catalog(client, "c", "memory", {})
    assert names(client.get(f"/api/metalakes/{M}/catalogs/c/schemas")) == []
    response = client.get(f"/api/metalakes/{M}/catalogs/c/schemas/s")
    assert (response.status_code, response.json["type"]) == (404, "NoSuchSchemaException")


def test_a_property_change_of_an_imported_sqlite_table_leaves_the_engine_table_alone(world):
    """The imported `kind VARCHAR(20)` reads as unparsed VARCHAR(20), whose affinity gravimeta would write
    as TEXT: a change that needs nothing of the engine must not rebuild the table to get there."""
    client = world["client"]
    properties, _ = sqlite_engine(world)
    create_catalog(client, "c", "sqlite", properties)
    base = f"/api/metalakes/{M}/catalogs/c/schemas/sales/tables/events"
    assert client.get(base).status_code == 200
    response = client.put(base, json={"updates": [{"@type": "setProperty", "property": "k", "value": "v"}]})
    assert response.status_code == 200, response.json
    conn = sqlite3.connect(schema_file(world["root"] / "existing.db", "sales"))
    try:
        assert [r[2] for r in conn.execute('PRAGMA table_info("events")')] == ["INTEGER", "VARCHAR(20)", "REAL", "BLOB"]
    finally:
        conn.close()
