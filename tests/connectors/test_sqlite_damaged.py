"""A `sqlite` catalog whose engine files are damaged, and paths the file system cannot hold, through the
REST API: a catalog or schema file that is not a database (garbage, a truncated header, a valid header
over garbage pages) answers 502 ConnectionFailedException with a message naming the catalog file, never
a 500; a `path` with a component longer than the file system allows (ENAMETOOLONG) answers 400.

Before this change the damaged files answered 500 (sqlite3.DatabaseError "file is not a database" /
"database disk image is malformed" escaped the translation) and the 300-character component a 500
OSError from Path.resolve()."""

from __future__ import annotations

import sqlite3

import pytest

from connectors.sqlite import ROOT_ENV, schema_file
from gravimeta.app import create_app
from gravimeta.config import Settings

CATALOG = "/api/metalakes/m/catalogs/q"
SCHEMAS = f"{CATALOG}/schemas"
TABLES = f"{SCHEMAS}/s/tables"


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "sqlite-root"
    monkeypatch.setenv(ROOT_ENV, str(root))
    return root


@pytest.fixture
def client(sqlite_url, root):
    client = create_app(Settings(store_url=sqlite_url)).test_client()
    for path, body in [("/api/metalakes", {"name": "m"}),
                       ("/api/metalakes/m/catalogs", {"name": "q", "type": "relational", "provider": "sqlite",
                                                      "properties": {"path": "q.db"}}),
                       (SCHEMAS, {"name": "s"}),
                       (TABLES, {"name": "t", "columns": [{"name": "c", "type": "integer"}]})]:
        response = client.post(path, json=body)
        assert response.status_code == 200, response.get_data(as_text=True)
    return client


def _valid_header_then_garbage(path) -> None:
    """Keep the first 100 bytes (SQLite's header), overwrite the pages: 'database disk image is malformed'."""
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xa5" * (len(data) - 100))


DAMAGE = {
    "garbage": lambda p: p.write_bytes(b"this is not a database at all\n" * 200),
    "truncated-header": lambda p: p.write_bytes(p.read_bytes()[:40]),
    "pages-overwritten": _valid_header_then_garbage,
}


def _engine_error(response, fragment: str) -> None:
    body = response.get_json()
    assert response.status_code == 502, (response.status_code, response.get_data(as_text=True)[:500])
    assert body["type"] == "ConnectionFailedException" and body["code"] == 1007, body
    assert fragment in body["message"], body["message"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_catalog_file_is_502(client, root, damage):
    DAMAGE[damage](root / "q.db")
    for call in (lambda: client.get(SCHEMAS), lambda: client.post(SCHEMAS, json={"name": "s2"})):
        _engine_error(call(), "'q.db'")


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_schema_file_is_502(client, root, damage):
    DAMAGE[damage](schema_file(root / "q.db", "s"))
    for call in (lambda: client.get(TABLES),
                 lambda: client.post(TABLES, json={"name": "t2", "columns": [{"name": "c", "type": "integer"}]}),
                 lambda: client.delete(f"{TABLES}/t")):
        _engine_error(call(), "'q.db'")


@pytest.mark.parametrize("path", ["a" * 300 + ".db", "dir/" + "b" * 300 + "/x.db",
                                  "c" * 250 + ".db"])  # 253 bytes: fits, but its schema directory would not
def test_overlong_path_component_is_400(client, path):
    response = client.post("/api/metalakes/m/catalogs", json={
        "name": "long", "type": "relational", "provider": "sqlite", "properties": {"path": path}})
    body = response.get_json()
    assert response.status_code == 400, (response.status_code, response.get_data(as_text=True)[:500])
    assert body["type"] == "IllegalArgumentException", body
    assert "too long" in body["message"], body["message"]
    assert client.get("/api/metalakes/m/catalogs/long").status_code == 404


def test_overlong_path_in_connection_test_is_400(client):
    response = client.post("/api/metalakes/m/catalogs/testConnection", json={
        "name": "long", "type": "relational", "provider": "sqlite", "properties": {"path": "d" * 300}})
    body = response.get_json()  # a connection test answers 200 with the error in its body (as Gravitino's)
    assert body["code"] == 1001 and body["type"] == "IllegalArgumentException", body
    assert "too long" in body["message"], body["message"]


# ------------------------------------------------------------------ text the engine files hold that gravimeta cannot


def _rename_in_schema(path, old: bytes, new: bytes) -> None:
    """Rewrite a table's or column's name in a schema file's own schema (sqlite_master), bytes for bytes, as
    another program could have written it: SQLite keeps names as it was given them, UTF-8 or not."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET name = CAST(replace(CAST(name AS BLOB), ?, ?) AS TEXT), "
                     "tbl_name = CAST(replace(CAST(tbl_name AS BLOB), ?, ?) AS TEXT), "
                     "sql = CAST(replace(CAST(sql AS BLOB), ?, ?) AS TEXT)", (old, new) * 3)
        conn.commit()
    finally:
        conn.close()


def _schema_named(catalog_file, raw: bytes) -> None:
    """A registry row whose schema name is `raw` (not necessarily UTF-8)."""
    conn = sqlite3.connect(catalog_file)
    try:
        conn.execute("INSERT INTO gravimeta_schemas (name, file) VALUES (CAST(? AS TEXT), 'elsewhere.sqlite')", (raw,))
        conn.commit()
    finally:
        conn.close()


def _writable_now(path) -> None:
    """Another writer gets the file at once (no busy wait)."""
    conn = sqlite3.connect(path, timeout=0)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _make_table(client, name: str, column: str = "c") -> None:
    response = client.post(TABLES, json={"name": name, "columns": [{"name": column, "type": "integer"}]})
    assert response.status_code == 200, response.get_data(as_text=True)


def _unreadable(response, fragment: str) -> None:
    _engine_error(response, "SQLite catalog file 'q.db'")
    assert fragment in response.get_json()["message"], response.get_json()["message"]


def test_a_schema_name_that_is_not_utf8_is_a_502_for_the_schema_list(client, root):
    _schema_named(root / "q.db", b"a\xffb")
    _unreadable(client.get(SCHEMAS), "b'a\\xffb'")
    assert client.get(f"{SCHEMAS}/s").status_code == 200  # the other rows still read


def test_a_schema_name_with_nul_is_a_502_for_the_schema_list(client, root):
    _schema_named(root / "q.db", b"a\x00b")
    _unreadable(client.get(SCHEMAS), "NUL")


def test_a_table_name_that_is_not_utf8_is_a_502_for_every_call_that_reads_it(client, root):
    _make_table(client, "tXbad")
    _rename_in_schema(schema_file(root / "q.db", "s"), b"tXbad", b"t\xffbad")
    _unreadable(client.get(TABLES), "b't\\xffbad'")
    for call in (lambda: client.delete(f"{SCHEMAS}/s?cascade=true"), lambda: client.delete(f"{SCHEMAS}/s")):
        _unreadable(call(), "b't\\xffbad'")
    assert client.get(f"{SCHEMAS}/s").status_code == 200  # not dropped, and no pending operation in the way
    assert client.get(f"{TABLES}/t").status_code == 200
    assert client.delete(f"{TABLES}/t").get_json() == {"code": 0, "dropped": True}


def test_a_column_name_that_is_not_utf8_is_a_502_on_import_and_alter(client, root):
    _make_table(client, "u", column="cXbad")
    path = schema_file(root / "q.db", "s")
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE v ("cXbad" INTEGER)')  # made by another program: gravimeta imports it on load
    conn.close()
    _rename_in_schema(path, b"cXbad", b"c\xe9bad")  # Latin-1, not UTF-8
    _unreadable(client.get(f"{TABLES}/v"), "b'c\\xe9bad'")
    _writable_now(path)
    altered = client.put(f"{TABLES}/u", json={"updates": [{"@type": "addColumn", "fieldName": ["d"], "type": "integer"}]})
    _unreadable(altered, "nothing was changed")
    _writable_now(path)  # the refused calls left no statement behind holding the file's lock
    assert [c["name"] for c in client.get(f"{TABLES}/u").get_json()["table"]["columns"]] == ["cXbad"]
    assert client.delete(f"{TABLES}/u").get_json() == {"code": 0, "dropped": True}  # a drop reads no column
