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

`pg_try_advisory_xact_lock*` never blocks; a lock that is not free is retried with backoff, inside the
same transaction, until the claim timeout, then ScopeBusy (the transaction rolls back and frees what
it took). The guard then checks gm_scope_lease for a live claim on a related path, and the lease
backend takes the same advisory locks inside its claim transaction on PostgreSQL (LeaseBackend's
advisory_plan, given lock_plan), so replicas or operations that use different backends on one
database still exclude each other.

SOUND ONLY for operations whose cross-node state change is a single store write transaction: the
protection ends at that commit. That holds for every metalake-level and catalog-level structural
operation (create/rename/drop of metalakes and catalogs: one store transaction plus process-local
connector-cache work). Schema and table operations run through the operation journal (intent
transaction, engine call, apply transaction) for every connector, so the protection would end between
them; AutoBackend gives them the lease (bootstrap.py wires both PG_ADVISORY and AUTO that way).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.concurrency import metrics, paths
from gravimeta.concurrency.db_clock import db_now
from gravimeta.concurrency.scope_lease import LeaseBackend, LeaseClaim, _Backoff
from gravimeta.concurrency.tables import scope_lease
from gravimeta.entities import NameIdentifier
from gravimeta.store.guard import WriteGuard


def advisory_key(path: str) -> int:
    """A signed 64-bit key for `path` (first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:8], "big", signed=True)


def lock_plan(path: str) -> list[tuple[int, bool]]:
    """(key, exclusive) for every lock a claim on `path` takes: ancestors shared, root first; leaf exclusive."""
    return [(advisory_key(a), False) for a in paths.ancestors(path)] + [(advisory_key(path), True)]


def _try_locks(execute: Callable[..., object], plan: list[tuple[int, bool]]) -> list[tuple[int, bool]]:
    """Try every lock in one statement; return the ones not obtained."""
    columns = [
        (func.pg_try_advisory_xact_lock(key) if exclusive else func.pg_try_advisory_xact_lock_shared(key)).label(f"l{i}")
        for i, (key, exclusive) in enumerate(plan)
    ]
    got = execute(select(*columns)).one()  # type: ignore[attr-defined]
    return [lock for lock, ok in zip(plan, got, strict=True) if not ok]


def live_related_lease(session: Session, path: str) -> bool:
    lease = scope_lease.c
    rows = session.execute(
        select(lease.scope_path).where(
            paths.related_in_sql(lease.scope_path, path),
            lease.lease_expires_at > db_now("postgresql"),
        )
    ).scalars().all()
    return any(paths.related(p, path) for p in rows)


class AdvisoryClaim:
    def __init__(self, backend: AdvisoryBackend, path: str):
        self.backend, self.path = backend, path

    def fence_guard(self) -> WriteGuard:
        return self._lock

    def _lock(self, session: Session) -> None:
        started = time.monotonic()
        deadline = started + self.backend.timeout_ms / 1000
        pending, backoff, waited = lock_plan(self.path), _Backoff(), False
        while True:
            if pending:
                pending = _try_locks(session.execute, pending)
            if not pending and not live_related_lease(session, self.path):
                metrics.claim_acquire_seconds.labels(self.backend.name).observe(time.monotonic() - started)
                return
            if not waited:
                metrics.contention_waits.labels(self.backend.name).inc()
                waited = True
            if time.monotonic() >= deadline:
                metrics.scope_busy.labels(self.backend.name).inc()
                raise errors.ScopeBusy(
                    f"Another operation is changing {self.path} or a related scope; gave up after "
                    f"{self.backend.timeout_ms} ms, retry later"
                )
            backoff.sleep(deadline)

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
    lease table elsewhere. `catalog_is_local(metalake, catalog)` says whether a catalog's connector
    keeps no state outside this process."""

    name = "AUTO"

    def __init__(self, advisory: AdvisoryBackend, lease: LeaseBackend,
                 catalog_is_local: Callable[[str, str], bool]):
        self.advisory, self.lease, self.catalog_is_local = advisory, lease, catalog_is_local

    def backend_for(self, scope: NameIdentifier) -> AdvisoryBackend | LeaseBackend:
        if len(scope.levels) < 2:
            return self.advisory
        try:
            local = self.catalog_is_local(scope.levels[0], scope.levels[1])
        except errors.NotFound:
            local = True  # the operation will fail on the missing parent anyway; nothing external to protect
        return self.advisory if local else self.lease

    def claim(self, scope: NameIdentifier) -> AdvisoryClaim | LeaseClaim:
        return self.backend_for(scope).claim(scope)
