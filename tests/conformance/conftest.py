"""Fixtures for the conformance suite: the official `apache-gravitino` client against a real
`gravimeta serve` (gunicorn, 2 workers) on each database backend.

One server per backend serves the whole session; every test works under its own uniquely named
metalake, so tests never see each other's objects.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient

from tests.conftest import require_backend
from tests.connectors.stub_process import StubProcess
from tests.support.databases import BACKENDS, fresh_database
from tests.support.servers import ServerProcess

#: the connector providers the official client's scenario runs against
PROVIDERS = ("memory", "sqlite", "hive")
#: an optional catalog property each provider declares (undeclared keys are stored as given)
OPTIONAL_PROPERTY = {"memory": ("comment", "set"), "sqlite": ("busy-timeout-ms", "2500"), "hive": ("client.timeout-ms", "4000")}


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
    with fresh_database(backend, tmp) as url:
        env = {"GRAVIMETA_SQLITE_CATALOG_ROOT": str(tmp / "sqlite-catalogs")}
        process = ServerProcess(url, workers=2, log_path=tmp / "server.log", env=env)
        with process:
            yield process


@pytest.fixture
def uri(server: ServerProcess) -> str:
    return server.url


def new_name(prefix: str) -> str:
    """A unique object name, so that tests sharing a server never collide."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


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
    """A relational catalog on each connector: in-memory, a real SQLite file, the Hive-like stub."""
    name, provider = new_name("cat"), request.param
    properties = {
        "memory": {},
        "sqlite": {"path": f"{name}.db"},
        "hive": {"metastore.uris": request.getfixturevalue("metastore").uri} if provider == "hive" else {},
    }[provider]
    return client.create_catalog(name, Catalog.Type.RELATIONAL, provider, "a catalog", properties)


@pytest.fixture
def schema(catalog: Catalog) -> str:
    name = new_name("sch")
    catalog.as_schemas().create_schema(name, "a schema", {})
    return name
