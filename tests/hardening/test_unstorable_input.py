"""Values no store can hold are a 400 at the edge, on SQLite, PostgreSQL and MariaDB alike, and nothing
is changed anywhere: NUL characters and lone
surrogates anywhere in a body or a URL name, URL names and user names longer than the store's columns,
comments longer than MySQL's TEXT. Before, PostgreSQL answered 500 (DataError) for a NUL, every backend
500 (UnicodeEncodeError) for a lone surrogate, MariaDB 500 for an over-long user or comment; and a NUL
comment on a table of a `sqlite` catalog reached the engine before the store refused it, leaving an
intent that blocked the catalog."""

from __future__ import annotations

import base64
import copy
import sqlite3
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from connectors.sqlite import ROOT_ENV, schema_file
from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.hardening.conftest import assert_error_body

NUL, SURROGATE = "\x00", "\ud800"
COLUMN = {"name": "id", "type": "integer"}


def refused(response, *fragments: str) -> str:
    assert response.status_code == 400, (response.status_code, response.get_data(as_text=True)[:500])
    body = response.get_json()
    assert_error_body(body, 1001)
    assert body["type"] == "IllegalArgumentException"
    for fragment in fragments:
        assert fragment in body["message"], body["message"]
    return str(body["message"])


@pytest.fixture
def tree(db_url, tmp_path, monkeypatch):
    """An app on a fresh database of each backend, with metalake m, a memory catalog c with schema s and
    table t, and a sqlite catalog q with schema s."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    app = create_app(Settings(store_url=db_url))
    client = app.test_client()
    for path, body in [
        ("/api/metalakes", {"name": "m", "properties": {"k": "v"}}),
        ("/api/metalakes/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}),
        ("/api/metalakes/m/catalogs", {"name": "q", "type": "relational", "provider": "sqlite",
                                       "properties": {"path": "q.db"}}),
        ("/api/metalakes/m/catalogs/c/schemas", {"name": "s"}),
        ("/api/metalakes/m/catalogs/q/schemas", {"name": "s"}),
        ("/api/metalakes/m/catalogs/c/schemas/s/tables", {"name": "t", "columns": [COLUMN]}),
    ]:
        assert client.post(path, json=body).status_code == 200, client.post(path, json=body).get_json()
    return client


def snapshot(client) -> dict[str, Any]:
    """Everything a refused request could have changed, as the API shows it."""
    def get(path: str) -> Any:
        body = client.get(path).get_json()
        for entity in body.values():
            if isinstance(entity, dict):
                entity.pop("audit", None)
        return body

    return {
        "metalakes": sorted(m["name"] for m in get("/api/metalakes")["metalakes"]),
        "metalake": get("/api/metalakes/m"),
        "catalogs": get("/api/metalakes/m/catalogs?details=true"),
        "schemas": [get(f"/api/metalakes/m/catalogs/{c}/schemas") for c in ("c", "q")],
        "tables": [get(f"/api/metalakes/m/catalogs/{c}/schemas/s/tables") for c in ("c", "q")],
        "table": get("/api/metalakes/m/catalogs/c/schemas/s/tables/t"),
    }


def bodies(bad: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, body) with `bad` in every kind of place a request can carry text."""
    tables = "/api/metalakes/m/catalogs/c/schemas/s/tables"
    literal = {"type": "literal", "dataType": "string", "value": f"x{bad}"}
    return [
        ("post", "/api/metalakes", {"name": f"n{bad}"}),
        ("post", "/api/metalakes", {"name": "n", "comment": f"a{bad}b"}),
        ("post", "/api/metalakes", {"name": "n", "properties": {f"k{bad}": "v"}}),
        ("post", "/api/metalakes", {"name": "n", "properties": {"k": f"v{bad}"}}),
        ("post", "/api/metalakes/m/catalogs", {"name": "c2", "type": "relational", "provider": f"memory{bad}"}),
        ("post", "/api/metalakes/m/catalogs/c/schemas", {"name": "s2", "comment": bad}),
        ("post", tables, {"name": "t2", "columns": [{**COLUMN, "comment": bad}]}),
        ("post", tables, {"name": "t2", "columns": [{**COLUMN, "name": f"id{bad}"}]}),
        ("post", tables, {"name": "t2", "columns": [{"name": "a", "type": "string", "defaultValue": literal}]}),
        ("post", tables, {"name": "t2", "columns": [{"name": "a", "type": {
            "type": "struct", "fields": [{"name": f"f{bad}", "type": "integer"}]}}]}),
        ("post", tables, {"name": "t2", "columns": [{"name": "a", "type": {"type": "unparsed", "unparsedType": bad}}]}),
        ("post", tables, {"name": "t2", "columns": [COLUMN],
                          "indexes": [{"indexType": "PRIMARY_KEY", "name": f"pk{bad}", "fieldNames": [["id"]]}]}),
        ("post", tables, {"name": "t2", "columns": [COLUMN], "sortOrders": [{"sortTerm": literal}]}),
        ("post", tables, {"name": "t2", "columns": [COLUMN], "unknownKey": [bad]}),  # even where it is ignored
        ("put", "/api/metalakes/m", {"updates": [{"@type": "setProperty", "property": "k", "value": bad}]}),
        ("put", "/api/metalakes/m", {"updates": [{"@type": "updateComment", "newComment": bad}]}),
        ("put", "/api/metalakes/m", {"updates": [{"@type": "rename", "newName": f"m{bad}"}]}),
        ("put", "/api/metalakes/m/catalogs/c/schemas/s",
         {"updates": [{"@type": "setProperty", "property": bad, "value": "v"}]}),
        ("put", f"{tables}/t", {"updates": [{"@type": "setProperty", "property": "ok", "value": "1"},
                                            {"@type": "updateComment", "newComment": bad}]}),
        ("put", f"{tables}/t", {"updates": [{"@type": "addColumn", "fieldName": ["b"], "type": "string",
                                             "defaultValue": literal}]}),
        ("put", f"{tables}/t", {"updates": [{"@type": "rename", "newName": f"t{bad}"}]}),
        ("put", f"{tables}/t", {"updates": [{"@type": "updateColumnComment", "fieldName": ["id"], "newComment": bad}]}),
    ]


@pytest.mark.parametrize("bad, named", [(NUL, "NUL character"), (SURROGATE, "lone surrogate")])
def test_nul_and_lone_surrogates_are_refused_wherever_a_body_carries_text(tree, bad, named):
    before = snapshot(tree)
    for method, path, body in bodies(bad):
        response = getattr(tree, method)(path, json=body)
        refused(response, named)
    assert snapshot(tree) == before  # nothing half-applied, not even the first of two changes


def test_names_in_the_url_must_be_storable_and_fit_the_name_columns(tree):
    before = snapshot(tree)
    levels = ["metalakes/m", "catalogs/c", "schemas/s", "tables/t"]
    for depth in range(1, 5):
        for bad, named in [(f"x{NUL}y", "NUL character"), ("x" * 129, "129 characters long; the limit is 128")]:
            path = "/api/" + "/".join([*levels[:depth - 1], f"{levels[depth - 1].split('/')[0]}/{bad}"])
            for method in ("get", "delete", "put", *(("patch",) if depth <= 2 else ())):  # PATCH: enable/disable
                body = {"updates": []} if method == "put" else {"inUse": True} if method == "patch" else None
                refused(getattr(tree, method)(path, json=body), named)
    # a 128-character name is a name like any other: not found, not refused
    assert tree.get("/api/metalakes/" + "x" * 128).status_code == 404
    assert tree.delete("/api/metalakes/m/catalogs/c/schemas/s/tables/" + "x" * 128).get_json() == {
        "code": 0, "dropped": False}
    assert snapshot(tree) == before


def test_long_url_names_are_refused_before_a_claim_is_asked_for(db_url):
    """With the lock on, a structural call claims a scope path built from the URL names; a name longer
    than the store's columns made that path longer than the lease table holds (a 500 on PostgreSQL)."""
    client = create_app(Settings(store_url=db_url, distributed_lock_enabled=True,
                                 distributed_lock_backend="LEASE_TABLE")).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    refused(client.delete("/api/metalakes/m/catalogs/" + "c" * 700 + "/schemas/s"), "700 characters long")
    refused(client.delete("/api/metalakes/m/catalogs/" + "c" * 300 + "/schemas/" + "s" * 300 + "/tables/t"),
            "300 characters long")
    refused(client.post("/api/metalakes/m/catalogs/" + "c" * 700 + "/schemas", json={"name": "s"}), "700 characters")


def basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:pw".encode()).decode()}


def test_a_user_name_longer_than_the_audit_columns_is_refused_and_writes_nothing(db_url):
    client = create_app(Settings(store_url=db_url, authenticators="simple", service_admins="root")).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}, headers=basic("root")).status_code == 200
    assert client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational",
                                                          "provider": "memory"}).status_code == 200
    longest = "u" * 256
    created = client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "fits"}, headers=basic(longest))
    assert created.status_code == 200, created.get_json()
    assert created.get_json()["schema"]["audit"]["creator"] == longest
    refused(client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "long"}, headers=basic("u" * 257)),
            "257 characters long; the limit is 256")
    refused(client.put("/api/metalakes/m/catalogs/c/schemas/fits", headers=basic("u" * 257),
                       json={"updates": [{"@type": "setProperty", "property": "k", "value": "v"}]}), "user name")
    schemas = client.get("/api/metalakes/m/catalogs/c/schemas").get_json()["identifiers"]
    assert [s["name"] for s in schemas] == ["fits"]
    assert client.get("/api/metalakes/m/catalogs/c/schemas/fits").get_json()["schema"]["properties"] == {}


def test_an_oauth_principal_no_store_can_hold_is_refused(db_url):
    import time

    import jwt

    secret = b"a-test-secret-that-is-long-enough-for-hs256"
    client = create_app(Settings(store_url=db_url, authenticators="oauth", oauth_algorithm="HS256",
                                 oauth_sign_key=base64.b64encode(secret).decode())).test_client()
    for sub, named in [(f"al{NUL}ice", "NUL character"), (f"al{SURROGATE}ice", "lone surrogate"),
                       ("a" * 300, "300 characters long")]:
        token = jwt.encode({"sub": sub, "aud": "GravitinoServer", "exp": int(time.time()) + 60}, secret, "HS256")
        refused(client.get("/api/metalakes", headers={"Authorization": f"Bearer {token}"}), named)


def test_comments_are_held_to_what_the_comment_column_stores_whatever_the_setting(db_url):
    """With comment-max-chars raised to 20,000, a comment of 16,383 emoji (65,532 bytes) fits MySQL's
    TEXT and is stored everywhere; one more emoji does not fit and is refused on every backend alike."""
    client = create_app(Settings(store_url=db_url, max_comment_chars=20_000)).test_client()
    fits = "\N{GRINNING FACE}" * 16_383
    created = client.post("/api/metalakes", json={"name": "m", "comment": fits})
    assert created.status_code == 200, created.get_data(as_text=True)[:300]
    assert client.get("/api/metalakes/m").get_json()["metalake"]["comment"] == fits
    refused(client.post("/api/metalakes", json={"name": "m2", "comment": fits + "\N{GRINNING FACE}"}),
            "65536 bytes", "holds at most 65535")
    refused(client.put("/api/metalakes/m", json={"updates": [{"@type": "updateComment",
                                                                "newComment": fits + "!!!!"}]}), "bytes")
    assert client.get("/api/metalakes/m").get_json()["metalake"]["comment"] == fits


def test_properties_grown_by_alters_past_their_column_are_refused_whole(db_url, monkeypatch):
    """Each alter is within the request limits, but properties accumulate; the result must still fit its
    JSON column (capacity.JSON_BYTES, 8 MiB; lowered here so that the test stays small)."""
    from gravimeta import capacity

    monkeypatch.setattr(capacity, "JSON_BYTES", 3000)
    client = create_app(Settings(store_url=db_url)).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200

    def grow(i: int) -> Any:
        return client.put("/api/metalakes/m", json={"updates": [
            {"@type": "setProperty", "property": f"k{i}", "value": "v" * 1000}]})

    assert grow(1).status_code == 200 and grow(2).status_code == 200
    refused(grow(3), "bytes as JSON", "at most 3000")
    assert sorted(client.get("/api/metalakes/m").get_json()["metalake"]["properties"]) == ["in-use", "k1", "k2"]


def journal_rows(db_url: str) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text("SELECT operation, state FROM gm_operation_journal")))
    finally:
        engine.dispose()


def engine_tables(root, schema: str = "s") -> list[str]:
    conn = sqlite3.connect(schema_file(root / "q.db", schema))
    try:
        return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()


def test_a_value_the_store_cannot_hold_never_reaches_a_sqlite_catalogs_engine(tree, db_url, tmp_path):
    """Before: the engine created the table, the store refused the NUL comment (PostgreSQL), the
    intent stayed open and every later create or drop in the catalog answered 500."""
    tables = "/api/metalakes/m/catalogs/q/schemas/s/tables"
    refused(tree.post(tables, json={"name": "pill", "comment": f"a{NUL}b", "columns": [COLUMN]}), "NUL")
    refused(tree.post(tables, json={"name": "pill2", "columns": [COLUMN], "properties": {"k": f"{SURROGATE}"}}),
            "surrogate")
    root = tmp_path / "sqlite-root"
    assert engine_tables(root) == []
    assert journal_rows(db_url) == []
    assert tree.post(tables, json={"name": "after", "columns": [COLUMN]}).status_code == 200
    assert tree.delete(f"{tables}/after").get_json() == {"code": 0, "dropped": True}
    assert engine_tables(root) == [] and journal_rows(db_url) == []


def test_a_user_name_the_store_cannot_hold_never_reaches_a_sqlite_catalogs_engine(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    client = create_app(Settings(store_url=db_url, authenticators="simple", service_admins="root")).test_client()
    for path, body in [
        ("/api/metalakes", {"name": "m"}),
        ("/api/metalakes/m/catalogs", {"name": "q", "type": "relational", "provider": "sqlite",
                                       "properties": {"path": "q.db"}}),
        ("/api/metalakes/m/catalogs/q/schemas", {"name": "s"}),
    ]:
        assert client.post(path, json=body, headers=basic("root")).status_code == 200
    tables = "/api/metalakes/m/catalogs/q/schemas/s/tables"
    refused(client.post(tables, json={"name": "pill", "columns": [COLUMN]}, headers=basic("u" * 300)), "user name")
    assert engine_tables(tmp_path / "sqlite-root") == [] and journal_rows(db_url) == []
    assert client.post(tables, json={"name": "after", "columns": [COLUMN]}, headers=basic("u" * 256)).status_code == 200
    assert engine_tables(tmp_path / "sqlite-root") == ["after"]


def test_the_body_walk_names_the_place_of_the_bad_character():
    from gravimeta.api.input_rules import check_body
    from gravimeta.errors import IllegalArgument

    body = {"columns": [{"name": "a"}, {"name": "b", "type": {"fields": [{"comment": f"x{NUL}"}]}}]}
    with pytest.raises(IllegalArgument, match=r"columns\[1\]\.type\.fields\[0\]\.comment contains a NUL"):
        check_body(copy.deepcopy(body))
