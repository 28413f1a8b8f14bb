"""`gravimeta.catalog.hive.allowed-metastores` limits where `hive` catalogs may point: with it set, a
catalog create, an alter of `metastore.uris` or a connection test naming any other host:port is a 400
and no connection is made (a listening socket counts the connections it receives); without it (the
default) any endpoint is allowed. Before this change there was no such setting: every endpoint was
reached, so the refusals below were 200s and the socket saw the connection test's connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from connectors import metastore_allowlist
from gravimeta.app import create_app
from gravimeta.config import Settings, load_settings

CATALOGS = "/api/metalakes/m/catalogs"


class Listener:
    """A loopback socket that counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.sock.close()


def client_with(sqlite_url, monkeypatch, allowed: str | None):
    monkeypatch.delenv(metastore_allowlist.ENV, raising=False)  # restored after the test, whatever the app sets
    monkeypatch.setenv(metastore_allowlist.ENV, "")
    client = create_app(Settings(store_url=sqlite_url, hive_allowed_metastores=allowed or "")).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    return client


def catalog(name: str, uris: str) -> dict[str, object]:
    return {"name": name, "type": "relational", "provider": "hive", "properties": {"metastore.uris": uris}}


def refused(response) -> None:
    body = response.get_json()
    assert body["type"] == "IllegalArgumentException" and body["code"] == 1001, body
    assert "is not allowed on this server (setting gravimeta.catalog.hive.allowed-metastores)" in body["message"], body


def test_with_the_setting_other_endpoints_are_refused_without_a_connection(sqlite_url, monkeypatch, listener, hive_stub):
    client = client_with(sqlite_url, monkeypatch, f"127.0.0.1:{hive_stub.port}, metastore.internal:*")
    elsewhere = f"http://127.0.0.1:{listener.port}"
    tested = client.post(f"{CATALOGS}/testConnection", json=catalog("x", elsewhere))
    assert tested.status_code == 200  # a connection test answers its error in a 200 (as Gravitino)
    refused(tested)
    created = client.post(CATALOGS, json=catalog("x", elsewhere))
    assert created.status_code == 400
    refused(created)
    refused(client.post(CATALOGS, json=catalog("x", f"{hive_stub.uri},{elsewhere}")))  # every entry is checked
    assert listener.accepted == 0, "the server connected to an endpoint it should have refused"
    ok = client.post(CATALOGS, json=catalog("h", hive_stub.uri))
    assert ok.status_code == 200, ok.get_data(as_text=True)
    altered = client.put(f"{CATALOGS}/h", json={"updates": [
        {"@type": "setProperty", "property": "metastore.uris", "value": elsewhere}]})
    assert altered.status_code == 400
    refused(altered)
    assert listener.accepted == 0


def test_without_the_setting_any_endpoint_is_allowed(sqlite_url, monkeypatch, listener):
    client = client_with(sqlite_url, monkeypatch, None)
    client.post(f"{CATALOGS}/testConnection", json=catalog("x", f"http://127.0.0.1:{listener.port}"))
    assert listener.accepted >= 1


@pytest.mark.parametrize(("setting", "host", "port", "expected"), [
    ("10.0.0.0/8:9083", "10.1.2.3", 9083, True),
    ("10.0.0.0/8:9083", "10.1.2.3", 9084, False),
    ("10.0.0.0/8:9083", "11.1.2.3", 9083, False),
    ("metastore.internal:*", "METASTORE.internal", 1, True),
    ("metastore.internal:*", "metastore.internal.evil", 1, False),
    ("[::1]:9083", "::1", 9083, True),
    ("*:9083", "anything", 9083, True),
    ("*:9083", "anything", 80, False),
    ("", "anything", 80, True),
])
def test_entries_match_as_documented(setting, host, port, expected):
    assert metastore_allowlist.allowed(host, port, setting) is expected


def test_the_setting_is_read_from_the_properties_file_and_the_environment(tmp_path):
    conf = tmp_path / "gravitino.conf"
    conf.write_text("gravimeta.catalog.hive.allowed-metastores = 127.0.0.1:9083\n")
    assert load_settings(conf, environ={}).hive_allowed_metastores == "127.0.0.1:9083"
    assert load_settings(None, environ={metastore_allowlist.ENV: "*:1"}).hive_allowed_metastores == "*:1"


@pytest.mark.parametrize("then", ["move", "drop"])
def test_a_catalog_on_an_endpoint_no_longer_allowed_can_still_be_moved_or_dropped(sqlite_url, monkeypatch, then,
                                                                                   listener, hive_stub):
    """The setting names what to do for a catalog made before it: change its metastore.uris (or drop it).
    Neither may need a connector on the endpoint it no longer allows (the retirement of the catalog's key
    there, dispatch/retirement.py: it is not told, and the change goes on)."""
    client = client_with(sqlite_url, monkeypatch, None)
    assert client.post(CATALOGS, json=catalog("h", f"http://127.0.0.1:{listener.port}")).status_code == 200
    monkeypatch.setenv(metastore_allowlist.ENV, f"127.0.0.1:{hive_stub.port}")  # read at call time
    if then == "move":
        answer = client.put(f"{CATALOGS}/h", json={"updates": [
            {"@type": "setProperty", "property": "metastore.uris", "value": hive_stub.uri}]})
    else:
        answer = client.delete(f"{CATALOGS}/h?force=true")
    assert answer.status_code == 200, answer.get_json()
