"""Fixtures for EntityStore tests: a store on a fresh migrated database of each backend."""

from __future__ import annotations

import pytest

from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.store.race_workers import RacePool
from tests.store.tree import Tree

RACE_WORKERS = 5


@pytest.fixture
def store(db_url):
    engine = create_store_engine(db_url)
    yield EntityStore(engine)
    engine.dispose()


@pytest.fixture
def tree(store, unique) -> Tree:
    """A metalake, catalog and schema with unique names, created in `store`."""
    return Tree.create(store, unique)


@pytest.fixture(scope="session")
def _race_pools():
    pools: list[RacePool] = []
    yield pools
    for pool in pools:
        pool.close()


@pytest.fixture
def race_pool(_race_pools) -> RacePool:
    """Worker processes for race tests, shared by the session (replaced if a test broke one)."""
    if not _race_pools or _race_pools[-1].broken:
        _race_pools.append(RacePool(RACE_WORKERS))
    return _race_pools[-1]
