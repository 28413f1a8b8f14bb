"""PostgreSQL advisory fast path (backend PG_ADVISORY, and AUTO on PostgreSQL) (docs/ha.md).

A claim here is a database transaction that holds transaction-level advisory locks: SHARED on the key
of every ancestor of the scope and EXCLUSIVE on the scope's own key, so two operations on related
scopes exclude each other (an exclusive ancestor conflicts with the shared lock every descendant
operation takes on it; equal scopes conflict exclusively) and unrelated ones do not. Keys are 64-bit
hashes of the path: a collision can only make two unrelated scopes contend, never let related ones run
together. There is nothing to renew, steal or fence: a paused process holds an open transaction, and
the database keeps the locks exactly as long as that transaction can still commit.

The claim opens its transaction and takes the locks when it is granted, BEFORE the coordinator takes
the TreeLock (a thread that waits on the database never holds the local lock; before,
the locks were taken by a guard inside the store transaction, under the TreeLock, and an advisory
catalog operation could wait there for a lease whose holder waited for that TreeLock). The store
writes of the operation then run in that same transaction (guard.joining; EntityStore.write), so
everything they read and decide — which catalog, by id; which connector; one transaction or the
journal — is read after the locks are held, and the locks end with the commit of the writes they
protect. The coordinator commits it when the operation ends normally and rolls it back otherwise: an
operation under an advisory claim changes the store all at once or not at all. The first write runs
directly in the transaction (no extra round trip); any later one in a savepoint, so that a write that
fails undoes only itself, as it would in a transaction of its own. A first write that fails ends the
transaction; a write after it takes the locks again in a new one only if they are free (it holds the
TreeLock now and must not wait), else ScopeBusy.

Taking the claim is one call of the database function gm_advisory_claim (alembic revisions 0006,
0011 and 0020): a lock that is taken is waited for in PostgreSQL's lock queue, in arrival order, for at most what
is left of the claim timeout, then ScopeBusy (the transaction rolls back and frees what it took). Once
it has the locks, the function reads the related rows of gm_scope_lease FOR SHARE under the same
lock_timeout: that waits for any lease holder's in-flight fenced store transaction (its guard holds its
row FOR UPDATE) and any renewal, and keeps an expired row locked so its holder cannot pass its guard
again until this claim ends. A live related lease answers 'leased' (the row locks are given back, the
advisory locks kept); the claim sleeps with backoff and calls again. A root claim (a metalake create,
rename or drop) reads those rows FOR SHARE NOWAIT (revision 0020): it holds the exclusive lock on '/',
which every other claim needs shared, so waiting there for one holder stalled in a fenced transaction
would hold up the claims of every metalake; a row another transaction holds answers 'busy', with the
advisory locks given back too, and the claim sleeps with backoff and calls again. Any other claim answers
'busy' before it takes a lock while a waiting lease root claim's record is live (revision 0021,
root_wait.py): under AUTO a lease root claim (the force drop of a metalake with journalled catalogs)
try-locks '/' exclusively, which a churn of advisory claims holding it shared would never let it do. The lease backend
takes the same advisory locks in its claim transaction on PostgreSQL (LeaseBackend's advisory_plan, given lock_plan),
so replicas or operations that use different backends on one database exclude each other (docs/ha.md).

SOUND ONLY for operations whose cross-node state change is store writes in this one transaction: the
protection ends at that commit. That holds for every metalake-level and catalog-level structural
operation (store writes plus process-local connector-cache work; the drop or move of a catalog whose
engine checks fences, which first retires its key there with a token, asks for the lease instead:
dispatch/retirement.py) and for schema and table operations in a catalog whose connector is
process-local (memory: they run whole in one store transaction, gravimeta/dispatch/journal.py). Schema and table operations of any other catalog run through the
operation journal (intent transaction, engine call, apply transaction), whose intent must commit before
the engine call: AutoBackend gives them the lease (bootstrap.py wires both PG_ADVISORY and AUTO that
way), and an operation that finds, under its claim, that it needs the journal refuses to start
(coordinator.require_lasting_claim) and is retried under the lease.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.concurrency import metrics, paths
from gravimeta.concurrency.coordinator import lasting_claim_wanted
from gravimeta.concurrency.scope_lease import LeaseBackend, LeaseClaim, _Backoff
from gravimeta.entities import NameIdentifier
from gravimeta.store.commit_check import commit_joined
from gravimeta.store.database import disabled_for_test

log = logging.getLogger(__name__)
_DEADLOCK, _DEADLOCK_RETRIES = "40P01", 3


def advisory_key(path: str) -> int:
    """A signed 64-bit key for `path` (first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:8], "big", signed=True)


def lock_plan(path: str) -> list[tuple[int, bool]]:
    """(key, exclusive) for every lock a claim on `path` takes: ancestors shared, root first; leaf exclusive."""
    return [(advisory_key(a), False) for a in paths.ancestors(path)] + [(advisory_key(path), True)]


# The claim's one call (alembic/versions/0020, first written as 0006): the locks, then the related leases FOR SHARE.
_ADVISORY_CLAIM = text(
    "SELECT gm_advisory_claim(CAST(:shared AS bigint[]), CAST(:exclusive AS bigint), "
    "CAST(:related AS text[]), CAST(:descendants AS text), CAST(:wait_ms AS bigint))"
)


# A root claim's fence, stored as a lease root claim stores its own (lease_grant.py, step 4): one more than
# the highest fence of every anchor row, in '/', which every later lease grant reads. A metalake rename
# claims the root and moves the metalake's catalogs to the anchor of its new name, whose counter may be
# lower than the one their engines have seen; without this an advisory root claim left '/' as it was, and
# the catalogs' next claims got fences their engines refused as stale (tests/engine/test_metalake_rename_fences.py).
_ROOT_FENCE = text(
    "INSERT INTO gm_claim_anchor (anchor, fence) SELECT '/', COALESCE(MAX(fence), 0) + 1 FROM gm_claim_anchor "
    "ON CONFLICT (anchor) DO UPDATE SET fence = EXCLUDED.fence"
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
    """A granted advisory claim: its open transaction holds the locks (module docstring)."""

    one_transaction = True  # nothing it protects may commit outside its transaction
    fence = None  # advisory locks carry no fencing token

    def __init__(self, backend: AdvisoryBackend, path: str):
        self.backend, self.path = backend, path
        self._resources: ExitStack | None = None
        self._session: Session | None = None
        self._written = False

    def time_left(self) -> float:
        return float("inf")  # held while its transaction is open; nothing to renew or lose

    def fence_guard(self) -> None:
        """None: the locks are held by the transaction every store write joins (`transaction`)."""
        return None

    def make_durable(self) -> None:
        """Nothing: no fence of this claim leaves the store."""

    # ----------------------------------------------------------------- the claim's transaction

    def acquire(self, wait: bool = True) -> None:
        """Open the claim's transaction and take its locks: wait in line up to the claim timeout, or
        (`wait` False) only if they are free; ScopeBusy otherwise, with nothing left open."""
        resources = ExitStack()
        try:
            conn = resources.enter_context(self.backend.engine.connect())
            session = resources.enter_context(Session(bind=conn, expire_on_commit=False))
            session.begin()
            self._take_locks(session, wait)
        except BaseException:
            resources.close()  # the session's close rolls back: any lock taken is freed
            raise
        self._resources, self._session, self._written = resources, session, False

    def _take_locks(self, session: Session, wait: bool) -> None:
        started = time.monotonic()
        deadline = started + (self.backend.timeout_ms / 1000 if wait else 0)
        arguments, backoff, waited = claim_arguments(self.path), _Backoff(), False
        queue = wait and not disabled_for_test("advisory_queue")  # TEST-ONLY when off: poll, as before 0006
        failpoints.hit("advisory.before_lock", scope=self.path)
        while True:
            left_ms = max(1, int((deadline - time.monotonic()) * 1000)) if queue else 1
            status = session.execute(_ADVISORY_CLAIM, {**arguments, "wait_ms": left_ms}).scalar_one()
            if status != "granted" and not waited:
                metrics.contention_waits.labels(self.backend.name).inc()
                waited = True
            if status in ("granted", "waited"):
                if self.path == paths.ROOT_PATH and not disabled_for_test("root_fence"):  # TEST-ONLY when off
                    session.execute(_ROOT_FENCE)  # under the root's exclusive lock: no claim runs meanwhile
                metrics.claim_acquire_seconds.labels(self.backend.name).observe(time.monotonic() - started)
                failpoints.hit("advisory.after_lock", scope=self.path)
                return
            if (status == "timeout" and queue) or time.monotonic() >= deadline:
                metrics.scope_busy.labels(self.backend.name).inc()
                raise errors.ScopeBusy(
                    f"Another operation is changing {self.path} or a related scope; gave up after "
                    f"{self.backend.timeout_ms if wait else 0} ms, retry later"
                )
            # 'leased': a lease on a related path must end first (or: polling); 'busy': a root claim met a
            # related lease row locked by another transaction and gave its locks back (revision 0020), or a
            # waiting lease root claim holds this claim back (0021; root_wait.py), before it took any lock
            backoff.sleep(deadline)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """The block one store write of the operation runs in (guard.joining): the claim's transaction
        itself for the first write, a savepoint in it for each later one (module docstring)."""
        if self._session is None:  # the first write failed and ended the transaction: lock again, no wait
            self.acquire(wait=False)
        session = self._session
        assert session is not None
        if self._written:
            with session.begin_nested():
                yield session
            return
        try:
            yield session
        except BaseException:
            self._end()
            raise
        self._written = True

    def commit(self) -> None:
        """The operation ended normally: commit its store writes, which ends the locks. A COMMIT whose
        connection failed is checked as a store write's own (commit_check.py: returns if it committed,
        StoreUnavailable if not, CommitOutcomeUnknown if that cannot be looked up); a COMMIT the server
        refused is StoreUnavailable (nothing the operation wrote was saved)."""
        session, self._session = self._session, None
        if session is None:
            return
        try:
            commit_joined(session)
        except DBAPIError as exc:
            raise errors.StoreUnavailable("The metadata database failed; nothing was changed",
                                          detail=str(exc.orig)) from exc
        finally:
            self._end()

    def _end(self) -> None:
        """Close the transaction (Session.close rolls back what was not committed) and give its
        connection back."""
        resources, self._resources, self._session = self._resources, None, None
        if resources is not None:
            resources.close()

    def release(self) -> None:
        """Roll back whatever was not committed (the operation failed) and free the locks. Never raises."""
        try:
            self._end()
        except Exception:  # the operation's own outcome matters more; the connection is discarded
            log.exception("could not roll back the advisory claim on %s", self.path)


class AdvisoryBackend:
    name = "PG_ADVISORY"

    def __init__(self, engine: Engine, timeout_ms: int = 10000):
        self.engine, self.timeout_ms = engine, timeout_ms

    def claim(self, scope: NameIdentifier) -> AdvisoryClaim:
        """Grant a claim on `scope`: its transaction is open and holds the locks (ScopeBusy if not in time)."""
        claim = AdvisoryClaim(self, paths.scope_path(scope))
        for attempt in range(_DEADLOCK_RETRIES + 1):
            try:
                claim.acquire()
                return claim
            except DBAPIError as exc:  # its FOR SHARE read against a multi-row DELETE (the reclaimer)
                if attempt == _DEADLOCK_RETRIES or getattr(exc.orig, "sqlstate", None) != _DEADLOCK:
                    raise
        raise AssertionError("unreachable")


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
        if lasting_claim_wanted():  # the operation found under an advisory claim that it needs more
            return self.lease.claim(scope)
        return self.backend_for(scope).claim(scope)
