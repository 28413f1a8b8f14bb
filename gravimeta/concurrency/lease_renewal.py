"""Renewal of the lease backend's claims: the claims this process holds, and renew_all.

The holder renews its claims every TTL/3 from the heartbeat thread: one `UPDATE ... SET lease_expires_at
= now + TTL WHERE path, holder, fence match AND lease_expires_at > now` per claim. A claim renewed
moves its local deadline to (start of this renewal + TTL); one that matched no row is lost. Renewals
run in the heartbeat's own lane (heartbeat.RENEWALS), so no reclaim or node-registry write delays them,
and each waits on a row lock for a bounded time (gravimeta/store/lock_waits.py).

Renewal takes no anchor: the row lock of its UPDATE orders it with every claim that could steal the row.
A claimant that found the row committed expired re-reads it FOR UPDATE before it steals, so it waits for
a renewal in flight and then sees the row live (lease_grant.py, "A steal racing a renewal"); a renewal that
comes after the claimant's locking read finds no unexpired row, and the claim is lost.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from sqlalchemy import Engine, update

from gravimeta import failpoints
from gravimeta.concurrency import metrics
from gravimeta.concurrency.db_clock import db_now, db_now_plus
from gravimeta.concurrency.lease_claim import LeaseClaim
from gravimeta.concurrency.tables import scope_lease
from gravimeta.store import lock_waits

log = logging.getLogger(__name__)


class ClaimRenewal:
    """The claims of this process (mixed into LeaseBackend) and their renewal (a heartbeat task)."""

    engine: Engine
    dialect: str
    ttl_ms: int
    _claims: dict[str, LeaseClaim]
    _claims_lock: threading.Lock
    _claims_pid: int

    def _track(self, claim: LeaseClaim) -> None:
        with self._claims_lock:
            if self._claims_pid != os.getpid():  # forked: the parent's claims are not ours to renew
                self._claims, self._claims_pid = {}, os.getpid()
            self._claims[claim.holder] = claim
        metrics.active_claims.inc()

    def _untrack(self, claim: LeaseClaim) -> None:
        with self._claims_lock:
            if self._claims.pop(claim.holder, None) is not None:
                metrics.active_claims.dec()

    def live_claims(self) -> list[LeaseClaim]:
        with self._claims_lock:
            return list(self._claims.values())

    def renew_all(self) -> None:
        """Extend every live claim of this process by TTL (heartbeat task)."""
        for claim in self.live_claims():
            if claim.released or not claim.trusted():
                continue
            started = time.monotonic()
            # a renewal waits for a row lock (its own holder's guard, a stealer) at most a sixth of the TTL,
            # and never past the claim's deadline: the renewals of the other claims come next
            wait_s = min(claim.time_left(), self.ttl_ms / 6000)
            try:
                with self.engine.begin() as conn:
                    renewed = conn.execute(lock_waits.bounded(update(scope_lease).where(
                        scope_lease.c.scope_path == claim.path,
                        scope_lease.c.holder_id == claim.holder,
                        scope_lease.c.fence == claim.fence,
                        scope_lease.c.lease_expires_at > db_now(self.dialect),
                    ).values(
                        lease_expires_at=db_now_plus(self.dialect, self.ttl_ms), updated_at=db_now(self.dialect),
                    ), self.dialect, wait_s)).rowcount
                    failpoints.hit("renew.before_commit", scope=claim.path)
            except Exception as exc:
                metrics.heartbeat_failures.labels("lease").inc()
                log.warning("could not renew the claim on %s: %s", claim.path, exc)
                claim.trusted()  # marks it lost if its deadline has passed meanwhile
                continue
            if renewed:
                claim.deadline = started + self.ttl_ms / 1000
            elif not claim.released:
                claim.mark_lost("its row was stolen or had expired at renewal")
