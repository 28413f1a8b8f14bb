"""Revision 0010 (tags, statistics, store-kept partitions) upgrades a database that has data, and its
downgrade removes exactly its tables, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text

from gravimeta.entities import Catalog, Metalake
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import current_revision, head_revision, upgrade
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, downgrade, fresh_database

TABLES = {"gm_tag", "gm_tag_relation", "gm_table_statistic", "gm_partition_statistic", "gm_partition"}


@pytest.fixture(params=BACKENDS)
def engine(request, tmp_path):
    require_backend(request.param)
    with fresh_database(request.param, tmp_path, migrate=False) as url:
        engine = create_store_engine(url)
        yield engine
        engine.dispose()


def test_0010_adds_its_tables_to_a_database_with_data_and_its_downgrade_removes_them(engine):
    upgrade(engine, "0009")
    store = EntityStore(engine)
    store.commits.enabled = False  # revision 0009 has no write markers (0014)
    store.create_metalake(Metalake("kept"), "tester")
    store.create_catalog(Catalog("kept", "c", "relational", "memory"), "tester")

    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert TABLES <= set(inspect(engine).get_table_names())
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_tag (metalake_id, name, properties, version) "
                          "SELECT id, 'pii', '{}', 1 FROM gm_metalake WHERE name = 'kept'"))
        # names are case-sensitive: 'pii' and 'PII' are two tags
        conn.execute(text("INSERT INTO gm_tag (metalake_id, name, properties, version) "
                          "SELECT id, 'PII', '{}', 1 FROM gm_metalake WHERE name = 'kept'"))
    assert [c.name for c in store.list_catalogs("kept")] == ["c"]

    downgrade(engine, "0009")
    assert current_revision(engine) == "0009"
    assert not TABLES & set(inspect(engine).get_table_names())
    assert [c.name for c in store.list_catalogs("kept")] == ["c"]
    upgrade(engine)
    assert current_revision(engine) == head_revision()
