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
from tests.support.databases import BACKENDS, fresh_database
from tests.support.servers import ServerProcess


@pytest.fixture(scope="session", params=BACKENDS)
def server(request, tmp_path_factory) -> Iterator[ServerProcess]:
    """A running `gravimeta serve` on a fresh database of one backend."""
    backend = request.param
    require_backend(backend)
    tmp = tmp_path_factory.mktemp(f"conformance-{backend}")
    with fresh_database(backend, tmp) as url:
        process = ServerProcess(url, workers=2, log_path=tmp / "server.log")
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


@pytest.fixture
def catalog(client: GravitinoClient) -> Catalog:
    """A relational catalog on the in-memory connector."""
    return client.create_catalog(new_name("cat"), Catalog.Type.RELATIONAL, "memory", "a catalog", {})


@pytest.fixture
def schema(catalog: Catalog) -> str:
    name = new_name("sch")
    catalog.as_schemas().create_schema(name, "a schema", {})
    return name
