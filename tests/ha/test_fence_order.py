"""Fences are ordered across related paths: a grant on any path gets a greater fence than every earlier
grant on a related path (the path, an ancestor or a descendant), so an engine that has seen the fence of
a claim on /m/c refuses a late call carrying an older fence from /m/c/s (engine_calls.py,
FENCES_ORDERED_ACROSS_SCOPES; tests/engine/test_zombie_engine_calls.py). The counter is the anchor row
that related claims lock in common (lease_grant.py, alembic 0012)."""

from __future__ import annotations

from gravimeta.concurrency import paths
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.store.database import create_store_engine

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
