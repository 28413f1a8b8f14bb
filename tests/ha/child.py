"""Child processes for the HA tests: `python -m tests.ha.child <mode> '<json config>'`.

Each child is a separate OS process with its own engine, heartbeat thread and claims, talking to the
shared database exactly as a replica's worker does. Protocol on stdio: the child prints one status line
per step (READY, CLAIMED <fence>, COMMITTED, FENCELOST <message>, ...) and waits for "go" on stdin where
the test needs to pause it at a precise point.
"""

from __future__ import annotations

import json
import random
import sys
import time

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.entities import NameIdentifier, Schema
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine


def say(line: str) -> None:
    print(line, flush=True)


def wait_for_go() -> None:
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("expected 'go'")


def backend(cfg: dict, engine) -> LeaseBackend:  # type: ignore[no-untyped-def]
    heartbeat = Heartbeat(3600) if cfg.get("no_heartbeat") else None
    return LeaseBackend(
        engine, cfg.get("node", "child"), ttl_ms=cfg.get("ttl_ms", 5000), timeout_ms=cfg.get("timeout_ms", 5000),
        heartbeat=heartbeat, unsafe=cfg.get("unsafe", ()),
    )


def race(cfg: dict) -> None:
    """Claim random related paths for cfg['seconds']; write every grant interval to cfg['out']."""
    engine = create_store_engine(cfg["url"])
    claims = backend(cfg, engine)
    rng = random.Random(cfg["seed"])
    paths, weights = zip(*cfg["paths"], strict=True)
    say("READY")
    wait_for_go()
    grants, busy = [], 0
    end = time.monotonic() + cfg["seconds"]
    while time.monotonic() < end:
        path = rng.choices(paths, weights)[0]
        try:
            claim = claims.claim_path(path)
        except errors.ScopeBusy:
            busy += 1
            continue
        start = time.monotonic()
        time.sleep(rng.uniform(0, cfg.get("hold_s", 0.002)))
        grants.append({"path": path, "fence": claim.fence, "start": start, "end": time.monotonic()})
        claim.release()
    with open(cfg["out"], "w") as out:
        json.dump({"grants": grants, "busy": busy}, out)
    say("DONE")


def create_schema(cfg: dict) -> None:
    """Structural op through the coordinator: claim /m/c, create schema cfg['schema'] behind the fence."""
    engine = create_store_engine(cfg["url"])
    store = EntityStore(engine)
    coordinator = Coordinator(TreeLock(), backend(cfg, engine))
    m, c = cfg["scope"]
    try:
        with coordinator.structural(NameIdentifier.of(m, c)):
            say(f"CLAIMED {current_fence(coordinator)}")
            if cfg.get("pause"):
                wait_for_go()
            store.create_schema(m, c, Schema(cfg["schema"]), "child")
        say("COMMITTED")
    except errors.FenceLost as exc:
        say(f"FENCELOST {exc.message}")


def current_fence(coordinator: Coordinator) -> int:
    claims = coordinator.claims.live_claims()  # type: ignore[union-attr]
    return claims[-1].fence


def hold(cfg: dict) -> None:
    """Claim cfg['path'] and keep it (renewed) until told to go, then release it."""
    engine = create_store_engine(cfg["url"])
    claim = backend(cfg, engine).claim_path(cfg["path"])
    say(f"CLAIMED {claim.fence}")
    wait_for_go()
    claim.release()
    say("RELEASED")


if __name__ == "__main__":
    {"race": race, "create_schema": create_schema, "hold": hold}[sys.argv[1]](json.loads(sys.argv[2]))
