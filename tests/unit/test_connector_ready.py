"""ConnectorCache inside a store write transaction: no new connector whose engine keeps state outside the
process is made there (its hook asks the engine who it is and delivers retirements), only outside."""

from __future__ import annotations

import pytest

from connectors.registry import ConnectorRegistry
from gravimeta.dispatch.connector_cache import ConnectorCache, ConnectorNotReady
from gravimeta.entities import Audit, Catalog
from gravimeta.store.database import writing


def catalog(provider: str, properties: dict[str, str]) -> Catalog:
    return Catalog("m", "c", "relational", provider, None, properties, audit=Audit("u", "2026-01-01T00:00:00Z"), id=7)


def test_a_hive_connector_is_made_outside_the_transaction_and_then_handed_out_inside():
    asked: list[str] = []
    cache = ConnectorCache(ConnectorRegistry(), lambda connector, cat: asked.append(cat.name) or 0)
    hive = catalog("hive", {"metastore.uris": "http://127.0.0.1:1"})
    with writing():
        with pytest.raises(ConnectorNotReady):
            cache.ready(hive)
        with pytest.raises(AssertionError, match="inside a store write transaction"):
            cache.for_catalog(hive)
    assert asked == []
    made = cache.for_catalog(hive)  # outside: the hook runs
    assert asked == ["c"]
    with writing():
        assert cache.ready(hive) is made


def test_a_process_local_connector_is_made_inside_the_transaction():
    cache = ConnectorCache(ConnectorRegistry(), lambda connector, cat: None)
    with writing():
        assert cache.ready(catalog("memory", {})).process_local


def test_a_cached_connector_that_has_not_seen_the_newest_retirement_looks_again_outside_the_transaction():
    high = [3]
    looked: list[int] = []

    def before_use(connector, cat) -> int:
        looked.append(high[0])
        return high[0]

    cache = ConnectorCache(ConnectorRegistry(), before_use, lambda session: high[0])
    hive = catalog("hive", {"metastore.uris": "http://127.0.0.1:1"})
    made = cache.for_catalog(hive)
    assert cache.for_catalog(hive) is made and looked == [3]  # nothing new: not again
    high[0] = 5  # a retirement recorded since
    with writing(), pytest.raises(ConnectorNotReady):
        cache.ready(hive)
    assert cache.for_catalog(hive) is made and looked == [3, 5]
    with writing():
        assert cache.ready(hive) is made
