"""Child process for test_lease_interleavings.py: `python -m tests.ha.lease_child <mode> '<json config>'`.

One lease-backend process (its own engine, no automatic heartbeat: the test says when to renew), with
failpoints switched on for its tag (cfg['fp_dir'], cfg['tag']). Protocol as in child.py: one status line
per step, "go" on stdin where the test decides when the next step runs.

  hold   claim cfg['path']: CLAIMED <fence>; on "go" renew once, cfg['renew_before_ms'] before the
         claim's local deadline (the renewal UPDATE then runs just before the lease expires): RENEWED or
         LOST; on "go" run the fence guard in a store transaction: GUARD OK or FENCELOST <message>
  claim  claim cfg['path'] (timeout cfg['timeout_ms']): CLAIMED <fence> or BUSY; if claimed, run the
         fence guard at once: GUARD OK or FENCELOST <message>; then wait for "go" (the claim stays held).
         With cfg['ready_first']: READY first, and the claim starts on "go" (no process start-up in between)
"""

from __future__ import annotations

import json
import sys
import time

from gravimeta import errors, failpoints
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.lease_claim import LeaseClaim
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.store.database import create_store_engine, write_session
from tests.ha.child import say, wait_for_go


def backend(cfg: dict) -> LeaseBackend:
    failpoints.configure(cfg["fp_dir"], cfg["tag"])
    engine = create_store_engine(cfg["url"])
    return LeaseBackend(engine, cfg["tag"], ttl_ms=cfg["ttl_ms"], timeout_ms=cfg.get("timeout_ms", 5000),
                        heartbeat=Heartbeat(3600))


def guard(claims: LeaseBackend, claim: LeaseClaim) -> None:
    try:
        with write_session(claims.engine) as session:
            claim.fence_guard()(session)
    except errors.FenceLost as exc:
        say(f"FENCELOST {exc}")
        return
    say("GUARD OK")


def hold(cfg: dict) -> None:
    claims = backend(cfg)
    claim = claims.claim_path(cfg["path"])
    say(f"CLAIMED {claim.fence}")
    wait_for_go()
    time.sleep(max(0.0, claim.deadline - cfg["renew_before_ms"] / 1000 - time.monotonic()))
    claims.renew_all()
    say("LOST" if claim.lost else "RENEWED")
    wait_for_go()
    guard(claims, claim)
    wait_for_go()


def claim(cfg: dict) -> None:
    claims = backend(cfg)
    if cfg.get("ready_first"):
        say("READY")
        wait_for_go()
    try:
        claim = claims.claim_path(cfg["path"])
    except errors.ScopeBusy:
        say("BUSY")
    else:
        say(f"CLAIMED {claim.fence}")
        guard(claims, claim)
    wait_for_go()


if __name__ == "__main__":
    {"hold": hold, "claim": claim}[sys.argv[1]](json.loads(sys.argv[2]))
