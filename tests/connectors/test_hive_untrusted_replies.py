"""The hive connector treats its metastore's replies as untrusted input: whatever a server at
`metastore.uris` answers, a reply of the wrong shape is a 502 ConnectionFailedException naming the
metastore and the call, never a 500 and never taken for success.

A tiny fake metastore (a real HTTP server on loopback, in this process) answers scripted garbage; tables
of odd shapes are written straight into the real stub (its API keeps any JSON object with a name).
Before this change: `[]`, `{"databases": [1, null]}`, invalid JSON and non-object error bodies ended in
500s (TypeError, KeyError, AttributeError), `"abc"` was listed as schemas a, b and c, a 200 with garbage
was a successful create, and the odd tables made load_table answer 500."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from gravimeta import errors
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Column, Schema, Table

#: what the fake answers: (status, raw body) for every request, or per "METHOD /path"
Script = dict[str, tuple[int, bytes]]


class FakeMetastore(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: Script = {}

    def answer(self, status: int, body: Any, route: str = "*") -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.script[route] = (status, raw)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeMetastore

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _any(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = f"{self.command} {self.path.split('?')[0]}"
        if self.path == "/health":
            status, raw = 200, b'{"status": "ok"}'
        else:
            status, raw = self.server.script.get(route) or self.server.script.get("*") or (200, b"{}")
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_DELETE = _any


@pytest.fixture
def fake() -> Iterator[FakeMetastore]:
    server = FakeMetastore()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def connector(fake) -> HiveConnector:
    return HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": fake.uri, "client.timeout-ms": "3000"}))


def bad_reply(call, fragment: str = "") -> str:
    with pytest.raises(errors.GravitinoError) as raised:
        result = call()
        pytest.fail(f"accepted as success: {result!r}")
    error = raised.value
    assert isinstance(error, errors.ConnectionFailed) and error.http_status == 502, (type(error), error.message)
    assert "Hive metastore at http://127.0.0.1:" in error.message, error.message
    assert fragment in error.message, error.message
    return error.message


def table() -> Table:
    return Table("t", [Column("id", "long")])


GARBAGE = {
    "empty-list": [],
    "bad-names": {"databases": [1, None], "tables": [1, None]},
    "a-string": "abc",
    "names-as-string": {"databases": "abc", "tables": "abc"},
    "not-json": b"<html>oops</html>",
    "truncated-json": b'{"databases": ["a"',
    "deep-json": b"[" * 100_000,
    "null": None,
}


@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_garbage_200_replies_are_502_for_every_call(fake, connector, garbage):
    fake.answer(200, GARBAGE[garbage])
    for call in (connector.list_schemas, lambda: connector.list_tables("db"), lambda: connector.load_schema("db"),
                 lambda: connector.load_table("db", "t"), lambda: connector.create_schema(Schema("db")),
                 lambda: connector.create_table("db", table()), lambda: connector.drop_schema("db", True),
                 lambda: connector.drop_table("db", "t"), lambda: connector.list_partitions("db", "t"),
                 lambda: connector.rename_table("db", "t", "db", "u"),
                 lambda: connector.alter_table("db", table(), table())):
        bad_reply(call, "invalid reply")


def test_duplicate_names_in_a_list_are_refused(fake, connector):
    fake.answer(200, {"databases": ["a", "a"]})
    bad_reply(connector.list_schemas, "twice")


@pytest.mark.parametrize("body", [[], "abc", None, b"not json", {"error": 7, "message": ["x"]}, {"message": "no error"}])
@pytest.mark.parametrize("status", [400, 404, 409, 418, 500, 503])
def test_error_replies_of_any_shape_are_502_never_500(fake, connector, body, status):
    fake.answer(status, body)
    for call in (connector.list_schemas, lambda: connector.load_table("db", "t"),
                 lambda: connector.create_schema(Schema("db")), lambda: connector.create_table("db", table()),
                 lambda: connector.drop_schema("db", False), lambda: connector.drop_table("db", "t"),
                 lambda: connector.rename_table("db", "t", "db", "u")):
        bad_reply(call)


def test_a_create_answered_with_another_name_is_not_a_success(fake, connector):
    fake.answer(201, {"name": "someone-else"})
    bad_reply(lambda: connector.create_schema(Schema("db")), "'someone-else', not 'db'")
    bad_reply(lambda: connector.create_table("db", table()), "'someone-else', not 't'")
    fake.answer(200, {"dropped": "yes"})
    bad_reply(lambda: connector.drop_table("db", "t"), "dropped")


def test_well_formed_replies_still_work(fake, connector):
    """The checks refuse garbage only: the shapes the metastore protocol defines pass."""
    fake.answer(200, {"databases": ["a", "b"]}, "GET /databases")
    fake.answer(201, {"name": "db", "comment": None, "properties": {}}, "POST /databases")
    fake.answer(404, {"error": "NoSuchTable", "message": "gone"}, "DELETE /databases/db/tables/t")
    assert connector.list_schemas() == ["a", "b"]
    connector.create_schema(Schema("db"))
    assert connector.drop_table("db", "t") is False


def test_through_the_rest_api_garbage_is_a_502(fake, sqlite_url):
    client = create_app(Settings(store_url=sqlite_url)).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    response = client.post("/api/metalakes/m/catalogs", json={
        "name": "h", "type": "relational", "provider": "hive", "properties": {"metastore.uris": fake.uri}})
    assert response.status_code == 200, response.get_data(as_text=True)
    for body in ("abc", [], {"databases": [1, None]}, b"not json"):
        fake.answer(200, body)
        listed = client.get("/api/metalakes/m/catalogs/h/schemas")
        assert listed.status_code == 502, (body, listed.status_code, listed.get_data(as_text=True)[:300])
        assert listed.get_json()["type"] == "ConnectionFailedException"
        created = client.post("/api/metalakes/m/catalogs/h/schemas", json={"name": "s"})
        assert created.status_code == 502, (body, created.status_code, created.get_data(as_text=True)[:300])
    fake.answer(200, {"databases": []})
    assert client.get("/api/metalakes/m/catalogs/h/schemas").get_json()["identifiers"] == []


ODD_TABLES = {
    "columns-as-string": ({"name": "t", "columns": "id long"}, "'columns' must be a list"),
    "column-without-name": ({"name": "t", "columns": [{"type": "long"}]}, "column 0 has no name"),
    "column-not-object": ({"name": "t", "columns": ["id"]}, "column 0 must be a JSON object"),
    "duplicate-columns": ({"name": "t", "columns": [{"name": "id", "type": "long"}, {"name": "ID", "type": "long"}]},
                          "appears twice"),
    "properties-as-list": ({"name": "t", "columns": [], "properties": ["k", "v"]}, "'properties' must be an object"),
    "column-without-type": ({"name": "t", "columns": [{"name": "id"}]}, "has no type"),
    "nullable-as-string": ({"name": "t", "columns": [{"name": "id", "type": "long", "nullable": "no"}]}, "'nullable'"),
    "comment-as-number": ({"name": "t", "columns": [], "comment": 5}, "'comment' must be a string"),
}


@pytest.mark.parametrize("odd", sorted(ODD_TABLES))
def test_odd_tables_written_into_the_stub_are_502_on_load(stub, hive_connector, name, odd):
    db = name("db")
    hive_connector.create_schema(Schema(db))
    body, fragment = ODD_TABLES[odd]
    status, _ = stub.raw("POST", f"/databases/{db}/tables", body)
    assert status == 200
    assert hive_connector.list_tables(db) == ["t"]
    bad_reply(lambda: hive_connector.load_table(db, "t"), fragment)


#: text a metastore may hold that no gravimeta store can (capacity.unstorable_character): a lone surrogate
#: (JSON's "\ud800" escape decodes to one; UTF-8 cannot encode it) and NUL (PostgreSQL cannot store it)
UNSTORABLE = {"lone-surrogate": "x\ud800y", "low-surrogate": "\udfff", "nul": "a\x00b"}


@pytest.mark.parametrize("text", sorted(UNSTORABLE))
def test_unstorable_text_anywhere_in_a_reply_is_a_502_naming_the_metastore_and_the_place(fake, connector, text):
    bad = UNSTORABLE[text]
    where = {
        connector.list_schemas: ({"databases": ["ok", bad]}, "databases[1]"),
        lambda: connector.list_tables("db"): ({"tables": [bad]}, "tables[0]"),
        lambda: connector.load_schema("db"): ({"name": "db", "comment": bad}, "comment"),
        lambda: connector.load_table("db", "t"): (
            {"name": "t", "columns": [{"name": "id", "type": "long", "comment": bad}]}, "columns[0].comment"),
        lambda: connector.list_partitions("db", "t"): ({"partitions": [{"name": "p", "values": [[bad]]}]},
                                                       "partitions[0].values[0][0]"),
    }
    for call, (reply, place) in where.items():
        fake.answer(200, reply)
        message = bad_reply(call, place)
        assert ("lone surrogate" in message) == ("surrogate" in text) and ("NUL" in message) == (text == "nul"), message
    fake.answer(200, {"name": "t", "columns": [], "properties": {bad: "v"}})
    bad_reply(lambda: connector.load_table("db", "t"), "properties")  # a key is checked too


def test_a_table_the_stub_keeps_with_unstorable_text_is_a_502_through_the_api(stub, sqlite_url, name):
    """The metastore's own data, written there behind gravimeta's back: before, the load imported the
    table and the store's write failed with a 500 UnicodeEncodeError."""
    client = create_app(Settings(store_url=sqlite_url)).test_client()
    db = name("db")
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs", json={
        "name": "h", "type": "relational", "provider": "hive",
        "properties": {"metastore.uris": stub.uri}}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs/h/schemas", json={"name": db}).status_code == 200
    status, _ = stub.raw("POST", f"/databases/{db}/tables", {"name": "t", "comment": "\ud801", "columns": []})
    assert status == 200
    for response in (client.get(f"/api/metalakes/m/catalogs/h/schemas/{db}/tables/t"),
                     client.get(f"/api/metalakes/m/catalogs/h/schemas/{db}/tables/t?privileges=MODIFY_TABLE")):
        body = response.get_json()
        assert response.status_code == 502, (response.status_code, body)
        assert body["type"] == "ConnectionFailedException", body
        assert f"Hive metastore at {stub.uri} answered get table" in body["message"], body
        assert "comment" in body["message"] and "U+D801" in body["message"], body
    listed = client.get(f"/api/metalakes/m/catalogs/h/schemas/{db}/tables").get_json()["identifiers"]
    assert [t["name"] for t in listed] == ["t"]  # its name is fine: the engine's table is listed
    dropped = client.delete(f"/api/metalakes/m/catalogs/h/schemas/{db}/tables/t")
    assert dropped.status_code == 200 and dropped.get_json()["dropped"] is True, dropped.get_json()
    assert stub.raw("GET", f"/databases/{db}/tables")[1]["tables"] == []
