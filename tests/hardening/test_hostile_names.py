"""The hostile-name matrix. New names follow Gravitino's rules (gravimeta/names.py), so most hostile
names are now refused on create and rename; what this file protects is unchanged:
- the names that stay legal and carry SQL or LIKE meaning (`_`, `-`, `--`, `=`, a column's `/`) round-trip
  exactly through every endpoint (create, load, list, alter, rename, drop) and every connector (memory,
  sqlite, hive through its stub process), never confused with another name, never a 500;
- rows stored under hostile names before the rules (LIKE wildcards, quotes, backslashes, SQL comment and
  statement separators, unicode, emoji, maximal lengths) still load, list, alter, rename to a legal name
  and drop, in the store and in the engines;
- a refused name leaves nothing behind, in the store or in the engine."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from tests.hardening.conftest import assert_error_body

HOSTILE = [
    "%", "100%", "%25", "a%b", "'", "''", '"', 'a"b', "\\", "a\\b\\", ";", "a;b", "x -- y",
    "' OR '1'='1", '"; DROP TABLE gm_metalake; --', "Robert'); DROP TABLE gm_table;--", "名前", "Ünïcödé",
    "e\u0301", "🙂", "🚀🔥💾", "\u200b", "\u202eRTL", "<img src=x onerror=alert(1)>", "${jndi:ldap:x}", "?", "#",
    "&", "+", "*", ".", "..", "a.b", " spaced ", "x" * 128, "🙂" * 128,
]
# legal under Gravitino's rules at every level (metalake names are ^\w{1,64}$)
LEGAL = ["_", "a_b", "__", "_x_", "0", "x" * 64]
# legal for catalogs, schemas and tables too: '-' (and '--'); schemas and tables also take '='
LEGAL_BELOW_METALAKE = ["a-b", "a--", "x--y", "_-_"]
LEGAL_SCHEMA_AND_TABLE = ["a=b", "a=1--", "k=v-w"]
LEGAL_COLUMNS = ["a/b", "x/=-", "p=1/q=2"]  # Gravitino's rule lets a column name hold '/'
# the subsets sent to every engine (each engine round trip is a dozen external calls)
ENGINE_NAMES = ["_", "a_b", "a--", "a=1--", "x" * 64]
ENGINE_LEGACY = ["%", "a_b", "'", '"', "a\\b\\", ";", "--", "' OR '1'='1", '"; DROP TABLE gm_metalake; --',
                 "名前", "🚀🔥💾", ".", "..", " spaced ", "x" * 128]
REJECTED = ["a/b", "/", "x" * 65, "x" * 129, "🙂" * 129, "tab\there", "new\nline", "nul\x00", "del\x7f", "", "   ",
            "%", "a_%", "'", "a;b", "x -- y", "' OR '1'='1", "名前", "🙂", " spaced", "*", "-a", "=a", "a.b"]
COLUMNS = [{"name": "id", "type": "integer", "nullable": False}]


def q(name: str) -> str:
    """Percent-encode a path segment exactly as the official client does."""
    return urllib.parse.quote(name, safe="")


def ok(response) -> dict[str, Any]:
    assert response.status_code == 200, (response.status_code, response.get_json())
    body = response.get_json()
    assert body["code"] == 0, body
    return body


def rejected(response) -> None:
    assert response.status_code == 400, (response.status_code, response.get_json())
    assert_error_body(response.get_json(), 1001)


@pytest.fixture
def app(sqlite_url, tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    (tmp_path / "sqlite-root").mkdir()
    return create_app(Settings(store_url=sqlite_url))


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def legacy(app):
    """Writes rows straight into the store, as an older gravimeta without the name rules stored them."""
    return Legacy(app.extensions["gravimeta"].store)


class Legacy:
    def __init__(self, store):
        self.store = store

    def metalake(self, name: str) -> None:
        self.store.create_metalake(Metalake(name, "legacy", {name: name}), "legacy")

    def catalog(self, m: str, name: str, provider: str = "memory", properties: dict[str, str] | None = None) -> None:
        self.store.create_catalog(Catalog(m, name, "relational", provider, "legacy", properties or {}), "legacy")

    def schema(self, m: str, c: str, name: str) -> None:
        self.store.create_schema(m, c, Schema(name, "legacy", {name: name}), "legacy")

    def table(self, m: str, c: str, s: str, name: str, engine=None) -> Table:
        """In the store, and in `engine` (a connector) when given, with the same definition."""
        table = Table(name, [Column(name, "string"), Column("id", "integer", nullable=False)], "legacy", {name: name})
        if engine is not None:
            engine.create_table(s, table)
        return self.store.create_table(m, c, s, table, "legacy")


def _names(response, key: str = "identifiers") -> list[str]:
    return sorted(item["name"] for item in ok(response)[key])


# ------------------------------------------------------------------ metalakes and catalogs (the store)


def test_legal_names_with_sql_and_like_meaning_round_trip_through_every_level_and_endpoint(client):
    for name in LEGAL:
        _round_trip(client, name, name, name, name)
    for name in LEGAL_BELOW_METALAKE:
        _round_trip(client, "m_" + name.replace("-", "_"), name, name, name)
    for name in LEGAL_SCHEMA_AND_TABLE:
        _round_trip(client, "m2", "c2", name, name)
    for name in LEGAL_COLUMNS:
        _round_trip(client, "m3", "c3", "s3", "t3", column=name)


def _round_trip(client, metalake: str, catalog: str, schema: str, table: str, column: str | None = None) -> None:
    column = column or table
    base = "/api/metalakes"
    created = ok(client.post(base, json={"name": metalake, "comment": metalake, "properties": {metalake: metalake}}))
    assert created["metalake"]["name"] == metalake
    ml = f"{base}/{q(metalake)}"
    loaded = ok(client.get(ml))["metalake"]
    assert (loaded["name"], loaded["comment"], loaded["properties"][metalake]) == (metalake, metalake, metalake)
    assert [m["name"] for m in ok(client.get(base))["metalakes"]] == [metalake]
    ok(client.put(ml, json={"updates": [{"@type": "setProperty", "property": "k", "value": metalake},
                                        {"@type": "updateComment", "newComment": metalake}]}))

    ok(client.post(f"{ml}/catalogs", json={"name": catalog, "type": "relational", "provider": "memory",
                                           "comment": catalog, "properties": {catalog: catalog}}))
    cat = f"{ml}/catalogs/{q(catalog)}"
    assert ok(client.get(cat))["catalog"]["name"] == catalog
    assert _names(client.get(f"{ml}/catalogs")) == [catalog]
    ok(client.put(cat, json={"updates": [{"@type": "updateComment", "newComment": catalog}]}))

    ok(client.post(f"{cat}/schemas", json={"name": schema, "comment": schema, "properties": {schema: schema}}))
    sch = f"{cat}/schemas/{q(schema)}"
    assert ok(client.get(sch))["schema"]["properties"][schema] == schema
    assert _names(client.get(f"{cat}/schemas")) == [schema]

    columns = [{"name": column, "type": "string", "comment": column}, *COLUMNS]
    ok(client.post(f"{sch}/tables", json={"name": table, "columns": columns, "properties": {table: table}}))
    tbl = f"{sch}/tables/{q(table)}"
    loaded_table = ok(client.get(tbl))["table"]
    assert (loaded_table["name"], loaded_table["columns"][0]["name"], loaded_table["properties"][table]) == (
        table, column, table)
    assert _names(client.get(f"{sch}/tables")) == [table]
    renamed = ("r" + table)[:64]
    ok(client.put(tbl, json={"updates": [{"@type": "setProperty", "property": table, "value": table},
                                         {"@type": "rename", "newName": renamed}]}))
    assert _names(client.get(f"{sch}/tables")) == [renamed]
    assert client.get(tbl).status_code == 404

    assert ok(client.delete(f"{sch}/tables/{q(renamed)}"))["dropped"] is True
    assert ok(client.delete(sch + "?cascade=true"))["dropped"] is True
    assert ok(client.delete(cat + "?force=true"))["dropped"] is True
    assert ok(client.delete(ml + "?force=true"))["dropped"] is True
    assert client.get(ml).status_code == 404
    assert ok(client.get(base))["metalakes"] == []


def test_rows_stored_under_hostile_names_still_load_alter_rename_and_drop(client, legacy):
    for name in HOSTILE:
        _legacy_round_trip(client, legacy, name)


def _legacy_round_trip(client, legacy: Legacy, name: str) -> None:
    """Every level named `name` by an older server: reads, alters, a rename to a legal name, drops."""
    legacy.metalake(name)
    legacy.catalog(name, name)
    legacy.schema(name, name, name)
    legacy.table(name, name, name, name)
    base = "/api/metalakes"
    ml = f"{base}/{q(name)}"
    cat = f"{ml}/catalogs/{q(name)}"
    sch = f"{cat}/schemas/{q(name)}"
    tbl = f"{sch}/tables/{q(name)}"
    assert ok(client.get(ml))["metalake"]["properties"][name] == name
    assert [m["name"] for m in ok(client.get(base))["metalakes"]] == [name]
    assert _names(client.get(f"{ml}/catalogs")) == [name]
    assert _names(client.get(f"{cat}/schemas")) == [name]
    assert _names(client.get(f"{sch}/tables")) == [name]
    table = ok(client.get(tbl))["table"]
    assert (table["name"], table["columns"][0]["name"], table["properties"][name]) == (name, name, name)
    ok(client.put(ml, json={"updates": [{"@type": "setProperty", "property": name, "value": "altered"}]}))
    ok(client.put(cat, json={"updates": [{"@type": "updateComment", "newComment": name[:256]}]}))
    ok(client.put(sch, json={"updates": [{"@type": "setProperty", "property": name, "value": "altered"}]}))
    ok(client.put(tbl, json={"updates": [{"@type": "updateColumnComment", "fieldName": [name], "newComment": "c"},
                                         {"@type": "renameColumn", "oldFieldName": [name], "newFieldName": "col"}]}))
    ok(client.put(tbl, json={"updates": [{"@type": "rename", "newName": "t_legal"}]}))
    ok(client.put(cat, json={"updates": [{"@type": "rename", "newName": "c_legal"}]}))
    ok(client.put(ml, json={"updates": [{"@type": "rename", "newName": "m_legal"}]}))
    assert client.get(tbl).status_code == 404
    legal = "/api/metalakes/m_legal/catalogs/c_legal/schemas"
    assert ok(client.get(f"{legal}/{q(name)}/tables/t_legal"))["table"]["columns"][0]["name"] == "col"
    assert ok(client.delete(f"{legal}/{q(name)}/tables/t_legal"))["dropped"] is True
    assert ok(client.delete(f"{legal}/{q(name)}"))["dropped"] is True
    assert ok(client.delete("/api/metalakes/m_legal/catalogs/c_legal?force=true"))["dropped"] is True
    assert ok(client.delete("/api/metalakes/m_legal?force=true"))["dropped"] is True
    # and a legacy metalake is dropped under its own name, cascading to its legacy children
    legacy.metalake(name)
    legacy.catalog(name, name)
    legacy.schema(name, name, name)
    assert ok(client.delete(f"{ml}?force=true"))["dropped"] is True
    assert ok(client.get(base))["metalakes"] == []


def test_rejected_names_are_400s_at_every_level_and_leave_nothing_behind(client):
    ok(client.post("/api/metalakes", json={"name": "m"}))
    ok(client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational", "provider": "memory"}))
    ok(client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "s"}))
    for name in REJECTED:
        _rejected_everywhere(client, name)


def _rejected_everywhere(client, name: str) -> None:
    rejected(client.post("/api/metalakes", json={"name": name}))
    rejected(client.post("/api/metalakes/m/catalogs", json={"name": name, "type": "relational", "provider": "memory"}))
    rejected(client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": name}))
    rejected(client.post("/api/metalakes/m/catalogs/c/schemas/s/tables", json={"name": name, "columns": COLUMNS}))
    if "/" not in name or name == "/":  # a column name may hold '/' when it starts with a word character
        rejected(client.post("/api/metalakes/m/catalogs/c/schemas/s/tables",
                             json={"name": "t", "columns": [{"name": name, "type": "integer"}]}))
    rejected(client.put("/api/metalakes/m", json={"updates": [{"@type": "rename", "newName": name}]}))
    rejected(client.put("/api/metalakes/m/catalogs/c", json={"updates": [{"@type": "rename", "newName": name}]}))
    assert [m["name"] for m in ok(client.get("/api/metalakes"))["metalakes"]] == ["m"]
    assert _names(client.get("/api/metalakes/m/catalogs")) == ["c"]
    assert _names(client.get("/api/metalakes/m/catalogs/c/schemas")) == ["s"]
    assert _names(client.get("/api/metalakes/m/catalogs/c/schemas/s/tables")) == []


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_hostile_names_of_missing_entities_in_urls_are_404s_or_400s_never_500s(client, method):
    ok(client.post("/api/metalakes", json={"name": "m"}))
    for name in HOSTILE + ["a/b", "x" * 129, "%2F", "\x00"]:
        for path in (f"/api/metalakes/{q(name)}", f"/api/metalakes/m/catalogs/{q(name)}",
                     f"/api/metalakes/{q(name)}/catalogs/{q(name)}/schemas/{q(name)}/tables/{q(name)}"):
            body = {"updates": []} if method == "PUT" else {"inUse": True} if method == "PATCH" else None
            response = client.open(path, method=method, json=body)
            assert response.status_code in (200, 400, 404, 405), (method, path, response.get_json())
            if response.status_code != 200:
                assert_error_body(response.get_json())
            else:
                assert response.get_json() == {"code": 0, "dropped": False}


def test_like_wildcards_never_match_other_names(client, legacy):
    names = ["a_b", "axb", "a%b", "aXYZb", "a\\b", "a\\_b"]
    for name in names:
        if name in ("a_b", "axb", "aXYZb"):
            ok(client.post("/api/metalakes", json={"name": name}))
        else:  # refused by the name rules now: stored by an older server
            legacy.metalake(name)
    for name in names:
        assert ok(client.get(f"/api/metalakes/{q(name)}"))["metalake"]["name"] == name
    assert ok(client.delete("/api/metalakes/a_b?force=true"))["dropped"] is True
    assert ok(client.delete(f"/api/metalakes/{q('a%b')}?force=true"))["dropped"] is True
    assert sorted(m["name"] for m in ok(client.get("/api/metalakes"))["metalakes"]) == sorted(
        ["axb", "aXYZb", "a\\b", "a\\_b"])


# ------------------------------------------------------------------ schemas and tables in real engines


def _engine(provider: str, properties: dict[str, str]):
    """A fresh connector on the same engine: what the external catalog really holds."""
    cls = {"sqlite": SQLiteCatalogConnector, "hive": HiveConnector}[provider]
    return cls(CatalogContext("m", "c", properties))


@pytest.fixture(params=["sqlite", "hive"])
def engine_catalog(request, client):
    """(client, provider, properties): metalake m with catalog c on a real engine."""
    if request.param == "hive":
        stub = request.getfixturevalue("hive_stub")
        if stub.process is None or stub.process.poll() is not None:
            stub.start()
        stub.clear_faults()
        properties = {"metastore.uris": stub.uri, "client.timeout-ms": "5000"}
    else:
        properties = {"path": "hostile/cat.db"}
    ok(client.post("/api/metalakes", json={"name": "m"}))
    ok(client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational",
                                                      "provider": request.param, "properties": properties}))
    return request.param, properties


def test_hostile_schema_and_table_names_reach_the_engine_exactly(client, engine_catalog):
    engine = _engine(*engine_catalog)
    for name in ENGINE_NAMES:
        _through_the_engine(client, engine, name)


def _through_the_engine(client, engine, name: str) -> None:
    before = set(engine.list_schemas())
    schemas = "/api/metalakes/m/catalogs/c/schemas"
    created = client.post(schemas, json={"name": name, "comment": "hostile"})
    assert created.status_code == 200, created.get_json()
    sch = f"{schemas}/{q(name)}"
    assert set(engine.list_schemas()) - before == {name}
    columns = [{"name": name, "type": "string"}, *COLUMNS]
    ok(client.post(f"{sch}/tables", json={"name": name, "columns": columns, "comment": name[:256]}))
    assert engine.list_tables(name) == [name]
    table = ok(client.get(f"{sch}/tables/{q(name)}"))["table"]
    assert [c["name"] for c in table["columns"]] == [name, "id"]
    ok(client.put(f"{sch}/tables/{q(name)}", json={"updates": [
        {"@type": "updateComment", "newComment": name[:256]},
        {"@type": "addColumn", "fieldName": [("c" + name)[:64]], "type": "integer"},
    ]}))
    renamed = ("r" + name)[:64]
    ok(client.put(f"{sch}/tables/{q(name)}", json={"updates": [{"@type": "rename", "newName": renamed}]}))
    assert engine.list_tables(name) == [renamed]
    assert ok(client.delete(f"{sch}/tables/{q(renamed)}"))["dropped"] is True
    assert engine.list_tables(name) == []
    assert ok(client.delete(sch))["dropped"] is True
    assert set(engine.list_schemas()) == before
    assert _names(client.get(schemas)) == []


def test_engine_objects_stored_under_hostile_names_still_work_and_keep_their_exact_names(client, legacy,
                                                                                          engine_catalog):
    engine = _engine(*engine_catalog)
    schemas = "/api/metalakes/m/catalogs/c/schemas"
    for name in ENGINE_LEGACY:
        engine.create_schema(Schema(name, "legacy"))
        legacy.schema("m", "c", name)
        legacy.table("m", "c", name, name, engine=engine)
        sch = f"{schemas}/{q(name)}"
        tbl = f"{sch}/tables/{q(name)}"
        assert [c["name"] for c in ok(client.get(tbl))["table"]["columns"]] == [name, "id"]
        ok(client.put(tbl, json={"updates": [{"@type": "addColumn", "fieldName": ["added"], "type": "integer"}]}))
        ok(client.put(tbl, json={"updates": [{"@type": "rename", "newName": "t_legal"}]}))
        assert engine.list_tables(name) == ["t_legal"]
        ok(client.post(f"{sch}/tables", json={"name": "t_new", "columns": COLUMNS}))
        assert engine.list_tables(name) == ["t_legal", "t_new"]
        assert ok(client.delete(f"{sch}?cascade=true"))["dropped"] is True
        assert name not in engine.list_schemas()
    assert _names(client.get(schemas)) == []


def test_rejected_schema_and_table_names_never_reach_the_engine(client, engine_catalog):
    engine = _engine(*engine_catalog)
    schemas = "/api/metalakes/m/catalogs/c/schemas"
    ok(client.post(schemas, json={"name": "s_ok"}))
    before = set(engine.list_schemas())
    for name in REJECTED:
        rejected(client.post(schemas, json={"name": name}))
        rejected(client.post(f"{schemas}/s_ok/tables", json={"name": name, "columns": COLUMNS}))
        if "/" not in name or name == "/":  # a column name may hold '/' when it starts with a word character
            rejected(client.post(f"{schemas}/s_ok/tables",
                                 json={"name": "t", "columns": [{"name": name, "type": "integer"}]}))
    assert set(engine.list_schemas()) == before
    assert engine.list_tables("s_ok") == []
    assert _names(client.get(schemas)) == ["s_ok"]
    assert _names(client.get(f"{schemas}/s_ok/tables")) == []
