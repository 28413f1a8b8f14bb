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

import json
import sqlite3
import urllib.parse
from collections import Counter
from typing import Any

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.hive_stub.storage import METASTORE_FILE
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector, quote, schema_file
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
    """Percent-encode a path segment exactly as the official client does (a lone surrogate, which the
    client cannot encode, as the bytes UTF-8 would give it: the server reads them as replacement characters)."""
    return urllib.parse.quote(name.encode("utf-8", "surrogatepass"), safe="")


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


# ------------------------------------------------------------------ what the engines hold, written behind gravimeta's back
#
# The engines are other systems: another client of the metastore, another program writing the catalog
# file, may leave names and text that gravimeta would never write, and that it must read without a 500.
# The corpus is written straight into the hive stub's storage file (the stub stopped, its metastore.json
# edited, the stub started again) and into the sqlite catalog and schema files (SQL on the files, bytes
# for bytes). Then every read and every drop through the API answers a clean 4xx, a 200, or a 502
# ConnectionFailedException naming the engine, never a 500; and afterwards the catalog still works.

#: names an engine may hold that the name rules refuse, but that are text a store can hold
ENGINE_SIDE_NAMES = [*HOSTILE, "a/b", "x" * 129, "x" * 300, "tab\there", "new\nline", "del\x7f", " ", "名前" * 70]
#: text no store can hold: lone surrogates (JSON escapes in the stub's file) and NUL
UNSTORABLE = ["\ud800", "a\udfffb", "nul\x00"]
#: bytes that are not UTF-8 (a sqlite file can hold them as names)
NOT_UTF8 = [b"\xff", b"a\xe9b", b"\xed\xa0\x80", b"\xc3"]


def clean(response, engine: str) -> int:
    """A 2xx, a 4xx with an error body, or a 502 ConnectionFailedException whose message names `engine`."""
    status, body = response.status_code, response.get_json()
    assert status < 500 or status == 502, (status, response.request.path, body)
    if status >= 400:
        assert_error_body(body)
    if status == 502:
        assert body["type"] == "ConnectionFailedException" and engine in body["message"], body
    return status


def _read_and_drop_everything(client, engine: str, schemas: list[str], tables: dict[str, list[str]]) -> Counter:
    """Every read and drop of the catalog m.c through the API, for the names the engine holds."""
    statuses: Counter = Counter()
    cat = "/api/metalakes/m/catalogs/c"
    statuses[clean(client.get(f"{cat}/schemas"), engine)] += 1
    for schema in schemas:
        sch = f"{cat}/schemas/{q(schema)}"
        for path in (sch, f"{sch}/tables"):
            statuses[clean(client.get(path), engine)] += 1
        for table in tables.get(schema, []):
            tbl = f"{sch}/tables/{q(table)}"
            for path in (tbl, f"{tbl}?privileges=MODIFY_TABLE", f"{tbl}/partitions",
                         f"/api/metalakes/m/objects/table/{q(f'c.{schema}.{table}')}/tags"):
                statuses[clean(client.get(path), engine)] += 1
            statuses[clean(client.delete(tbl), engine)] += 1
        statuses[clean(client.delete(f"{sch}?cascade=true"), engine)] += 1
    return statuses


def _still_works(client) -> None:
    """The catalog takes new schemas and tables again, once the engine holds nothing unreadable."""
    sch = "/api/metalakes/m/catalogs/c/schemas/after_corpus"
    ok(client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "after_corpus"}))
    ok(client.post(f"{sch}/tables", json={"name": "t", "columns": COLUMNS}))
    assert ok(client.delete(f"{sch}?cascade=true"))["dropped"] is True


def _stub_table(name: str, text: str) -> dict[str, Any]:
    return {"name": name, "comment": text, "properties": {text: text},
            "columns": [{"name": text or "c", "type": "string", "comment": text}, {"name": "id", "type": "long"}]}


def _rewrite_stub_storage(stub, change) -> None:
    """Stop the stub, change its storage file (a dict), start it again on the same port and data."""
    stub.stop()
    path = stub.data_dir / METASTORE_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["databases"])
    path.write_text(json.dumps(data), encoding="utf-8")  # json escapes lone surrogates: the file is valid
    stub.start()


@pytest.mark.slow
def test_names_and_text_written_into_the_hive_stubs_storage_are_read_and_dropped_cleanly(client, hive_stub):
    if hive_stub.process is None or hive_stub.process.poll() is not None:
        hive_stub.start()
    hive_stub.clear_faults()
    ok(client.post("/api/metalakes", json={"name": "m"}))
    ok(client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational", "provider": "hive",
                                                      "properties": {"metastore.uris": hive_stub.uri}}))
    engine = f"Hive metastore at {hive_stub.uri}"
    storable = {f"t{i}": name for i, name in enumerate(ENGINE_SIDE_NAMES)}
    databases_named = ENGINE_SIDE_NAMES[::4]

    def storable_corpus(databases: dict[str, Any]) -> None:
        # one database holding a table of each name, and a table whose text is each name; a database of
        # every fourth name, holding a table of that name
        databases["corpus"] = {"name": "corpus", "tables": {t: _stub_table(t, text) for t, text in storable.items()}}
        databases["corpus"]["tables"].update({name: _stub_table(name, name) for name in ENGINE_SIDE_NAMES})
        for name in databases_named:
            databases[name] = {"name": name, "comment": name, "properties": {name: name},
                               "tables": {name: _stub_table(name, name)}}

    _rewrite_stub_storage(hive_stub, storable_corpus)
    tables = {"corpus": [*storable, *ENGINE_SIDE_NAMES], **{name: [name] for name in databases_named}}
    statuses = _read_and_drop_everything(client, engine, ["corpus", *databases_named], tables)
    assert statuses[502] == 0 and statuses[200] and statuses[400], statuses  # all of it is text a store holds

    def unstorable_corpus(databases: dict[str, Any]) -> None:
        databases.clear()
        databases["s_ok"] = {"name": "s_ok", "tables": {f"u{i}": _stub_table(f"u{i}", text)
                                                         for i, text in enumerate(UNSTORABLE)}}
        for text in UNSTORABLE:
            databases["s_ok"]["tables"][text] = _stub_table(text, "fine")
            databases[text] = {"name": text, "tables": {}}

    _rewrite_stub_storage(hive_stub, unstorable_corpus)
    statuses = _read_and_drop_everything(client, engine, ["s_ok", *UNSTORABLE],
                                         {"s_ok": [f"u{i}" for i in range(len(UNSTORABLE))] + UNSTORABLE})
    assert statuses[502] >= 2 * len(UNSTORABLE) + 2, statuses  # the two lists and each table's load at least
    _rewrite_stub_storage(hive_stub, lambda databases: databases.clear())
    _still_works(client)


def _sql(path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement, arguments in statements:
            conn.execute(statement, arguments)
        conn.commit()
    finally:
        conn.close()


def _name_bytes(path, old: str, new: bytes) -> None:
    """Replace a table's or a column's name in a schema file's own schema, bytes for bytes."""
    encoded = old.encode()
    _sql(path, ("PRAGMA writable_schema = ON", ()),
         ("UPDATE sqlite_master SET name = CAST(replace(CAST(name AS BLOB), ?, ?) AS TEXT), "
          "tbl_name = CAST(replace(CAST(tbl_name AS BLOB), ?, ?) AS TEXT), "
          "sql = CAST(replace(CAST(sql AS BLOB), ?, ?) AS TEXT)", (encoded, new) * 3))


@pytest.mark.slow
def test_names_and_bytes_written_into_the_sqlite_catalog_files_are_read_and_dropped_cleanly(client, tmp_path):
    ok(client.post("/api/metalakes", json={"name": "m"}))
    ok(client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational", "provider": "sqlite",
                                                      "properties": {"path": "corpus/cat.db"}}))
    engine = "SQLite catalog file 'corpus/cat.db'"
    connector = _engine("sqlite", {"path": "corpus/cat.db"})
    catalog_file = tmp_path / "sqlite-root" / "corpus" / "cat.db"
    connector.create_schema(Schema("corpus"))  # a schema holding a table of each name
    _sql(schema_file(catalog_file, "corpus"), *[(f"CREATE TABLE {quote(t)} ({quote(t)} TEXT, id INTEGER)", ())
                                               for t in dict.fromkeys(n.lower() for n in ENGINE_SIDE_NAMES)])
    schemas_named = ENGINE_SIDE_NAMES[::4]
    for name in schemas_named:  # and a schema of every fourth name, holding a table of that name
        connector.create_schema(Schema(name))
        _sql(schema_file(catalog_file, name), (f"CREATE TABLE {quote(name)} (id INTEGER)", ()))
    tables = {"corpus": list(dict.fromkeys(n.lower() for n in ENGINE_SIDE_NAMES)), **{n: [n] for n in schemas_named}}
    statuses = _read_and_drop_everything(client, engine, ["corpus", *schemas_named], tables)
    assert statuses[502] == 0 and statuses[200] and statuses[400], statuses

    connector.create_schema(Schema("s_ok"))
    schema_path = schema_file(catalog_file, "s_ok")
    created = [(f"CREATE TABLE bad{i} (c{i} TEXT)", ()) for i in range(len(NOT_UTF8))]
    _sql(schema_path, *created, ("CREATE TABLE fine (c INTEGER)", ()))
    for i, raw in enumerate(NOT_UTF8):  # a table named so, and a column named so in another table
        _name_bytes(schema_path, f"c{i}", b"c" + raw)
        _sql(catalog_file, ("INSERT INTO gravimeta_schemas (name, file) VALUES (CAST(? AS TEXT), ?)",
                            (b"s" + raw, f"missing{i}.sqlite")))
    _sql(schema_path, ("CREATE TABLE tXbad (c INTEGER)", ()))
    _name_bytes(schema_path, "tXbad", b"t\xffbad")
    _sql(catalog_file, ("INSERT INTO gravimeta_schemas (name, file) VALUES (?, ?)", ("nul\x00", "nul.sqlite")),
         ("INSERT INTO gravimeta_schemas (name, file) VALUES (?, ?)", ("escapes", "../../outside.sqlite")),
         ("INSERT INTO gravimeta_schemas (name, file) VALUES (?, ?)", ("gone", "no-such-file.sqlite")))
    statuses = _read_and_drop_everything(client, engine, ["s_ok", "escapes", "gone"],
                                         {"s_ok": [f"bad{i}" for i in range(len(NOT_UTF8))] + ["fine"]})
    assert statuses[502] >= 3, statuses  # the schema list, s_ok's table list, its cascade drop at least
    for schema in ("escapes", "gone"):  # the registry names a file outside the catalog's directory, or none
        answer = client.get(f"/api/metalakes/m/catalogs/c/schemas/{schema}/tables")
        assert clean(answer, engine) == 502 and str(tmp_path) not in answer.get_json()["message"], answer.get_json()
    _sql(catalog_file, ("DELETE FROM gravimeta_schemas WHERE name NOT IN ('s_ok')", ()))
    _sql(schema_path, ("PRAGMA writable_schema = ON", ()), ("DELETE FROM sqlite_master", ()))
    _still_works(client)
