"""Fences are ordered across related paths: a grant on any path gets a greater fence than every earlier
grant on a related path (the path, an ancestor or a descendant), so an engine that has seen the fence of
a claim on /m/c refuses a late call carrying an older fence from /m/c/s (engine_calls.py,
FENCES_ORDERED_ACROSS_SCOPES; tests/engine/test_zombie_engine_calls.py). The counter is the anchor row
that related claims lock in common (lease_grant.py, alembic 0012)."""

from __future__ import annotations

from gravimeta.concurrency import paths
from gravimeta.concurrency.pg_advisory import AdvisoryBackend, lock_plan
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.entities import ROOT
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.support.databases import fresh_database

# descendants first and ancestors after, the root among them, another metalake in between
SEQUENCE = ["/m/c/s", "/m/c/s", "/m/c", "/m/c/s/t", "/m2/c", "/m2/c", "/m", "/m/c/s", "/", "/m2", "/m/c/s/t"]


def test_a_later_grant_on_a_related_path_gets_a_greater_fence(db_url):
    engine = create_store_engine(db_url)
    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=2000)
    granted: list[tuple[str, int]] = []
    try:
        for path in SEQUENCE:
            claim = claims.claim_path(path)
            for earlier, fence in granted:
                if paths.related(earlier, path):
                    assert claim.fence > fence, f"{path} got fence {claim.fence} after {earlier} had {fence}"
            granted.append((path, claim.fence))
            claim.release()
    finally:
        claims.heartbeat.stop()
        engine.dispose()


def test_after_an_advisory_root_claim_every_grant_exceeds_the_earlier_ones_of_any_metalake(tmp_path):
    """PostgreSQL, AUTO: a metalake rename takes an advisory claim on the root, and moves the metalake's
    catalogs from the anchor of its old name to that of its new one. A grant under the new name must
    still exceed every grant before the rename, whichever anchor counted it (pg_advisory.py, _ROOT_FENCE).
    GRAVIMETA_HA_DISABLE=root_fence: `/n/c got fence 1 after /m/c had 3`."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url)
        lease = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=2000, advisory_plan=lock_plan)
        try:
            fences = []
            for _ in range(3):
                claim = lease.claim_path("/m/c")
                fences.append(claim.fence)
                claim.release()
            root = AdvisoryBackend(engine, 2000).claim(ROOT)
            root.commit()
            root.release()
            claim = lease.claim_path("/n/c")
            assert claim.fence > max(fences), f"/n/c got fence {claim.fence} after /m/c had {max(fences)}"
            claim.release()
        finally:
            lease.heartbeat.stop()
            engine.dispose()
