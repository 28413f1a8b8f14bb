"""A fence an engine has seen is never granted again after a failover, even when the grant committed
asynchronously (gravimeta/concurrency/lease_claim.py, "Durable before its fence leaves the store").

A two-member Patroni cluster in synchronous mode. The primary's WAL writer is stopped, so that an
asynchronous commit (the lease grant's) stays in the primary's memory, neither flushed nor streamed: the
few hundred milliseconds after a grant, held open. Under a claim, a barrier goes through the engine door to
a real sqlite catalog file, which records the claim's fence. Then the primary's postmaster is SIGKILLed
(with its WAL writer), the standby is promoted, and the claim is taken again on the new primary. The fence
check of the failover soak (tests/chaos/fence_check.py) must find nothing: the door made the grant durable
before the barrier, so the new primary has it and its next grant is above the fence the engine saw.

GRAVIMETA_HA_DISABLE=durable_fence (the door does not make the grant durable) fails it: the new primary
lacks the grant and hands the same fence out again, and the check reports it."""

from __future__ import annotations

import os
import signal

import pytest
from sqlalchemy import delete, event, select

from connectors.base import CatalogContext
from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.app import build_services
from gravimeta.cluster import migrate
from gravimeta.concurrency.coordinator import Coordinator, current_claim
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.concurrency.tables import scope_lease
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.config import load_settings
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.engine_keys import identity_key
from gravimeta.entities import Catalog, Column, Metalake, NameIdentifier, Schema, Table
from gravimeta.store.database import create_store_engine
from gravimeta.store.entity_store import EntityStore
from tests.chaos.engine_check import sqlite_root
from tests.chaos.fence_check import EngineFile, FenceWatch, install
from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.patroni import patroni_cluster


@pytest.mark.patroni
@pytest.mark.slow
def test_a_fence_an_engine_saw_is_not_granted_again_after_a_failover(tmp_path):
    catalog = CatalogContext("m", "c", {"path": "c.db"})
    watch = FenceWatch(lambda: [EngineFile("sqlite catalog c", "sqlite", tmp_path / "c.db")])
    with patroni_cluster(members=2, synchronous=True) as pg, sqlite_root(tmp_path):
        migrate(pg.url())
        engine = create_store_engine(pg.url())
        store = EntityStore(engine)
        store.create_metalake(Metalake("m"), "test")
        store.create_catalog(Catalog("m", "c", "relational", "sqlite", properties=dict(catalog.properties)), "test")
        install(engine)
        connector = ConnectorRegistry().get("sqlite")(catalog)
        connector.prepare_engine()
        lease = LeaseBackend(engine, "n", ttl_ms=2000, timeout_ms=3000)  # its rows expire soon after the kill
        old = pg.wait_primary()
        walwriter = int(pg.psql(old, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'",
                                database="postgres"))
        os.kill(walwriter, signal.SIGSTOP)  # asynchronous commits now stay in the primary's memory
        try:
            with Coordinator(TreeLock(), lease).structural(NameIdentifier.of("m", "c")):
                claim = current_claim()
                assert claim is not None and claim.fence is not None
                with store.snapshot() as s:
                    key = identity_key(store, s, "/m/c")
                engine_door.barrier(connector, key)  # the engine records the claim's fence
            watch.sample()
            pg.kill_postmaster(old)
        finally:
            os.kill(walwriter, signal.SIGKILL)  # killed with its postmaster: it flushes nothing more
            lease.heartbeat.stop()
            engine.dispose()
        pg.wait_primary(timeout=60, other_than=old.name)

        engine = create_store_engine(pg.url())
        lease = LeaseBackend(engine, "n2", ttl_ms=5000, timeout_ms=15000)  # waits out the old row if it survived
        try:
            again = lease.claim_path("/m/c")
            again.release()
            report = watch.check(engine)
        finally:
            lease.heartbeat.stop()
            engine.dispose()
    assert report.keys == 1 and report.grants >= 1, report.summary()
    assert report.problems == [], report.problems
    assert again.fence > claim.fence, f"fence {claim.fence}, seen by the engine, was granted again after the failover"


def test_a_grant_is_made_durable_once_and_a_lost_claim_sends_nothing(tmp_path):
    """PostgreSQL: an asynchronously committed grant is made durable by one write on its row (the row
    otherwise unchanged), not again afterwards; a guarded store transaction makes it durable on its own;
    a claim whose row is gone is lost, and StaleFence says nothing was sent."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url)
        store = EntityStore(engine)
        lease = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=2000)
        try:
            claim = lease.claim_path("/m/c")
            assert not claim.durable
            before = _row(engine, "/m/c")
            claim.make_durable()
            assert claim.durable and _row(engine, "/m/c") == before
            claim.release()

            guarded = lease.claim_path("/m/c")
            store.write(lambda s: guarded.fence_guard()(s))
            assert guarded.durable
            guarded.release()

            lost = lease.claim_path("/m/c")
            with engine.begin() as conn:
                conn.execute(delete(scope_lease).where(scope_lease.c.scope_path == "/m/c"))
            with pytest.raises(errors.StaleFence, match="nothing was sent"):
                lost.make_durable()
            assert lost.lost and not lost.trusted()
        finally:
            lease.heartbeat.stop()
            engine.dispose()


def _row(engine, path: str):
    with engine.connect() as conn:
        return conn.execute(select(scope_lease).where(scope_lease.c.scope_path == path)).one()


DURABLE_WRITE = "UPDATE gm_scope_lease SET updated_at=gm_scope_lease.updated_at"


def test_only_a_fence_sent_before_any_durable_commit_costs_a_durable_write(tmp_path):
    """LEASE_TABLE on PostgreSQL: a memory catalog's changes (made in the store's own transaction, no fence
    sent) and a sqlite catalog's journalled ones (the intent's commit made the grant durable) add no
    durable write; an import's barrier, the first fence sent under its claim, adds one."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url, sqlite_root(tmp_path):
        settings = load_settings(environ={}, store_url=url, distributed_lock_enabled=True,
                                 distributed_lock_backend="LEASE_TABLE")
        services = build_services(settings)
        d, engine = services.dispatchers, services.store.engine
        writes: list[str] = []

        def on_execute(_conn, _cursor, statement: str, *_args) -> None:
            if statement.startswith(DURABLE_WRITE):
                writes.append(statement)

        event.listen(engine, "before_cursor_execute", on_execute)
        try:
            d.metalakes.create(Metalake("m"), "u")
            for name, provider, properties in (("mem", "memory", {}), ("lite", "sqlite", {"path": "lite.db"})):
                d.catalogs.create(Catalog("m", name, "relational", provider, properties=properties), "u")
                d.schemas.create("m", name, Schema("s"), "u")
                d.tables.create("m", name, "s", Table("t", [Column("id", "integer")]), "u")
                d.tables.drop("m", name, "s", "t")
            assert writes == []
            ConnectorRegistry().get("sqlite")(CatalogContext("m", "lite", {"path": "lite.db"})).create_table(
                "s", Table("e", [Column("id", "integer")]))  # made in the engine alone
            assert d.tables.load("m", "lite", "s", "e").name == "e"  # imported, behind a barrier
            assert len(writes) == 1, writes
        finally:
            event.remove(engine, "before_cursor_execute", on_execute)
            services.coordinator.runtime.heartbeat.stop()  # type: ignore[union-attr]
            engine.dispose()
