"""Overlapping claims raced by many processes: two grants on related paths never overlap in time,
and fences per path only grow."""

from __future__ import annotations

import json

import pytest

from gravimeta.concurrency import paths
from gravimeta.concurrency.scope_lease import UNSAFE_NAIVE_CLAIM
from tests.ha.conftest import disabled, race_together

PROCESSES = 6
SECONDS = 5.0
MIN_GRANTS = 20 * PROCESSES
# related and unrelated paths, with LIKE wildcards and the escape character in names, and case
RACE_PATHS = [
    ("/", 1), ("/m", 4), ("/m/c", 6), ("/m/c/s", 6), ("/m/c/s/t", 6), ("/m/c/s2", 6), ("/m/c2", 6),
    ("/m/c_", 6), ("/m/c_/s", 6), ("/m/cX/s", 6), ("/m/c%/s", 6), ("/m/c!/s", 6), ("/M/c", 6), ("/n/c", 4),
]


def overlapping_related_grants(grants: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of grants on related paths whose [start, end] intervals intersect (sweep by start)."""
    found, active = [], []
    for grant in sorted(grants, key=lambda g: g["start"]):
        active = [a for a in active if a["end"] >= grant["start"]]
        found += [(a, grant) for a in active if paths.related(a["path"], grant["path"])]
        active.append(grant)
    return found


def test_related_claims_are_never_granted_at_the_same_time(db_url, children, tmp_path):
    unsafe = [UNSAFE_NAIVE_CLAIM] if disabled("naive_claim") else []
    racers = [
        children("race", {
            "url": db_url, "seconds": SECONDS, "seed": i, "paths": RACE_PATHS, "unsafe": unsafe,
            "ttl_ms": 30000, "timeout_ms": 2000, "node": f"racer{i}", "out": str(tmp_path / f"racer{i}.json"),
        })
        for i in range(PROCESSES)
    ]
    race_together(racers, timeout=SECONDS + 20)
    results = [json.loads((tmp_path / f"racer{i}.json").read_text()) for i in range(PROCESSES)]
    grants = [g for r in results for g in r["grants"]]

    overlaps = overlapping_related_grants(grants)
    # The bar is what makes the race a race: with the naive claim (GRAVIMETA_HA_DISABLE=naive_claim) about one
    # grant in 40 overlaps another on SQLite (one writer at a time), one in 10 on PostgreSQL and MariaDB, so
    # 120 grants fail it. It is not a speed target: a loaded CI machine granted 90-200 in 3 s (too few on SQLite twice), so the race
    # runs 5 s; a quiet machine grants 500+ in 3 s.
    assert len(grants) >= MIN_GRANTS, f"too few grants to prove anything: {len(grants)}"
    assert not overlaps, f"{len(overlaps)} overlapping grants on related paths of {len(grants)}, e.g. {overlaps[:3]}"
    by_path: dict[str, list[dict]] = {}
    for g in sorted(grants, key=lambda g: g["start"]):
        by_path.setdefault(g["path"], []).append(g)
    for path, seq in by_path.items():
        fences = [g["fence"] for g in seq]
        assert fences == sorted(set(fences)), f"fences on {path} not strictly increasing: {fences[:20]}"
    print(f"\n{len(grants)} grants, {sum(r['busy'] for r in results)} timeouts, 0 overlaps")


@pytest.mark.parametrize("a,b,expected", [
    ("/m/c/s", "/m/c/s2", False), ("/m/c", "/m/c/s", True), ("/", "/x", True), ("/m/c_", "/m/cX/s", False),
    ("/m/c%", "/m/c%/s", True), ("/M", "/m", False), ("/m/c", "/m/c", True),
])
def test_relatedness_is_exact_on_names(a, b, expected):
    assert paths.related(a, b) is expected and paths.related(b, a) is expected
