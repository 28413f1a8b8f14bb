"""The JDBC providers' catalog properties, with Gravitino 1.3's names and rules, the driver URL their JDBC URL
becomes, and jdbc-user / jdbc-password kept out of every answer that shows the catalog."""

from __future__ import annotations

import pytest

from connectors.base import CatalogContext
from connectors.jdbc.mysql import MySQLConnector
from connectors.jdbc.postgresql import PostgreSQLConnector
from connectors.jdbc.settings import settings
from gravimeta import errors
from tests.conftest import require_backend
from tests.support import jdbc

PG = {"jdbc-url": "jdbc:postgresql://db.example:5433/sales", "jdbc-driver": "org.postgresql.Driver",
      "jdbc-database": "sales", "jdbc-user": "gravitino", "jdbc-password": "s3cr@t:/"}
MY = {"jdbc-url": "jdbc:mysql://db.example:3307/?useSSL=false&allowPublicKeyRetrieval=true",
      "jdbc-driver": "com.mysql.cj.jdbc.Driver", "jdbc-user": "gravitino", "jdbc-password": "s3cr@t:/"}
PROVIDERS = {"jdbc-postgresql": (PostgreSQLConnector, PG), "jdbc-mysql": (MySQLConnector, MY)}


def refused(provider: str, match: str, **changed: str | None) -> None:
    kind, base = PROVIDERS[provider]
    properties = {k: v for k, v in {**base, **changed}.items() if v is not None}
    with pytest.raises(errors.IllegalArgument, match=match):
        kind.validate_properties(properties)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("key", ["jdbc-url", "jdbc-driver", "jdbc-user", "jdbc-password"])
def test_each_required_property_is_required(provider, key):
    refused(provider, rf"required and must be set: \[{key}\]", **{key: None})


def test_a_postgresql_catalog_needs_its_database_as_gravitino_does():
    refused("jdbc-postgresql", r"required and must be set: \[jdbc-database\]", **{"jdbc-database": None})
    refused("jdbc-postgresql", "names database 'sales'", **{"jdbc-database": "other"})


def test_a_postgresql_url_without_a_database_connects_to_jdbc_database():
    found = settings("postgresql", {**PG, "jdbc-url": "jdbc:postgresql://db.example:5433/"})
    assert found.url.database == "sales" and found.where() == "db.example:5433/sales"


@pytest.mark.parametrize(("provider", "url"), [
    ("jdbc-postgresql", "jdbc:mysql://db.example:3306/sales"),
    ("jdbc-postgresql", "postgresql://db.example/sales"),
    ("jdbc-mysql", "jdbc:postgresql://db.example:5432/sales"),
    ("jdbc-mysql", "jdbc:oracle:thin:@db.example:1521:x"),
])
def test_a_url_of_another_engine_is_refused(provider, url):
    refused(provider, "needs a JDBC URL like", **{"jdbc-url": url})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_h2_urls_and_drivers_are_refused_as_gravitino_refuses_them(provider):
    refused(provider, "H2 JDBC URL is not allowed", **{"jdbc-url": "jdbc:h2:mem:x;INIT=RUNSCRIPT FROM 'x'"})
    refused(provider, "H2 JDBC URL is not allowed", **{"jdbc-url": "jdbc%3Ah2:mem:x"})
    refused(provider, "H2 JDBC driver is not allowed", **{"jdbc-driver": "org.h2.Driver"})


@pytest.mark.parametrize(("provider", "parameter"), [
    ("jdbc-postgresql", "socketFactory=org.example.Evil"),
    ("jdbc-postgresql", "%2573slfactory=x"),  # encoded twice
    ("jdbc-mysql", "autoDeserialize=true"),
    ("jdbc-mysql", "allowLoadLocalInfile=true"),
])
def test_gravitinos_unsafe_url_parameters_are_refused(provider, parameter):
    _, base = PROVIDERS[provider]
    url = base["jdbc-url"].split("?")[0] + "?" + parameter
    refused(provider, "Unsafe .* parameter", **{"jdbc-url": url})


def test_an_unsafe_parameter_named_as_a_property_value_is_refused_too():
    refused("jdbc-mysql", "Unsafe MySQL parameter 'autodeserialize'", **{"gravitino.bypass.x": "autoDeserialize"})


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("key", "value"), [("jdbc.pool.min-size", "0"), ("jdbc.pool.max-size", "-1"),
                                            ("jdbc.pool.max-wait-ms", "0"), ("jdbc.pool.max-size", "ten"),
                                            ("jdbc.pool.max-wait-ms", "1 000")])
def test_pool_sizes_and_waits_are_positive_integers(provider, key, value):
    refused(provider, f"Invalid value: '{value}' for property: '{key}'", **{key: value})


def test_the_pool_cannot_keep_more_than_it_may_open():
    refused("jdbc-postgresql", "is greater than 'jdbc.pool.max-size'", **{"jdbc.pool.min-size": "5",
                                                                          "jdbc.pool.max-size": "2"})


def test_the_jdbc_url_becomes_the_drivers_url_gravitinos_store_urls_become():
    pg = settings("postgresql", {**PG, "jdbc-url": "jdbc:postgresql://db.example:5433/sales?sslmode=require&ApplicationName=x"})
    assert pg.url.drivername == "postgresql+psycopg" and pg.url.query == {"sslmode": "require"}
    assert (pg.url.username, pg.url.password, pg.url.host, pg.url.port) == ("gravitino", "s3cr@t:/", "db.example", 5433)
    failover = settings("postgresql", {**PG, "jdbc-url": "jdbc:postgresql://a:5432,b:5433/sales?targetServerType=primary"})
    assert failover.url.query["host"] == ("a:5432", "b:5433")
    assert failover.url.query["target_session_attrs"] == "read-write"
    assert failover.where() == "a:5432,b:5433/sales"
    my = settings("mysql", MY)
    assert my.url.drivername == "mysql+pymysql" and my.url.database is None and my.url.query == {}
    assert settings("mysql", {**MY, "jdbc-url": "jdbc:mariadb://db.example"}).target.hosts == (("db.example", 3306),)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_message_and_no_location_shows_the_password(provider):
    kind, base = PROVIDERS[provider]
    connector = kind(CatalogContext("m", "c", base))
    shown = " ".join([connector.label(), *connector.engine_locations(), repr(connector.settings.where())])
    assert "s3cr" not in shown and "gravitino" not in shown


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_user_the_password_and_test_on_borrow_are_hidden_the_rest_shown(provider):
    kind, base = PROVIDERS[provider]
    shown = kind.catalog_properties.shown({**base, "jdbc.pool.test-on-borrow": "false", "jdbc.pool.max-size": "4",
                                           "in-use": "true", "anything": "else"})
    assert shown == {k: v for k, v in base.items() if k not in ("jdbc-user", "jdbc-password")} | {
        "jdbc.pool.max-size": "4", "in-use": "true", "anything": "else"}


def test_the_fence_database_of_a_mysql_catalog_cannot_change():
    with pytest.raises(errors.IllegalArgument, match="immutable"):
        MySQLConnector.validate_property_changes({"gravimeta.fence-database": "other"}, [],
                                                 {**MY, "gravimeta.fence-database": "other"})
    with pytest.raises(errors.IllegalArgument, match="cannot be removed"):
        MySQLConnector.validate_property_changes({}, ["jdbc-user"], {k: v for k, v in MY.items() if k != "jdbc-user"})


@pytest.fixture
def served_postgresql(tmp_path, sqlite_url):
    """A Flask test client of gravimeta with a jdbc-postgresql catalog `pg` on a fresh database."""
    from gravimeta.app import create_app
    from gravimeta.config import Settings

    require_backend("postgresql")
    with jdbc.target("jdbc-postgresql", tmp_path) as properties:
        client = create_app(Settings(store_url=sqlite_url)).test_client()
        assert client.post("/api/metalakes", json={"name": "m", "properties": {}}).status_code == 200
        yield client, properties


def test_catalog_answers_never_show_the_user_or_the_password(served_postgresql):
    """As Gravitino 1.3: create, load, the detailed list and alter answer without them; the catalog keeps
    and uses them (its engine works, and they can be changed)."""
    client, properties = served_postgresql
    created = client.post("/api/metalakes/m/catalogs", json={
        "name": "pg", "type": "relational", "provider": "jdbc-postgresql", "properties": properties}).get_json()
    answers = [created["catalog"], client.get("/api/metalakes/m/catalogs/pg").get_json()["catalog"],
               client.get("/api/metalakes/m/catalogs?details=true").get_json()["catalogs"][0],
               client.put("/api/metalakes/m/catalogs/pg", json={"updates": [
                   {"@type": "setProperty", "property": "jdbc-password", "value": "trusted anyway"},
                   {"@type": "setProperty", "property": "jdbc.pool.max-size", "value": "3"}]}).get_json()["catalog"]]
    for answer in answers:
        assert "jdbc-user" not in answer["properties"] and "jdbc-password" not in answer["properties"], answer
        assert answer["properties"]["jdbc-url"] == properties["jdbc-url"]
    assert answers[-1]["properties"]["jdbc.pool.max-size"] == "3"
    made = client.post("/api/metalakes/m/catalogs/pg/schemas", json={"name": "s", "properties": {}})
    assert made.status_code == 200, made.get_json()
