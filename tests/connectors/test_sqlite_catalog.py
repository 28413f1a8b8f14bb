"""The SQLite connector makes real tables in real files, quotes every name, and never leaves its root."""

from __future__ import annotations

import copy
import os
import sqlite3

import pytest

from connectors.base import CatalogContext
from connectors.sqlite import (
    SQLiteCatalogConnector,
    quote,
    resolve_catalog_path,
    schema_file,
    schema_file_name,
)
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table


def open_schema(connector: SQLiteCatalogConnector, schema: str) -> sqlite3.Connection:
    """A plain sqlite3 connection to a schema's database file, as any SQLite tool would open it."""
    return sqlite3.connect(schema_file(connector.path, schema))


def sql_of(conn: sqlite3.Connection, table: str) -> str:
    return conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]


def columns_of(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return [tuple(r[1:6]) for r in conn.execute(f"PRAGMA table_info({quote(table)})")]


@pytest.fixture
def sales(sqlite_connector):
    sqlite_connector.create_schema(Schema("sales"))
    return sqlite_connector


# ------------------------------------------------------------------ layout and DDL


def test_the_catalog_is_a_sqlite_file_listing_its_schema_files(sales, sqlite_root):
    catalog_file = sqlite_root / "catalogs" / "sq.db"
    rows = sqlite3.connect(catalog_file).execute("SELECT name, file FROM gravimeta_schemas").fetchall()
    [(name, file_name)] = rows
    assert name == "sales" and file_name.startswith(schema_file_name("sales").removesuffix(".sqlite") + ".")
    assert (sqlite_root / "catalogs" / "sq.db.schemas" / file_name).is_file()


def test_create_table_issues_real_ddl_with_mapped_types_keys_and_defaults(sales):
    sales.create_table("sales", Table("orders", [
        Column("id", "long", nullable=False),
        Column("price", "decimal(10,2)", default_value={"type": "literal", "dataType": "decimal(10,2)", "value": "0.00"}),
        Column("note", "varchar(20)", default_value={"type": "literal", "dataType": "varchar(20)", "value": "it's"}),
        Column("ratio", "double"),
        Column("blob", "binary"),
        Column("flag", "boolean", default_value={"type": "literal", "dataType": "boolean", "value": "true"}),
        Column("tags", {"type": "list", "elementType": "string", "containsNull": True}),
        Column("at", "timestamp", default_value={"type": "function", "funcName": "current_timestamp", "funcArgs": []}),
        Column("code", "string", nullable=False),
    ], indexes=[{"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["id"]]},
                {"indexType": "UNIQUE_KEY", "name": "uk_code", "fieldNames": [["code"]]}]))
    conn = open_schema(sales, "sales")
    assert columns_of(conn, "orders") == [
        ("id", "INTEGER", 1, None, 1), ("price", "NUMERIC", 0, "0.00", 0), ("note", "TEXT", 0, "'it''s'", 0),
        ("ratio", "REAL", 0, None, 0), ("blob", "BLOB", 0, None, 0), ("flag", "NUMERIC", 0, "1", 0),
        ("tags", "TEXT", 0, None, 0), ("at", "TEXT", 0, "CURRENT_TIMESTAMP", 0), ("code", "TEXT", 1, None, 0),
    ]
    conn.execute("INSERT INTO orders (id, code) VALUES (1, 'a')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO orders (id, code) VALUES (2, 'a')")  # the UNIQUE key is real
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO orders (id) VALUES (3)")  # NOT NULL is real


def test_auto_increment_needs_a_single_integer_primary_key(sales):
    table = Table("t", [Column("id", "integer", nullable=False, auto_increment=True)],
                  indexes=[{"indexType": "PRIMARY_KEY", "fieldNames": [["id"]]}])
    sales.create_table("sales", table)
    assert "AUTOINCREMENT" in sql_of(open_schema(sales, "sales"), "t")
    with pytest.raises(errors.IllegalArgument, match="auto-increment"):
        sales.create_table("sales", Table("u", [Column("id", "integer", auto_increment=True)]))


def test_unparsed_types_must_be_sqlite_type_names(sales):
    sales.create_table("sales", Table("t", [Column("a", {"type": "unparsed", "unparsedType": "varchar(5)"})]))
    with pytest.raises(errors.IllegalArgument):
        sales.create_table("sales", Table("u", [Column("a", {"type": "unparsed", "unparsedType": "int); DROP TABLE t; --"})]))
    assert sales.list_tables("sales") == ["t"]


def test_names_sqlite_reserves_are_rejected(sales):
    with pytest.raises(errors.IllegalArgument, match="sqlite_"):
        sales.create_table("sales", Table("sqlite_stat9", [Column("a", "integer")]))


def test_tables_differing_only_in_case_conflict_because_sqlite_ignores_case(sales):
    sales.create_table("sales", Table("Orders", [Column("a", "integer")]))
    with pytest.raises(errors.TableAlreadyExists, match="case-insensitive"):
        sales.create_table("sales", Table("orders", [Column("a", "integer")]))
    sales.rename_table("sales", "Orders", "sales", "orders")  # a case-only rename works
    assert sales.list_tables("sales") == ["orders"]


def test_an_injection_attempt_is_just_a_name(sales):
    evil = 'x"; DROP TABLE victim; --'
    sales.create_table("sales", Table("victim", [Column("a", "integer")]))
    sales.create_table("sales", Table(evil, [Column(evil, "integer")]))
    sales.alter_table("sales", Table(evil, [Column(evil, "integer")]), Table(evil, [Column(evil + "2", "integer")]))
    assert sales.list_tables("sales") == sorted(["victim", evil])


# ------------------------------------------------------------------ alter keeps data


def test_alter_renames_drops_and_adds_columns_in_place_keeping_rows(sales):
    before = Table("t", [Column("id", "integer"), Column("old", "string"), Column("gone", "string")])
    sales.create_table("sales", before)
    conn = open_schema(sales, "sales")
    conn.execute("INSERT INTO t VALUES (1, 'kept', 'x')")
    conn.commit()
    after = copy.deepcopy(before)
    after.columns[1].name = "new"
    del after.columns[2]
    after.columns.append(Column("added", "integer", default_value={"type": "literal", "dataType": "integer", "value": "7"}))
    sales.alter_table("sales", before, after)
    assert conn.execute("SELECT * FROM t").fetchall() == [(1, "kept", 7)]
    assert "RENAME" not in sql_of(conn, "t") and "gravimeta_rebuild" not in sql_of(conn, "t")


def test_changes_sqlite_cannot_make_in_place_rebuild_the_table_keeping_rows(sales):
    before = Table("t", [Column("id", "integer"), Column("v", "string")])
    sales.create_table("sales", before)
    conn = open_schema(sales, "sales")
    conn.execute("INSERT INTO t VALUES (1, '42')")
    conn.commit()
    after = copy.deepcopy(before)
    after.columns[1].type = "long"  # type change
    after.columns[0].nullable = False  # nullability change
    after.columns.insert(0, after.columns.pop())  # position change
    after.indexes = [{"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["id"]]}]
    sales.alter_table("sales", before, after)
    assert columns_of(conn, "t") == [("v", "INTEGER", 0, None, 0), ("id", "INTEGER", 1, None, 1)]
    assert conn.execute("SELECT v, id FROM t").fetchall() == [(42, 1)]
    assert sales.list_tables("sales") == ["t"]


def test_an_alter_the_rows_cannot_satisfy_fails_cleanly_and_changes_nothing(sales):
    before = Table("t", [Column("id", "integer"), Column("v", "string")])
    sales.create_table("sales", before)
    conn = open_schema(sales, "sales")
    conn.execute("INSERT INTO t VALUES (1, NULL)")
    conn.commit()
    after = copy.deepcopy(before)
    after.columns[1].nullable = False
    with pytest.raises(errors.IllegalArgument, match="existing rows"):
        sales.alter_table("sales", before, after)
    assert columns_of(conn, "t")[1] == ("v", "TEXT", 0, None, 0)


def test_moving_a_table_to_another_schema_keeps_its_rows_and_definition(sales):
    sales.create_schema(Schema("archive"))
    sales.create_table("sales", Table("t", [Column("id", "integer", nullable=False)],
                                      indexes=[{"indexType": "PRIMARY_KEY", "fieldNames": [["id"]]}]))
    conn = open_schema(sales, "sales")
    conn.execute("INSERT INTO t VALUES (1), (2)")
    conn.commit()
    conn.close()
    sales.rename_table("sales", "t", "archive", "t_old")
    archive = open_schema(sales, "archive")
    assert archive.execute("SELECT id FROM t_old ORDER BY id").fetchall() == [(1,), (2,)]
    assert columns_of(archive, "t_old") == [("id", "INTEGER", 1, None, 1)]


# ------------------------------------------------------------------ the root directory


@pytest.mark.parametrize("path", ["../outside.db", "a/../../outside.db", "/etc/passwd", "..", ".", "", "C:\\x.db",
                                  "\\\\server\\share\\x.db"])
def test_catalog_paths_cannot_escape_the_root(sqlite_root, path):
    with pytest.raises(errors.IllegalArgument):
        SQLiteCatalogConnector.validate_properties({"path": path})


def test_a_symlink_out_of_the_root_is_rejected(sqlite_root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, sqlite_root / "link")
    with pytest.raises(errors.IllegalArgument, match="outside"):
        SQLiteCatalogConnector.validate_properties({"path": "link/cat.db"})


def test_a_symlink_planted_after_creation_is_caught_on_use(sqlite_root, tmp_path):
    connector = SQLiteCatalogConnector(CatalogContext("m", "c", {"path": "later/cat.db"}))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, sqlite_root / "later")
    with pytest.raises(errors.IllegalArgument):
        connector.list_schemas()
    assert list(outside.iterdir()) == []


def test_missing_path_and_bad_declared_values_are_rejected_and_unknown_keys_kept(sqlite_root):
    with pytest.raises(errors.IllegalArgument, match=r"required and must be set: \[path\]"):
        SQLiteCatalogConnector.validate_properties({})
    SQLiteCatalogConnector.validate_properties({"path": "a.db", "jdbc-url": "x"})  # undeclared: stored as is
    with pytest.raises(errors.IllegalArgument, match="busy-timeout"):
        SQLiteCatalogConnector.validate_properties({"path": "a.db", "busy-timeout-ms": "soon"})


def test_the_path_of_a_sqlite_catalog_cannot_be_altered(sqlite_root):
    with pytest.raises(errors.IllegalArgument, match="immutable"):
        SQLiteCatalogConnector.validate_property_changes({"path": "b.db"}, [], {"path": "b.db"})
    SQLiteCatalogConnector.validate_property_changes({"busy-timeout-ms": "10"}, [], {"path": "a.db"})


def test_paths_inside_the_root_resolve_there(sqlite_root):
    assert resolve_catalog_path("a/b/c.db") == (sqlite_root / "a/b/c.db").resolve()


def test_the_root_defaults_under_gravimeta_home(monkeypatch, tmp_path):
    monkeypatch.delenv("GRAVIMETA_SQLITE_CATALOG_ROOT", raising=False)
    monkeypatch.setenv("GRAVIMETA_HOME", str(tmp_path))
    assert resolve_catalog_path("x.db") == (tmp_path / "sqlite-catalogs" / "x.db").resolve()


# ------------------------------------------------------------------ testConnection


def test_connection_test_accepts_a_new_or_valid_catalog_file(sqlite_connector):
    sqlite_connector.test_connection()  # not created yet: its directory is creatable
    sqlite_connector.create_schema(Schema("s"))
    sqlite_connector.test_connection()


def test_connection_test_rejects_a_file_that_is_not_a_database(sqlite_root):
    (sqlite_root / "junk.db").write_bytes(b"this is not sqlite" * 100)
    connector = SQLiteCatalogConnector(CatalogContext("m", "c", {"path": "junk.db"}))
    with pytest.raises(errors.ConnectionFailed, match="not"):
        connector.test_connection()
    with pytest.raises(errors.ConnectionFailed):
        connector.list_schemas()


def test_connection_test_rejects_a_path_under_a_regular_file(sqlite_root):
    (sqlite_root / "plain").write_text("a file, not a directory")
    connector = SQLiteCatalogConnector(CatalogContext("m", "c", {"path": "plain/cat.db"}))
    with pytest.raises(errors.ConnectionFailed, match="not writable"):
        connector.test_connection()


def test_orphan_schema_file_left_by_an_interrupted_drop_is_not_resurrected(sales):
    sales.create_table("sales", Table("t", [Column("a", "integer")]))
    file = schema_file(sales.path, "sales")
    assert file is not None
    kept = file.read_bytes()
    sales.drop_schema("sales", cascade=True)
    file.write_bytes(kept)  # as if the process died between the registry commit and the unlink
    assert "sales" not in sales.list_schemas()
    sales.create_schema(Schema("sales"))
    assert sales.list_tables("sales") == [] and schema_file(sales.path, "sales") != file
