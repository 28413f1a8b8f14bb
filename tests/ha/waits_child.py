"""Child processes for test_bounded_waits.py: `python -m tests.ha.waits_child <mode> '<json config>'`.
Protocol as in child.py: one status line per step, "go" on stdin where the test holds a child.

  stall   claims cfg['path'] with no heartbeat (its lease expires after cfg['ttl_ms']), opens a store
          write transaction, runs its fence guard (its claim row is now locked) and stalls there, as a
          holder that passed its guard and froze would: LOCKED, then waits for "go"
  worker  a worker's cross-node layer wired as the server wires it (bootstrap.start_distributed_lock:
          one heartbeat with renewals, reclaimer and node registry); claims cfg['path'] and keeps it;
          answers "status" with TRUSTED or LOST
"""

from __future__ import annotations

import json
import sys

from gravimeta.concurrency.bootstrap import start_distributed_lock
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.config import load_settings
from gravimeta.store.database import create_store_engine, write_session
from tests.ha.child import say, wait_for_go


def stall(cfg: dict) -> None:
    engine = create_store_engine(cfg["url"])
    claims = LeaseBackend(engine, "stalled", ttl_ms=cfg["ttl_ms"], timeout_ms=5000, heartbeat=Heartbeat(3600))
    claim = claims.claim_path(cfg["path"])
    with write_session(engine) as session:
        claim.fence_guard()(session)
        say("LOCKED")
        wait_for_go()
    say("DONE")


def worker(cfg: dict) -> None:
    settings = load_settings(environ={
        "GRAVIMETA_STORE_URL": cfg["url"], "GRAVIMETA_DISTRIBUTED_LOCK": "true",
        "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE", "GRAVIMETA_LEASE_TTL_MS": str(cfg["ttl_ms"]),
        "GRAVIMETA_NODE_ID": "worker",
    })
    engine = create_store_engine(cfg["url"])
    lock = start_distributed_lock(settings, engine)
    claim = lock.claims.claim_path(cfg["path"])  # type: ignore[union-attr]
    say("CLAIMED")
    for line in sys.stdin:
        if line.strip() == "status":
            say("TRUSTED" if claim.trusted() else "LOST")


if __name__ == "__main__":
    {"stall": stall, "worker": worker}[sys.argv[1]](json.loads(sys.argv[2]))
