"""PostgreSQL advisory fast path (backend PG_ADVISORY, and AUTO on PostgreSQL) — DESIGN.md §4.

A claim here takes no database round trip of its own. Its fence guard, which EntityStore.write() runs
first inside every store write transaction of the operation, takes transaction-level advisory locks:
SHARED on the key of every ancestor of the scope and EXCLUSIVE on the scope's own key, so two
operations on related scopes exclude each other (an exclusive ancestor conflicts with the shared lock
every descendant operation takes on it; equal scopes conflict exclusively) and unrelated ones do not.
They are released by the commit or rollback, so there is nothing to renew, steal or fence: a paused
process holds an open transaction, and the database keeps the lock exactly as long as that
transaction can still commit. Keys are 64-bit hashes of the path: a collision can only make two
unrelated scopes contend, never let related ones run together.

The guard is one call of the database function gm_advisory_claim (alembic revision 0006): a lock that
is taken is waited for in PostgreSQL's lock queue, in arrival order, for at most what is left of the
claim timeout, then ScopeBusy (the transaction rolls back and frees what it took). Once it has the
locks, the function checks gm_scope_lease for a live claim on a related path (with a fresh snapshot);
while there is one, the guard sleeps with backoff and calls again, keeping the locks. The lease
backend takes the same advisory locks inside its claim transaction on PostgreSQL (LeaseBackend's
advisory_plan, given lock_plan), so replicas or operations that use different backends on one database
still exclude each other.

SOUND ONLY for operations whose cross-node state change is a single store write transaction: the
protection ends at that commit. That holds for every metalake-level and catalog-level structural
operation (one store transaction plus process-local connector-cache work) and for schema and table
operations in a catalog whose connector is process-local (memory: they run whole in one store
transaction, gravimeta/dispatch/journal.py). Schema and table operations of any other catalog run
through the operation journal (intent transaction, engine call, apply transaction), so the protection
would end between them: AutoBackend gives them the lease (bootstrap.py wires both PG_ADVISORY and AUTO
that way), and an operation that finds it needs the journal under an advisory claim refuses to start
(coordinator.require_lasting_claim) and is retried under the lease.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.concurrency import metrics, paths
from gravimeta.concurrency.scope_lease import LeaseBackend, LeaseClaim, _Backoff
from gravimeta.entities import NameIdentifier
from gravimeta.store.database import disabled_for_test
from gravimeta.store.guard import WriteGuard


def advisory_key(path: str) -> int:
    """A signed 64-bit key for `path` (first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:8], "big", signed=True)


def lock_plan(path: str) -> list[tuple[int, bool]]:
    """(key, exclusive) for every lock a claim on `path` takes: ancestors shared, root first; leaf exclusive."""
    return [(advisory_key(a), False) for a in paths.ancestors(path)] + [(advisory_key(path), True)]


# The guard's one call (alembic/versions/0006_pg_advisory_function.py): the locks, then the lease check.
_ADVISORY_CLAIM = text(
    "SELECT gm_advisory_claim(CAST(:shared AS bigint[]), CAST(:exclusive AS bigint), "
    "CAST(:related AS text[]), CAST(:descendants AS text), CAST(:wait_ms AS bigint))"
)


def claim_arguments(path: str) -> dict[str, object]:
    """gm_advisory_claim's arguments for a claim on `path` (its locks as lock_plan gives them)."""
    plan = lock_plan(path)
    (exclusive,) = [key for key, is_exclusive in plan if is_exclusive]
    return {
        "shared": [key for key, is_exclusive in plan if not is_exclusive], "exclusive": exclusive,
        "related": [path, *paths.ancestors(path)], "descendants": paths.descendant_pattern(path),
    }


class AdvisoryClaim:
    one_transaction = True  # the locks end with each guarded transaction's commit

    def __init__(self, backend: AdvisoryBackend, path: str):
        self.backend, self.path = backend, path

    def fence_guard(self) -> WriteGuard:
        return self._lock

    def _lock(self, session: Session) -> None:
        started = time.monotonic()
        deadline = started + self.backend.timeout_ms / 1000
        arguments, backoff, waited = claim_arguments(self.path), _Backoff(), False
        queue = not disabled_for_test("advisory_queue")  # TEST-ONLY when off: poll, as before revision 0006
        while True:
            left_ms = max(1, int((deadline - time.monotonic()) * 1000)) if queue else 1
            status = session.execute(_ADVISORY_CLAIM, {**arguments, "wait_ms": left_ms}).scalar_one()
            if status != "granted" and not waited:
                metrics.contention_waits.labels(self.backend.name).inc()
                waited = True
            if status in ("granted", "waited"):
                metrics.claim_acquire_seconds.labels(self.backend.name).observe(time.monotonic() - started)
                return
            if (status == "timeout" and queue) or time.monotonic() >= deadline:
                metrics.scope_busy.labels(self.backend.name).inc()
                raise errors.ScopeBusy(
                    f"Another operation is changing {self.path} or a related scope; gave up after "
                    f"{self.backend.timeout_ms} ms, retry later"
                )
            backoff.sleep(deadline)  # 'leased': a lease on a related path must end first (or: polling)

    def release(self) -> None:
        """Nothing to do: the locks ended with the store transaction."""


class AdvisoryBackend:
    name = "PG_ADVISORY"

    def __init__(self, timeout_ms: int = 10000):
        self.timeout_ms = timeout_ms

    def claim(self, scope: NameIdentifier) -> AdvisoryClaim:
        return AdvisoryClaim(self, paths.scope_path(scope))


class AutoBackend:
    """AUTO on PostgreSQL: the advisory fast path where it is sound (see the module docstring), the
    lease table elsewhere. `catalog_is_local(metalake, catalog)` says whether a catalog's schema and
    table operations run in one store transaction (a process-local connector, as last seen here)."""

    name = "AUTO"

    def __init__(self, advisory: AdvisoryBackend, lease: LeaseBackend,
                 catalog_is_local: Callable[[str, str], bool]):
        self.advisory, self.lease, self.catalog_is_local = advisory, lease, catalog_is_local

    def backend_for(self, scope: NameIdentifier) -> AdvisoryBackend | LeaseBackend:
        if len(scope.levels) < 2:
            return self.advisory
        return self.advisory if self.catalog_is_local(scope.levels[0], scope.levels[1]) else self.lease

    def claim(self, scope: NameIdentifier) -> AdvisoryClaim | LeaseClaim:
        return self.backend_for(scope).claim(scope)
