"""A `sqlite` catalog whose engine files are damaged, and paths the file system cannot hold, through the
REST API: a catalog or schema file that is not a database (garbage, a truncated header, a valid header
over garbage pages) answers 502 ConnectionFailedException with a message naming the catalog file, never
a 500; a `path` with a component longer than the file system allows (ENAMETOOLONG) answers 400.

Before this change the damaged files answered 500 (sqlite3.DatabaseError "file is not a database" /
"database disk image is malformed" escaped the translation) and the 300-character component a 500
OSError from Path.resolve()."""

from __future__ import annotations

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
