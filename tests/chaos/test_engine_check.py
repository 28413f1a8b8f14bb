"""The soak's final engine check (tests/chaos/engine_check.py) without servers: it reads a real sqlite
catalog's files through the connector, and every kind of difference from the store is reported."""

from __future__ import annotations

from connectors.base import CatalogContext
from connectors.registry import ConnectorRegistry
from gravimeta.entities import Column, Schema, Table
from tests.chaos.engine_check import EngineCatalog, differences, engine_tree, sqlite_root

CAT = EngineCatalog("MA.sqlite", "ma", "c1", "sqlite", {"path": "soak/MA.sqlite.db"})


def test_the_engine_is_read_from_the_sqlite_catalog_files(tmp_path):
    with sqlite_root(tmp_path):
        connector = ConnectorRegistry().get("sqlite")(CatalogContext("ma", "c1", dict(CAT.properties)))
        connector.prepare_engine()
        connector.create_schema(Schema("s0"))
        connector.create_schema(Schema("s1"))
        connector.create_table("s0", Table("t0", [Column("id", "integer")]))
        assert engine_tree(ConnectorRegistry(), CAT) == {"s0": {"t0"}, "s1": set()}


def test_every_difference_between_store_and_engine_is_reported():
    store = {"s0": {"t0", "t1"}, "s1": set(), "s2": {"t9"}}
    engine = {"s0": {"t0", "e0"}, "s2": {"t9"}, "x0": {"e1"}}
    found = {(d.schema, d.table, d.only_in) for d in differences(CAT, store, engine)}
    assert found == {("s0", "t1", "store"), ("s0", "e0", "engine"), ("s1", None, "store"), ("x0", None, "engine")}
    assert all(d.text.startswith("MA.sqlite (sqlite, now ma.c1): ") for d in differences(CAT, store, engine))
    assert differences(CAT, store, {k: set(v) for k, v in store.items()}) == []
