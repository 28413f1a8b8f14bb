"""The `sqlite` provider refuses, with a 400 and before any engine call, intent or store change, every
table SQLite cannot hold as gravimeta would create it: declared types come from a
fixed table, never from request text. Through the REST API on SQLite, PostgreSQL and MariaDB stores.

"Before any engine call" is proven with the failpoint `engine.before_call` armed to fail: a refusal that
came from the engine (after the intent) would be a 500 there, not a 400. Before this change, unparsed
types such as `TEXT CHECK (0)` reached the DDL, `TEXT AS (1)`, columns `c` and `C` or 2,001 columns
ended in a 500 OperationalError, and an alter the engine refused had already been applied to the store."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from connectors.sqlite import ROOT_ENV, schema_file
from gravimeta import errors, failpoints
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.types import PRIMITIVES
from tests.support.failpoints import Failpoints

TABLES = "/api/metalakes/m/catalogs/q/schemas/s/tables"


def unparsed(declared: str) -> dict[str, str]:
    return {"type": "unparsed", "unparsedType": declared}


@pytest.fixture
def engine_guarded(tmp_path, monkeypatch):
    """Failpoints on in this process, with `engine.before_call` failing every journalled engine call."""
    fp = Failpoints(tmp_path / "fp")
    for name, value in fp.env().items():
        monkeypatch.setenv(name, value)
    fp.arm("engine.before_call", action="fail", once=False)
    yield fp
    failpoints.configure(directory="")  # off again for the tests that follow in this process


@pytest.fixture
def client(db_url, tmp_path, monkeypatch, engine_guarded):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    client = create_app(Settings(store_url=db_url)).test_client()
    for path, body in [("/api/metalakes", {"name": "m"}),
                       ("/api/metalakes/m/catalogs", {"name": "q", "type": "relational", "provider": "sqlite",
                                                      "properties": {"path": "q.db"}})]:
        assert client.post(path, json=body).status_code == 200
    engine_guarded.disarm("engine.before_call")
    assert client.post("/api/metalakes/m/catalogs/q/schemas", json={"name": "s"}).status_code == 200
    assert client.post(TABLES, json={"name": "t", "columns": [{"name": "c", "type": "integer"}]}).status_code == 200
    engine_guarded.arm("engine.before_call", action="fail", once=False)
    return client


def engine_columns(tmp_path, table: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(schema_file(tmp_path / "sqlite-root" / "q.db", "s"))
    try:
        return [(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info(\"{table}\")")]
    finally:
        conn.close()


def journal(db_url: str) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text("SELECT id FROM gm_operation_journal")))
    finally:
        engine.dispose()


def refused(response, fragment: str) -> None:
    assert response.status_code == 400, (response.status_code, response.get_data(as_text=True)[:400])
    assert response.get_json()["type"] == "IllegalArgumentException"
    assert fragment in response.get_json()["message"], response.get_json()["message"]


CREATES = [
    ([{"name": "a", "type": unparsed("TEXT CHECK (0)")}], {}, "not an SQLite type name"),
    ([{"name": "a", "type": unparsed("INTEGER PRIMARY KEY")}], {}, "not an SQLite type name"),
    ([{"name": "a", "type": unparsed("TEXT REFERENCES x")}], {}, "not an SQLite type name"),
    ([{"name": "a", "type": unparsed("TEXT AS (1)")}], {}, "not an SQLite type name"),
    ([{"name": "a", "type": unparsed("TEXT COLLATE NOCASE")}], {}, "not an SQLite type name"),
    ([{"name": "a", "type": unparsed("INTEGER PRIMARY KEY")}],
     {"indexes": [{"indexType": "PRIMARY_KEY", "fieldNames": [["a"]]}]}, "not an SQLite type name"),
    ([{"name": "a", "type": "integer"}, {"name": "b", "type": "integer"}],
     {"indexes": [{"indexType": "PRIMARY_KEY", "fieldNames": [["a"]]},
                  {"indexType": "PRIMARY_KEY", "fieldNames": [["b"]]}]}, "more than one primary key"),
    ([{"name": "c", "type": "integer"}, {"name": "C", "type": "integer"}], {}, "differ only in case"),
    ([{"name": f"c{i}", "type": "integer"} for i in range(2001)], {}, "holds at most 2000"),
    ([{"name": "a", "type": "string", "autoIncrement": True}], {}, "auto-increment"),
]


def test_a_table_sqlite_cannot_hold_is_refused_before_the_engine_is_called(client, db_url, tmp_path):
    for columns, extra, fragment in CREATES:
        refused(client.post(TABLES, json={"name": "u", "columns": columns, **extra}), fragment)
    assert [t["name"] for t in client.get(TABLES).get_json()["identifiers"]] == ["t"]
    assert engine_columns(tmp_path, "u") == [] and journal(db_url) == []


def test_reserved_names_are_refused_on_create_and_rename_before_the_engine(client, db_url, tmp_path):
    refused(client.post(TABLES, json={"name": "sqlite_x", "columns": [{"name": "a", "type": "integer"}]}), "sqlite_")
    refused(client.put(f"{TABLES}/t", json={"updates": [{"@type": "rename", "newName": "SQLITE_t"}]}), "sqlite_")
    refused(client.put(f"{TABLES}/t", json={"updates": [{"@type": "rename", "newName": "t2"},
                                                      {"@type": "addColumn", "fieldName": ["C"], "type": "integer"}]}),
            "differ only in case")
    assert client.get(f"{TABLES}/t").status_code == 200 and journal(db_url) == []
    assert engine_columns(tmp_path, "t") == [("c", "INTEGER")]


def test_an_alter_sqlite_cannot_hold_leaves_store_and_engine_unchanged(client, tmp_path, engine_guarded):
    """Alters of a sqlite table are journalled (intent, engine, store): the engine's rules must run
    before the intent, so a refused alter reaches neither the engine nor the store (the armed
    `engine.before_call` failpoint would fail any engine call)."""
    before = client.get(f"{TABLES}/t").get_json()["table"]["columns"]
    for update, fragment in [
        ({"@type": "addColumn", "fieldName": ["C"], "type": "integer"}, "differ only in case"),
        ({"@type": "addColumn", "fieldName": ["d"], "type": unparsed("TEXT CHECK (0)")}, "not an SQLite type name"),
        ({"@type": "updateColumnType", "fieldName": ["c"], "newType": unparsed("INT GENERATED ALWAYS AS (1)")},
         "not an SQLite type name"),
    ]:
        refused(client.put(f"{TABLES}/t", json={"updates": [update]}), fragment)
        assert client.get(f"{TABLES}/t").get_json()["table"]["columns"] == before
        assert engine_columns(tmp_path, "t") == [("c", "INTEGER")]
    # the control: a change SQLite can make is made in both
    engine_guarded.disarm("engine.before_call")
    renamed = client.put(f"{TABLES}/t", json={"updates": [{"@type": "renameColumn", "oldFieldName": ["c"],
                                                           "newFieldName": "c2"}]})
    assert renamed.status_code == 200, renamed.get_json()
    assert engine_columns(tmp_path, "t") == [("c2", "INTEGER")]


def test_accepted_types_are_declared_from_the_fixed_table(client, tmp_path, engine_guarded):
    engine_guarded.disarm("engine.before_call")
    columns = [
        {"name": "a", "type": unparsed("varchar(20)")},
        {"name": "b", "type": unparsed("  unsigned   big int ")},
        {"name": "c", "type": unparsed("DOUBLE PRECISION")},
        {"name": "d", "type": unparsed("decimal(10, 5)")},
        {"name": "e", "type": "decimal(10,2)"},
        {"name": "f", "type": {"type": "list", "elementType": "integer", "containsNull": True}},
        {"name": "g", "type": "binary"},
        {"name": "h", "type": "timestamp(3)"},
    ]
    assert client.post(TABLES, json={"name": "typed", "columns": columns}).status_code == 200
    assert engine_columns(tmp_path, "typed") == [
        ("a", "TEXT"), ("b", "INTEGER"), ("c", "REAL"), ("d", "NUMERIC"), ("e", "NUMERIC"), ("f", "TEXT"),
        ("g", "BLOB"), ("h", "TEXT")]


def test_every_gravitino_type_has_an_sqlite_affinity():
    from connectors.sqlite.ddl import GRAVITINO_TYPES, UNPARSED_TYPES, affinity

    assert {affinity(t) for t in PRIMITIVES} <= {"INTEGER", "REAL", "NUMERIC", "BLOB", "TEXT"}
    for parameterised in ("decimal(10,2)", "varchar(5)", "char(2)", "fixed(8)", "time(3)", "timestamp(6)",
                          "timestamp_tz(6)", "geometry(4326)", "geography(4326)"):
        assert affinity(parameterised) in set(GRAVITINO_TYPES.values())
    assert set(UNPARSED_TYPES.values()) == {"INTEGER", "REAL", "NUMERIC", "BLOB", "TEXT"}
    with pytest.raises(errors.IllegalArgument):
        affinity(unparsed("INT); DROP TABLE t; --"))
