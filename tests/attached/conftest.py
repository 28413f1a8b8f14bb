"""Fixtures for the tests of partitions, statistics and tags: one app per backend and test module (a
fresh, migrated SQLite, PostgreSQL or MariaDB database), driven through the Flask test client; every
test works under its own metalake, so the tests of a module share the database without seeing each
other. `sql` reads the database directly, to check what the API cannot show (orphan rows)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from connectors.sqlite.paths import ROOT_ENV
from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.api.helpers import Api, Ref
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, fresh_database


@pytest.fixture(scope="module", params=BACKENDS)
def backend_url(request, tmp_path_factory) -> Iterator[str]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path_factory.mktemp(f"attached-{request.param}")) as url:
        yield url


@pytest.fixture(scope="module")
def backend_app(backend_url, tmp_path_factory):
    """The app on the module's database; `sqlite` catalogs keep their files in a directory of their own."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ROOT_ENV, str(tmp_path_factory.mktemp("sqlite-catalogs")))
        app = create_app(Settings(store_url=backend_url))
        yield app
        app.extensions["gravimeta"].store.engine.dispose()


@pytest.fixture
def api(backend_app) -> Api:
    return Api(backend_app.test_client())


@pytest.fixture
def metalake(api) -> Ref:
    return api.create_metalake()


@pytest.fixture
def catalog(api, metalake) -> Ref:
    return api.create_catalog(metalake)


@pytest.fixture
def schema(api, catalog) -> Ref:
    return api.create_schema(catalog)


@pytest.fixture
def sql(backend_url):
    """sql("SELECT ...", **params) -> list of row tuples, on the test's database."""
    engine = create_engine(backend_url, poolclass=NullPool)

    def run(statement: str, **params: Any) -> list[tuple[Any, ...]]:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(statement), params)]

    yield run
    engine.dispose()


def orphan_associations(sql) -> list[tuple[Any, ...]]:
    """Tag associations whose object row no longer exists (there must never be any)."""
    found = []
    for kind, table in (("catalog", "gm_catalog"), ("schema", "gm_schema"), ("table", "gm_table"), ("column", "gm_column")):
        found += sql(f"SELECT r.object_type, r.object_id FROM gm_tag_relation r WHERE r.object_type = :k "
                     f"AND NOT EXISTS (SELECT 1 FROM {table} o WHERE o.id = r.object_id)", k=kind)
    return found
