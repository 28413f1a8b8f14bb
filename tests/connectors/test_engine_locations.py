"""Connector.engine_locations: two catalogs on one engine share a location however each names it, so a
dropped catalog's pending retirement reaches the engine before its namesake uses it
(gravimeta/dispatch/retirement.py; on real replicas: tests/engine/test_engine_identity_races.py, the
namesake that spells the metastore otherwise). Engines that are not the same share none."""

from __future__ import annotations

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector


def hive(uris: str) -> frozenset[str]:
    return HiveConnector(CatalogContext("m", "c", {"metastore.uris": uris})).engine_locations()


def sqlite(path: str) -> frozenset[str]:
    return SQLiteCatalogConnector(CatalogContext("m", "c", {"path": path})).engine_locations()


@pytest.mark.parametrize("other", [
    "http://localhost:9083", "http://LocalHost:9083/", "http://127.1:9083", "http://[::1]:9083",
    "http://127.0.0.1:1,http://localhost:9083",
])
def test_one_metastore_named_otherwise_shares_a_location(other):
    assert hive("http://127.0.0.1:9083") & hive(other), other


@pytest.mark.parametrize("other", ["http://127.0.0.1:9084", "http://192.0.2.1:9083", "http://unresolvable.invalid:9083"])
def test_other_metastores_share_none(other):
    assert not hive("http://127.0.0.1:9083") & hive(other), other


def test_a_sqlite_file_named_otherwise_has_one_location(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    (tmp_path / "alias.db").symlink_to(tmp_path / "d" / "cat.db")
    spellings = ["d/cat.db", "./d/cat.db", "d//cat.db", "d/./cat.db", "link/cat.db", "alias.db"]
    assert {sqlite(path) for path in spellings} == {frozenset({f"sqlite:{tmp_path.resolve() / 'd' / 'cat.db'}"})}
    assert not sqlite("d/cat.db") & sqlite("d/other.db")


# ---------------------------------------------------------------- identities (Connector.engine_identity)


def test_the_hive_stub_reports_one_identity_however_and_wherever_it_is_reached(tmp_path):
    """The stub keeps its id with its storage: the same through a forwarded address that shares no place
    with its own, and after a restart on another port; another stub's differs. A connector names it among
    its locations once it asked."""
    from tests.connectors.stub_process import StubProcess
    from tests.support.tcp_proxy import TcpProxy

    first = StubProcess(tmp_path / "one").start()
    try:
        direct = HiveConnector(CatalogContext("m", "c", {"metastore.uris": first.uri}))
        assert not any(place.startswith("id:") for place in direct.engine_locations())  # not asked yet
        identity = direct.engine_identity()
        assert identity and f"id:{identity}" in direct.engine_locations()
        with TcpProxy("127.0.0.1", first.port) as forwarded:
            uris = f"http://127.0.0.1:{forwarded.port}"
            assert not hive(uris) & hive(first.uri)  # no place in common
            assert HiveConnector(CatalogContext("m", "c", {"metastore.uris": uris})).engine_identity() == identity
        first.stop()
        first.port = 0
        first.start()  # the same storage, another port
        again = HiveConnector(CatalogContext("m", "c", {"metastore.uris": first.uri}))
        assert again.engine_identity() == identity
        other = StubProcess(tmp_path / "two").start()
        try:
            assert HiveConnector(CatalogContext("m", "c", {"metastore.uris": other.uri})).engine_identity() != identity
        finally:
            other.stop()
    finally:
        first.stop()


def test_a_metastore_without_an_identity_is_known_by_its_places_and_an_unreachable_one_says_so():
    """A metastore that answers 404 (a real one keeps no gravimeta identity): None, and its locations are its
    places; one that cannot be reached: EngineUnreachable, never None (None means "it has none")."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from gravimeta import errors

    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"error": "NotFound", "message": "no such route"}'
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uris = f"http://127.0.0.1:{server.server_address[1]}"
        connector = HiveConnector(CatalogContext("m", "c", {"metastore.uris": uris}))
        assert connector.engine_identity() is None
        assert connector.engine_locations() == hive(uris)
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(errors.EngineUnreachable):
        HiveConnector(CatalogContext("m", "c", {"metastore.uris": uris})).engine_identity()


def test_a_sqlite_catalog_file_keeps_its_identity_by_whatever_path_it_is_reached(tmp_path, monkeypatch):
    """prepare_engine writes the id into the catalog file; the file moved to another path (no place in
    common) reports the same; another file another; a file made before identities gets one when asked."""
    import sqlite3

    from connectors.sqlite import identity as sqlite_identity

    monkeypatch.setenv(ROOT_ENV, str(tmp_path))

    def connector(path: str) -> SQLiteCatalogConnector:
        return SQLiteCatalogConnector(CatalogContext("m", "c", {"path": path}))

    prepared = connector("a/cat.db")
    prepared.prepare_engine()
    identity = prepared.engine_identity()
    assert identity and f"id:{identity}" in prepared.engine_locations()
    assert connector("a/cat.db").engine_identity() == identity
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "cat.db").rename(tmp_path / "b" / "moved.db")
    assert not sqlite("a/cat.db") & sqlite("b/moved.db")
    assert connector("b/moved.db").engine_identity() == identity

    other = connector("a/other.db")
    other.prepare_engine()
    assert other.engine_identity() != identity
    with sqlite3.connect(tmp_path / "a" / "other.db") as conn:
        conn.execute(f"DROP TABLE {sqlite_identity.TABLE}")  # as a file made before identities
    made = connector("a/other.db").engine_identity()
    assert made and made == connector("a/other.db").engine_identity()


def jdbc_locations(kind, url: str, database: str = "sales") -> frozenset[str]:
    properties = {"jdbc-url": url, "jdbc-driver": "d", "jdbc-database": database, "jdbc-user": "u", "jdbc-password": "p"}
    return kind(CatalogContext("m", "c", properties)).engine_locations()


def test_a_postgresql_database_named_otherwise_shares_a_location_and_another_database_none():
    from connectors.jdbc.postgresql import PostgreSQLConnector as Pg

    here = jdbc_locations(Pg, "jdbc:postgresql://127.0.0.1:5432/sales")
    assert here & jdbc_locations(Pg, "jdbc:postgresql://localhost:5432/sales?sslmode=disable")
    assert here & jdbc_locations(Pg, "jdbc:postgresql://10.9.9.9:5432,LOCALHOST:5432/sales")
    assert not here & jdbc_locations(Pg, "jdbc:postgresql://127.0.0.1:5432/other", "other")
    assert not here & jdbc_locations(Pg, "jdbc:postgresql://127.0.0.1:5433/sales")


def test_a_mysql_server_is_one_location_whatever_database_the_url_names():
    from connectors.jdbc.mysql import MySQLConnector as My

    here = jdbc_locations(My, "jdbc:mysql://127.0.0.1:3306")
    assert here & jdbc_locations(My, "jdbc:mariadb://localhost:3306/shop")
    assert not here & jdbc_locations(My, "jdbc:mysql://127.0.0.1:3307")


@pytest.mark.parametrize("provider", ["jdbc_postgresql", "jdbc_mysql"])
def test_a_jdbc_engine_reports_one_identity_however_it_is_reached(request, provider):
    """The id kept in gravimeta's fence schema (PostgreSQL) or fence database (MySQL)."""
    engine = request.getfixturevalue(f"{provider}_connector")
    identity = engine.engine_identity()
    assert identity and f"id:{identity}" in engine.engine_locations()
    url = engine.context.properties["jdbc-url"].replace("127.0.0.1", "localhost")
    again = type(engine)(CatalogContext("m", "other", {**engine.context.properties, "jdbc-url": url}))
    try:
        assert again.engine_identity() == identity
    finally:
        again.close()
