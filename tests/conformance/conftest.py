"""Fixtures for the conformance suite: the official `apache-gravitino` client against a real
`gravimeta serve` (gunicorn, 2 workers) on each database backend.

Two servers per backend serve the whole session: `server` with the access settings of Gravitino's
shipped `gravitino.conf` (authorization off, `anonymous` its service admin), `authorized_uri` with
authorization on. Every test works under its own uniquely named metalake, so tests never see each
other's objects.

The JDBC providers run on one store backend only (JDBC_STORE: their engine is another server, whatever
the store), on one PostgreSQL database and one MariaDB fence database for the session; a jdbc-mysql
catalog spans the MariaDB server, whose databases the session's schemas become: their names carry the
session's tag (new_name) and they are dropped at its end. Where Gravitino's JDBC catalogs refuse what
the other providers take (REFUSED), the tests check the refusal instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient
from gravitino.auth.simple_auth_provider import SimpleAuthProvider

from tests.conftest import require_backend
from tests.connectors.stub_process import StubProcess
from tests.support import jdbc
from tests.support.databases import BACKENDS, fresh_database
from tests.support.servers import ServerProcess

#: the connector providers the official client's scenario runs against
PROVIDERS = ("memory", "sqlite", "hive", *jdbc.PROVIDERS)
#: the one store backend the JDBC providers' scenario runs on
JDBC_STORE = "sqlite"
#: an optional catalog property each provider declares (undeclared keys are stored as given)
OPTIONAL_PROPERTY = {"memory": ("comment", "set"), "sqlite": ("busy-timeout-ms", "2500"), "hive": ("client.timeout-ms", "4000"),
                     "jdbc-postgresql": ("jdbc.pool.max-size", "4"), "jdbc-mysql": ("jdbc.pool.max-size", "4")}
#: what Gravitino 1.3's catalogs of a provider refuse (gravimeta with them) that the scenario does elsewhere
REFUSED = {
    "jdbc-postgresql": {"schema properties", "table properties", "column position", "purge", "partitioning",
                        "nullable list elements"},
    "jdbc-mysql": {"schema comment", "schema properties", "purge", "partitioning", "lists"},
}
#: the session's tag in every name (new_name): the MariaDB databases a jdbc-mysql catalog made are found by it
SESSION = uuid.uuid4().hex[:4]
#: the access settings of Gravitino's shipped gravitino.conf, read as a properties file
SHIPPED_ACCESS_CONF = "gravitino.authorization.enable = false\ngravitino.authorization.serviceAdmins = anonymous\n"
#: the service admin of the authorized server, next to `anonymous` (Gravitino's own client tests
#: run as a caller without credentials that the conf names a service admin)
ADMIN = "admin"


def refuses(provider: str, feature: str) -> bool:
    return feature in REFUSED.get(provider, ())


def pytest_collection_modifyitems(config, items):
    """The JDBC providers' scenario on JDBC_STORE's servers only."""
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        engine_elsewhere = params.get("catalog") in jdbc.PROVIDERS and params.get("server", JDBC_STORE) != JDBC_STORE
        (dropped if engine_elsewhere else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def jdbc_engines(tmp_path_factory) -> Iterator[Callable[[str], dict[str, str]]]:
    """engine(provider): the catalog properties of the session's engine for it (made at first use)."""
    made: dict[str, dict[str, str]] = {}
    with ExitStack() as stack:
        def engine(provider: str) -> dict[str, str]:
            if provider not in made:
                require_backend(jdbc.BACKEND[provider])
                made[provider] = stack.enter_context(jdbc.target(provider, tmp_path_factory.mktemp(provider)))
            return made[provider]

        try:
            yield engine
        finally:
            if "jdbc-mysql" in made:
                jdbc.drop_mysql_databases_tagged(f"_{SESSION}")


@pytest.fixture(scope="session")
def metastore(tmp_path_factory) -> Iterator[StubProcess]:
    """The out-of-process Hive-like metastore behind `hive` catalogs, shared by the session."""
    stub = StubProcess(tmp_path_factory.mktemp("conformance-hive")).start()
    yield stub
    stub.stop()


@pytest.fixture(scope="session", params=BACKENDS)
def server(request, tmp_path_factory) -> Iterator[ServerProcess]:
    """A running `gravimeta serve` on a fresh database of one backend."""
    backend = request.param
    require_backend(backend)
    tmp = tmp_path_factory.mktemp(f"conformance-{backend}")
    conf = tmp / "gravitino.conf"
    conf.write_text(SHIPPED_ACCESS_CONF)
    with fresh_database(backend, tmp) as url:
        env = {"GRAVIMETA_SQLITE_CATALOG_ROOT": str(tmp / "sqlite-catalogs"), "GRAVIMETA_CONFIG": str(conf)}
        process = ServerProcess(url, workers=2, log_path=tmp / "server.log", env=env)
        with process:
            yield process


@pytest.fixture(scope="session", params=BACKENDS)
def authorized_uri(request, tmp_path_factory) -> Iterator[str]:
    """A `gravimeta serve` with authorization on (service admins `admin` and `anonymous`) on a fresh
    database of one backend."""
    require_backend(request.param)
    tmp = tmp_path_factory.mktemp(f"authorized-{request.param}")
    with fresh_database(request.param, tmp) as url:
        env = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": f"{ADMIN},anonymous",
               "GRAVIMETA_SQLITE_CATALOG_ROOT": str(tmp / "sqlite-catalogs")}
        with ServerProcess(url, workers=2, log_path=tmp / "server.log", env=env) as process:
            yield process.url


@pytest.fixture
def connect(authorized_uri, monkeypatch) -> Iterator:
    """connect(user, metalake=None): an admin client (no metalake) or a metalake client of the authorized
    server acting as `user` (SimpleAuthProvider), or without credentials (`anonymous`) for user None."""
    opened: list = []

    def open_as(user: str | None, metalake: str | None = None):
        kwargs = {}
        if user is not None:
            monkeypatch.setenv("GRAVITINO_USER", user)
            kwargs["auth_data_provider"] = SimpleAuthProvider()
        if metalake is None:
            client = GravitinoAdminClient(uri=authorized_uri, **kwargs)
        else:
            client = GravitinoClient(uri=authorized_uri, metalake_name=metalake, **kwargs)
        opened.append(client)
        return client

    yield open_as
    for client in opened:
        client.close()


@pytest.fixture
def authorized_metalake(connect) -> Iterator[str]:
    """A fresh metalake of the authorized server, created (and owned) by ADMIN."""
    name = new_name("ml")
    admin = connect(ADMIN)
    admin.create_metalake(name, "authorized", {})
    yield name
    admin.drop_metalake(name, force=True)


@pytest.fixture
def uri(server: ServerProcess) -> str:
    return server.url


def new_name(prefix: str) -> str:
    """A unique object name, so that tests sharing a server never collide (with the session's tag)."""
    return f"{prefix}_{SESSION}{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(uri: str) -> Iterator[GravitinoAdminClient]:
    client = GravitinoAdminClient(uri=uri)
    yield client
    client.close()


@pytest.fixture
def metalake(admin: GravitinoAdminClient) -> Iterator[str]:
    """A fresh metalake; force-dropped (with everything in it) afterwards."""
    name = new_name("ml")
    admin.create_metalake(name, "conformance", {})
    yield name
    admin.drop_metalake(name, force=True)


@pytest.fixture
def client(uri: str, metalake: str) -> Iterator[GravitinoClient]:
    client = GravitinoClient(uri=uri, metalake_name=metalake)
    yield client
    client.close()


@pytest.fixture(params=PROVIDERS)
def catalog(request, client: GravitinoClient) -> Catalog:
    """A relational catalog on each connector: in-memory, a real SQLite file, the Hive-like stub, a
    PostgreSQL database, a MariaDB server."""
    name, provider = new_name("cat"), request.param
    if provider in jdbc.PROVIDERS:
        properties = request.getfixturevalue("jdbc_engines")(provider)
    else:
        properties = {
            "memory": {},
            "sqlite": {"path": f"{name}.db"},
            "hive": {"metastore.uris": request.getfixturevalue("metastore").uri} if provider == "hive" else {},
        }[provider]
    return client.create_catalog(name, Catalog.Type.RELATIONAL, provider, "a catalog", properties)


@pytest.fixture
def schema(catalog: Catalog) -> str:
    name = new_name("sch")
    comment = None if refuses(catalog.provider(), "schema comment") else "a schema"
    catalog.as_schemas().create_schema(name, comment, {})
    return name
