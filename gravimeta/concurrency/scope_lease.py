"""The scope lease (backend LEASE_TABLE): cross-node claims as rows of gm_scope_lease (docs/ha.md).

LeaseBackend is the ClaimBackend: claim_path waits, with backoff, until one claim attempt is granted
or the acquire timeout passes (ScopeBusy). The parts, each in its own module:
  - lease_grant.py: one claim attempt, the transaction of anchor locks, related read, steal and grant;
  - lease_claim.py: LeaseClaim, the held claim: its local deadline, the fence guard, the release;
  - lease_renewal.py: the claims this process holds and their renewal from the heartbeat thread;
  - backoff.py: how a claimant waits between attempts;
  - root_wait.py: how a waiting root claim holds new claims back, for a bounded time.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable

from sqlalchemy import Connection, Engine

from gravimeta import errors, failpoints
from gravimeta.concurrency import metrics, paths, root_wait
from gravimeta.concurrency.backoff import Backoff
from gravimeta.concurrency.db_clock import dialect_of
from gravimeta.concurrency.heartbeat import RENEWALS, Heartbeat
from gravimeta.concurrency.lease_claim import (
    UNSAFE_NAIVE_CLAIM,
    UNSAFE_NO_FENCE,
    UNSAFE_NO_LOCAL_DEADLINE,
    LeaseClaim,
)
from gravimeta.concurrency.lease_grant import ClaimTransaction
from gravimeta.concurrency.lease_renewal import ClaimRenewal
from gravimeta.entities import NameIdentifier
from gravimeta.store.database import disabled_for_test

__all__ = [
    "UNSAFE_NAIVE_CLAIM", "UNSAFE_NO_FENCE", "UNSAFE_NO_LOCAL_DEADLINE", "LeaseBackend", "LeaseClaim", "_Backoff",
]

log = logging.getLogger(__name__)

_Backoff = Backoff  # the name pg_advisory.py imports
_SWITCHES = (UNSAFE_NO_FENCE, UNSAFE_NO_LOCAL_DEADLINE)


class LeaseBackend(ClaimTransaction, ClaimRenewal):
    """ClaimBackend on the gm_scope_lease table; one per worker process."""

    name = "LEASE_TABLE"

    def __init__(
        self,
        engine: Engine,
        node_id: str,
        ttl_ms: int = 15000,
        timeout_ms: int = 10000,
        heartbeat: Heartbeat | None = None,
        unsafe: Iterable[str] = (),
        advisory_plan: Callable[[str], list[tuple[int, bool]]] | None = None,
    ):
        self.engine, self.node_id = engine, node_id
        self.dialect = dialect_of(engine)
        self.ttl_ms, self.timeout_ms = ttl_ms, timeout_ms
        #: the switches the HA tests name in GRAVIMETA_HA_DISABLE reach replicas too (TEST-ONLY)
        self.unsafe = frozenset(unsafe) | {name for name in _SWITCHES if disabled_for_test(name)}
        #: PostgreSQL with advisory-path operations (PG_ADVISORY, AUTO): advisory_plan(path) -> the
        #: [(key, exclusive)] advisory locks the claim also takes, so it excludes those operations
        self.advisory_plan = advisory_plan
        self.heartbeat = heartbeat or Heartbeat(ttl_ms / 3000)
        self.heartbeat.add_task("renew-claims", self.renew_all, lane=RENEWALS)
        self._claims: dict[str, LeaseClaim] = {}
        self._claims_lock = threading.Lock()
        self._claims_pid = os.getpid()
        self._known_anchors: set[str] = set()
        #: wait for the WAL flush of claim and release commits too (off: see _async_commit)
        self.durable_claims = os.environ.get("GRAVIMETA_DURABLE_CLAIMS", "").lower() in ("1", "true")

    # ----------------------------------------------------------------- claiming

    def claim(self, scope: NameIdentifier) -> LeaseClaim:
        return self.claim_path(paths.scope_path(scope))

    def claim_path(self, path: str) -> LeaseClaim:
        """Claim `path`, waiting with backoff while a related live claim exists (or a waiting root claim
        holds new claims back); ScopeBusy on timeout. A root claim that waits holds new claims back for a
        bounded time (root_wait.py) and tries again sooner meanwhile."""
        self.heartbeat.ensure_started()
        holder = f"{self.node_id}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        started = time.monotonic()
        deadline = started + self.timeout_ms / 1000
        backoff = Backoff()
        recorded = False  # this root claim was recorded as the waiting one at least once
        while True:
            attempt_at = time.monotonic()
            wait = root_wait.RootWait.for_attempt(self.timeout_ms, deadline - attempt_at) \
                if path == paths.ROOT_PATH else None
            fence = self._try_claim(path, holder, deadline, wait)
            if fence is not None:
                failpoints.hit("claim.granted", scope=path, fence=fence)
                claim = LeaseClaim(self, path, holder, fence, attempt_at + self.ttl_ms / 1000)
                if self._born_spent(claim):
                    claim.release()
                    if time.monotonic() >= deadline:
                        raise self._busy(path)
                    continue
                self._track(claim)
                metrics.claim_acquire_seconds.labels(self.name).observe(time.monotonic() - started)
                return claim
            metrics.contention_waits.labels(self.name).inc()
            waiting = wait is not None and wait.waiting
            recorded = recorded or waiting
            if time.monotonic() >= deadline:
                if recorded:
                    root_wait.end(self.engine, self.dialect, holder)
                raise self._busy(path)
            if waiting:
                failpoints.hit("claim.root_waiting", scope=path)
            backoff.sleep(deadline, cap_s=root_wait.RETRY_S if waiting else None)

    def _born_spent(self, claim: LeaseClaim) -> bool:
        """Whether a grant has less than a renewal interval (TTL/3) left the moment it is made: its attempt
        waited on a row lock for most of the TTL (behind a holder frozen inside its renewal transaction,
        until the database ended that session), and the lease counts from the attempt's start, so the
        first renewal could not come in time and the operation would end in FenceLost. Such a grant is
        given back (its fence never left this process) and the claim tried again within its timeout."""
        if disabled_for_test("fresh_grant"):  # TEST-ONLY: keep the spent grant
            return False
        left = claim.deadline - time.monotonic()  # not time_left(): that would count it lost, and log so
        if left >= self.ttl_ms / 3000:
            return False
        log.info("claim on %s (fence %d) granted with %.2f s of its %d ms lease left; giving it back and "
                 "trying again", claim.path, claim.fence, left, self.ttl_ms)
        return True

    def _busy(self, path: str) -> errors.ScopeBusy:
        metrics.scope_busy.labels(self.name).inc()
        return errors.ScopeBusy(
            f"Another operation is changing {path} or a related scope; gave up after {self.timeout_ms} ms, retry later"
        )

    def _async_commit(self, conn: Connection) -> None:
        """PostgreSQL: commit this claim or release transaction without waiting for its WAL flush
        (bench/claim_overhead.py: the two fsyncs were most of the lease's cost). Safe because the
        fence check runs inside the operation's durable store transaction, whose commit flushes the
        WAL written before it, claim row included: a claim lost in a crash was never relied on by a
        committed change, and a release lost in a crash only leaves a row that expires."""
        if self.dialect == "postgresql" and not self.durable_claims:
            conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
