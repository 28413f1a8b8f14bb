"""Flag off means today's behaviour: no claim backend, no lease rows, and every operation issues
exactly the statements the foundation composition (TreeLock only) issues."""

from __future__ import annotations

import threading
from collections import Counter

from sqlalchemy import Engine, event, func, select

from connectors.registry import ConnectorRegistry
from gravimeta.app import build_services
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tables import claim_anchor, node, scope_fence, scope_lease
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.config import load_settings
from gravimeta.dispatch import Dispatchers
from gravimeta.dispatch.catalogs import CatalogDispatcher
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.metalakes import MetalakeDispatcher
from gravimeta.dispatch.partitions import PartitionDispatcher
from gravimeta.dispatch.schemas import SchemaDispatcher
from gravimeta.dispatch.statistics import StatisticDispatcher
from gravimeta.dispatch.tables import TableDispatcher
from gravimeta.dispatch.tags import TagDispatcher
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.ha.conftest import disabled


def workload(d: Dispatchers, m: str) -> list[tuple[str, object]]:
    return [
        ("create metalake", lambda: d.metalakes.create(Metalake(m), "u")),
        ("create catalog", lambda: d.catalogs.create(Catalog(m, "c", "relational", "memory"), "u")),
        ("create schema", lambda: d.schemas.create(m, "c", Schema("s"), "u")),
        ("create table", lambda: d.tables.create(m, "c", "s", Table("t", [Column("id", "integer")]), "u")),
        ("load table", lambda: d.tables.load(m, "c", "s", "t")),
        ("drop table", lambda: d.tables.drop(m, "c", "s", "t")),
        ("drop schema", lambda: d.schemas.drop(m, "c", "s", cascade=False)),
        ("drop catalog", lambda: d.catalogs.drop(m, "c", force=True)),
        ("drop metalake", lambda: d.metalakes.drop(m, force=True)),
    ]


def count_statements(engine: Engine, d: Dispatchers, m: str) -> Counter[str]:
    """Statements each operation sends, counted on this thread only (background heartbeats excluded)."""
    me, current, counts = threading.get_ident(), [""], Counter[str]()

    def on_execute(*_args: object) -> None:
        if threading.get_ident() == me:
            counts[current[0]] += 1

    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        for name, op in workload(d, m):
            current[0] = name
            op()  # type: ignore[operator]
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
    return counts


def foundation(engine: Engine) -> Dispatchers:
    """The composition before the distributed lock existed: TreeLock only."""
    store, coordinator = EntityStore(engine), Coordinator(TreeLock())
    connectors = ConnectorCache(ConnectorRegistry())
    return Dispatchers(*(cls(store, coordinator, connectors) for cls in
                         (MetalakeDispatcher, CatalogDispatcher, SchemaDispatcher, TableDispatcher,
                          PartitionDispatcher)),
                       statistics=StatisticDispatcher(store, coordinator), tags=TagDispatcher(store, coordinator))


def test_flag_off_issues_the_same_statements_as_the_foundation_and_writes_no_claims(db_url):
    plain_engine = create_store_engine(db_url)
    baseline = count_statements(plain_engine, foundation(plain_engine), "plain")

    settings = load_settings(environ={}, store_url=db_url)
    assert settings.distributed_lock_enabled is False  # the default
    if disabled("flag_gate"):
        settings.distributed_lock_enabled = True
    services = build_services(settings)
    flag_off = count_statements(services.store.engine, services.dispatchers, "off")

    assert flag_off == baseline, f"flag off changed the statements per operation: {flag_off} vs {baseline}"
    assert services.coordinator.claims is None
    with plain_engine.connect() as conn:
        for table in (scope_lease, scope_fence, claim_anchor):
            assert conn.scalar(select(func.count()).select_from(table)) == 0, f"{table.name} was written"
        nodes = conn.execute(select(node.c.lock_enabled, node.c.backend)).all()
    assert [(bool(r.lock_enabled), r.backend) for r in nodes] == [(False, "NONE")]
    services.coordinator.runtime.heartbeat.stop()  # type: ignore[union-attr]
    services.store.engine.dispose()
    plain_engine.dispose()
