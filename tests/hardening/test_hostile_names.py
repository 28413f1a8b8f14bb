"""The hostile-name matrix: names with LIKE wildcards, URL-reserved characters, quotes, backslashes,
SQL comment and statement separators, unicode, emoji and maximal lengths, through every endpoint
(create, load, list, alter, rename, drop of metalakes, catalogs, schemas and tables) and every connector
(memory, sqlite, hive through its stub process). Each name must round-trip exactly, never be confused
with another name, never cause a 500, and a rejected name must leave nothing behind, in the store or
in the engine."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.sqlite_catalog import ROOT_ENV, SQLiteCatalogConnector
from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.hardening.conftest import assert_error_body

HOSTILE = [
    "%", "100%", "%25", "_", "a_b", "%_%", "'", "''", '"', 'a"b', "\\", "a\\b\\", ";", "a;b", "--", "x -- y",
    "' OR '1'='1", '"; DROP TABLE gm_metalake; --', "Robert'); DROP TABLE gm_table;--", "名前", "Ünïcödé",
    "e\u0301", "🙂", "🚀🔥💾", "\u200b", "\u202eRTL", "<img src=x onerror=alert(1)>", "${jndi:ldap:x}", "?", "#",
    "&", "+", "*", ".", "..", "a.b", " spaced ", "x" * 128, "🙂" * 128,
]
# the subset sent to every engine (each engine round trip is a dozen external calls)
ENGINE_NAMES = ["%", "a_b", "'", '"', "a\\b\\", ";", "--", "' OR '1'='1", '"; DROP TABLE gm_metalake; --', "名前",
                "🚀🔥💾", ".", "..", " spaced ", "x" * 128]
REJECTED = ["a/b", "/", "x" * 129, "🙂" * 129, "tab\there", "new\nline", "nul\x00", "del\x7f", "", "   "]
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
def client(sqlite_url, tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    (tmp_path / "sqlite-root").mkdir()
    return create_app(Settings(store_url=sqlite_url)).test_client()


def _names(response, key: str = "identifiers") -> list[str]:
    return sorted(item["name"] for item in ok(response)[key])


# ------------------------------------------------------------------ metalakes and catalogs (the store)


def test_hostile_names_round_trip_through_every_level_and_endpoint(client):
    for name in HOSTILE:
        _round_trip(client, name)


def _round_trip(client, name: str) -> None:
    base = "/api/metalakes"
    created = ok(client.post(base, json={"name": name, "comment": name[:256], "properties": {name: name}}))
    assert created["metalake"]["name"] == name
    ml = f"{base}/{q(name)}"
    loaded = ok(client.get(ml))["metalake"]
    assert (loaded["name"], loaded["comment"], loaded["properties"][name]) == (name, name[:256], name)
    assert [m["name"] for m in ok(client.get(base))["metalakes"]] == [name]
    ok(client.put(ml, json={"updates": [{"@type": "setProperty", "property": "k", "value": name},
                                        {"@type": "updateComment", "newComment": name[:256]}]}))

    ok(client.post(f"{ml}/catalogs", json={"name": name, "type": "relational", "provider": "memory",
                                           "comment": name[:256]}))  # providers validate their properties
    cat = f"{ml}/catalogs/{q(name)}"
    assert ok(client.get(cat))["catalog"]["name"] == name
    assert _names(client.get(f"{ml}/catalogs")) == [name]
    ok(client.put(cat, json={"updates": [{"@type": "updateComment", "newComment": name[:256]}]}))

    ok(client.post(f"{cat}/schemas", json={"name": name, "comment": name[:256], "properties": {name: name}}))
    sch = f"{cat}/schemas/{q(name)}"
    assert ok(client.get(sch))["schema"]["properties"][name] == name
    assert _names(client.get(f"{cat}/schemas")) == [name]

    columns = [{"name": name, "type": "string", "comment": name[:256]}, *COLUMNS]
    ok(client.post(f"{sch}/tables", json={"name": name, "columns": columns, "properties": {name: name}}))
    tbl = f"{sch}/tables/{q(name)}"
    table = ok(client.get(tbl))["table"]
    assert (table["name"], table["columns"][0]["name"], table["properties"][name]) == (name, name, name)
    assert _names(client.get(f"{sch}/tables")) == [name]
    renamed = ("r" + name)[:128]
    ok(client.put(tbl, json={"updates": [{"@type": "setProperty", "property": name, "value": name},
                                         {"@type": "rename", "newName": renamed}]}))
    assert _names(client.get(f"{sch}/tables")) == [renamed]
    assert client.get(tbl).status_code == 404

    assert ok(client.delete(f"{sch}/tables/{q(renamed)}"))["dropped"] is True
    assert ok(client.delete(sch + "?cascade=true"))["dropped"] is True
    assert ok(client.delete(cat + "?force=true"))["dropped"] is True
    assert ok(client.delete(ml + "?force=true"))["dropped"] is True
    assert client.get(ml).status_code == 404
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
    rejected(client.post("/api/metalakes/m/catalogs/c/schemas/s/tables",
                         json={"name": "t", "columns": [{"name": name, "type": "integer"}]}))
    rejected(client.put("/api/metalakes/m", json={"updates": [{"@type": "rename", "newName": name}]}))
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


def test_like_wildcards_never_match_other_names(client):
    names = ["a_b", "axb", "a%b", "aXYZb", "a\\b", "a\\_b"]
    for name in names:
        ok(client.post("/api/metalakes", json={"name": name}))
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
        {"@type": "addColumn", "fieldName": [("c" + name)[:128]], "type": "integer"},
    ]}))
    renamed = ("r" + name)[:128]
    ok(client.put(f"{sch}/tables/{q(name)}", json={"updates": [{"@type": "rename", "newName": renamed}]}))
    assert engine.list_tables(name) == [renamed]
    assert ok(client.delete(f"{sch}/tables/{q(renamed)}"))["dropped"] is True
    assert engine.list_tables(name) == []
    assert ok(client.delete(sch))["dropped"] is True
    assert set(engine.list_schemas()) == before
    assert _names(client.get(schemas)) == []


def test_rejected_schema_and_table_names_never_reach_the_engine(client, engine_catalog):
    engine = _engine(*engine_catalog)
    schemas = "/api/metalakes/m/catalogs/c/schemas"
    ok(client.post(schemas, json={"name": "s_ok"}))
    before = set(engine.list_schemas())
    for name in REJECTED:
        rejected(client.post(schemas, json={"name": name}))
        rejected(client.post(f"{schemas}/s_ok/tables", json={"name": name, "columns": COLUMNS}))
        rejected(client.post(f"{schemas}/s_ok/tables",
                             json={"name": "t", "columns": [{"name": name, "type": "integer"}]}))
    assert set(engine.list_schemas()) == before
    assert engine.list_tables("s_ok") == []
    assert _names(client.get(schemas)) == ["s_ok"]
    assert _names(client.get(f"{schemas}/s_ok/tables")) == []
