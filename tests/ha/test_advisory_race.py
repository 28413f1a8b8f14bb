"""PG_ADVISORY and AUTO with real processes: scopes claimed at random by competing processes on one
PostgreSQL database are never held at the same time when they are related (equal, ancestor or
descendant), including, under AUTO, between an advisory claim and a lease claim.

With GRAVIMETA_HA_DISABLE=advisory_leaf_only each claim takes an exclusive advisory lock on its own
path only (no shared locks on the ancestors), and claims on an ancestor and a descendant overlap."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.conftest import require_backend
from tests.ha.conftest import disabled, race_together
from tests.ha.test_claim_race import RACE_PATHS, overlapping_related_grants
from tests.support.databases import fresh_database

PROCESSES = 4
SECONDS = 2.5  # at least; longer (up to MAX_SECONDS) until every racer has MIN_GRANTS grants
MAX_SECONDS = 15.0
MIN_GRANTS = 75
# AUTO: these catalogs count as process-local (advisory locks); every other catalog uses the lease
LOCAL_CATALOGS = ["c", "c_"]


@pytest.mark.parametrize("backend", ["PG_ADVISORY", "AUTO"])
def test_related_advisory_claims_are_never_held_at_the_same_time(backend, children, tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        racers = [
            children("race", {
                "url": url, "backend": backend, "seconds": SECONDS, "max_seconds": MAX_SECONDS,
                "min_grants": MIN_GRANTS, "seed": i, "paths": RACE_PATHS,
                "local_catalogs": LOCAL_CATALOGS, "timeout_ms": 2000, "hold_s": 0.004, "node": f"racer{i}",
                "leaf_only": disabled("advisory_leaf_only"), "out": str(tmp_path / f"racer{i}.json"),
            }, "tests.ha.advisory_child")
            for i in range(PROCESSES)
        ]
        race_together(racers, timeout=MAX_SECONDS + 20)
        for racer in racers:
            racer.stop()  # before the database is dropped
    results = [json.loads((tmp_path / f"racer{i}.json").read_text()) for i in range(PROCESSES)]
    grants = [g for r in results for g in r["grants"]]
    kinds = Counter(g["kind"] for g in grants)

    overlaps = overlapping_related_grants(grants)
    assert len(grants) >= PROCESSES * MIN_GRANTS, f"too few grants to prove anything: {len(grants)}"
    if backend == "AUTO":
        assert kinds["advisory"] >= 40 and kinds["lease"] >= 40, f"AUTO did not mix the backends: {kinds}"
    assert not overlaps, f"{len(overlaps)} overlapping grants on related paths of {len(grants)}, e.g. {overlaps[:3]}"
    print(f"\n{backend}: {len(grants)} grants {dict(kinds)}, {sum(r['busy'] for r in results)} busy, 0 overlaps")
