"""The failover soak's fence check (tests/chaos/fence_check.py) against a real PostgreSQL and real engine
records (a sqlite catalog file's fence table, the hive stub's metastore file): quiet while the anchor
counters only grow, also across metalakes whose counters differ; once an anchor counter is put back, as a
failover to a standby that lacks the last bump leaves it, it reports the counter, and then the grant that
hands out again the fence the engines accepted, naming its holder."""

from __future__ import annotations

import sqlite3

from sqlalchemy import text

from connectors.fencing import Fence
from connectors.hive_stub.storage import Metastore
from connectors.sqlite import fences
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.dispatch.engine_keys import identity_key
from gravimeta.entities import Catalog, Metalake
from gravimeta.store.database import create_store_engine
from gravimeta.store.entity_store import EntityStore
from tests.chaos.fence_check import EngineFile, FenceWatch, install
from tests.conftest import require_backend
from tests.support.databases import fresh_database


def test_the_fence_check_reports_a_fence_granted_again_after_its_counter_went_back(tmp_path):
    require_backend("postgresql")
    catalog_file, hive_dir = tmp_path / "catalog.db", tmp_path / "hive"
    hive = Metastore(hive_dir)
    watch = FenceWatch(lambda: [EngineFile("sqlite", "sqlite", catalog_file),
                                EngineFile("hive", "hive", hive.file)])
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url)
        store = EntityStore(engine)
        lease = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=2000)
        try:
            for metalake, catalog in (("m", "c"), ("m2", "c2")):
                store.create_metalake(Metalake(metalake), "test")
                store.create_catalog(Catalog(metalake, catalog, "relational", "memory"), "test")
            install(engine)

            def accepted(path: str) -> tuple[int, str]:
                """Claim `path`, have both engines accept the claim's fence on its catalog's key, release."""
                claim = lease.claim_path(path)
                with store.snapshot() as s:
                    key = identity_key(store, s, path)
                conn = sqlite3.connect(catalog_file, isolation_level=None)
                try:
                    conn.execute(fences.CREATE)
                    conn.execute("BEGIN IMMEDIATE")
                    fences.check_and_record(conn, Fence(key, claim.fence, True), "c")
                    conn.execute("COMMIT")
                finally:
                    conn.close()
                hive.fence(Fence(key, claim.fence, True))
                claim.release()
                watch.sample()
                return claim.fence, key

            for _ in range(3):
                top, key = accepted("/m/c")
            low, _ = accepted("/m2/c2")  # another metalake counts on: its fences lie below m's, rightly
            assert low < top
            report = watch.check(engine)
            assert report.problems == [], report.problems
            assert (report.keys, report.grants) == (4, 4), report.summary()

            with engine.begin() as conn:  # what a standby without the last bump of /m would hold
                conn.execute(text("UPDATE gm_claim_anchor SET fence = :f WHERE anchor = '/m'"), {"f": top - 1})
            report = watch.check(engine)
            assert len(report.problems) == 2, report.problems  # one per engine
            assert f"stand at {top - 1}, below fence {top}" in report.problems[0], report.problems

            again = lease.claim_path("/m/c")
            again.release()
            assert again.fence == top
            report = watch.check(engine)
            assert len(report.problems) == 1, report.problems  # the grant, named once; the counter is back at top
            assert f"fence {top} granted on /m/c to {again.holder}" in report.problems[0], report.problems
            assert f"had accepted fence {top} on {key}" in report.problems[0], report.problems
            assert report.problems[0].endswith("re-issued"), report.problems
        finally:
            lease.heartbeat.stop()
            engine.dispose()
