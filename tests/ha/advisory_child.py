"""Child process for test_advisory_race.py: `python -m tests.ha.advisory_child race '<json config>'`.

Claims random related scopes through the PG_ADVISORY backend (or AUTO, which sends catalogs named in
cfg['local_catalogs'] to advisory locks and the others to the lease table) exactly as an operation
does: an advisory claim is granted with its transaction open and its locks held, and ends at release;
a lease claim is followed by a store write transaction that runs its guard first. A grant interval
starts once the claim (and, for a lease, its guard) has passed and ends before the commit or release,
so it lies inside the time the claim really protects. Protocol as in child.py: READY, wait for "go", DONE.

cfg['leaf_only'] (for GRAVIMETA_HA_DISABLE=advisory_leaf_only) replaces the lock plan with an exclusive
lock on the scope's own key only, so the hierarchy is no longer encoded.
"""

from __future__ import annotations

import json
import random
import sys
import time

from gravimeta import errors
from gravimeta.concurrency import pg_advisory
from gravimeta.concurrency.pg_advisory import AdvisoryBackend, AutoBackend, lock_plan
from gravimeta.concurrency.scope_lease import LeaseBackend, LeaseClaim
from gravimeta.entities import NameIdentifier
from gravimeta.store.database import create_store_engine, write_session
from tests.ha.child import say, wait_for_go


def scope_of(path: str) -> NameIdentifier:
    return NameIdentifier(tuple(path.strip("/").split("/")) if path != "/" else ())


def leaf_only_plan(path: str) -> list[tuple[int, bool]]:
    return [(pg_advisory.advisory_key(path), True)]


def hold(grants: list, path: str, kind: str, rng: random.Random, cfg: dict) -> None:
    start = time.monotonic()
    time.sleep(rng.uniform(0, cfg["hold_s"]))
    grants.append({"path": path, "kind": kind, "start": start, "end": time.monotonic()})


def race(cfg: dict) -> None:
    if cfg.get("leaf_only"):
        pg_advisory.lock_plan = leaf_only_plan  # the mechanism switched off, in this process only
    engine = create_store_engine(cfg["url"])
    advisory = AdvisoryBackend(engine, cfg["timeout_ms"])
    claims: AdvisoryBackend | AutoBackend = advisory
    if cfg["backend"] == "AUTO":
        lease = LeaseBackend(engine, cfg["node"], ttl_ms=30000, timeout_ms=cfg["timeout_ms"],
                             advisory_plan=lock_plan)
        local = set(cfg["local_catalogs"])
        claims = AutoBackend(advisory, lease, lambda m, c: c in local)
    rng = random.Random(cfg["seed"])
    paths, weights = zip(*cfg["paths"], strict=True)
    say("READY")
    wait_for_go()
    grants, busy = [], 0
    began = time.monotonic()
    while True:  # at least cfg['seconds'] and cfg['min_grants'] grants, never past cfg['max_seconds']
        elapsed = time.monotonic() - began
        if elapsed >= cfg["max_seconds"] or (elapsed >= cfg["seconds"] and len(grants) >= cfg["min_grants"]):
            break
        path = rng.choices(paths, weights)[0]
        try:
            claim = claims.claim(scope_of(path))
        except errors.ScopeBusy:  # the lease half of AUTO waits in claim()
            busy += 1
            continue
        kind = "lease" if isinstance(claim, LeaseClaim) else "advisory"
        try:
            if isinstance(claim, LeaseClaim):
                with write_session(engine) as session:
                    claim.fence_guard()(session)
                    hold(grants, path, kind, rng, cfg)
            else:  # the claim's own transaction holds the locks from claim() to release()
                hold(grants, path, kind, rng, cfg)
        except errors.ScopeBusy:
            busy += 1
        finally:
            claim.release()
    with open(cfg["out"], "w") as out:
        json.dump({"grants": grants, "busy": busy}, out)
    say("DONE")


if __name__ == "__main__":
    {"race": race}[sys.argv[1]](json.loads(sys.argv[2]))
