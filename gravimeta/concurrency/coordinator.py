"""MetadataConcurrencyCoordinator: the one door every dispatcher goes through.

A structural operation (create, rename, drop, cascade) runs as:
  1. claim its scope in the shared database (cross-node; skipped when the distributed lock is off),
  2. take exactly one TreeLock (the same identifier and type as with the flag off),
  3. the work (connector + store; every store write transaction first runs the claim's fence guard,
     or, for an advisory claim, runs inside the claim's own transaction),
  4. release the TreeLock, then the claim (in `finally`).
The claim is taken before the TreeLock so that a thread waiting on another replica never holds the
local tree lock. Non-structural operations and reads take only the TreeLock.

Every claim is taken before the TreeLock, whatever its backend. A PostgreSQL advisory claim is a
database transaction holding advisory locks (pg_advisory.py): it is opened and its locks taken in
step 1, the operation's store writes run inside it (guard.joining), and it commits after step 4's
TreeLock release, which ends the locks; on error it rolls back.

Such a claim protects its one transaction only: nothing the operation commits elsewhere (an intent
that must be durable before an engine call). An operation that finds, under the claim, that it needs
that (a journalled connector operation) raises NeedsLastingClaim before it writes anything;
`run_structural` then runs it once more, when the backend knows better (AutoBackend learns a catalog's connector from the connector cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar, runtime_checkable

from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.concurrency.tree_lock import LockType, TreeLock
from gravimeta.entities import NameIdentifier
from gravimeta.store import guard

T = TypeVar("T")
_one_transaction: ContextVar[bool] = ContextVar("gravimeta_claim_one_transaction", default=False)
_current: ContextVar[Claim | None] = ContextVar("gravimeta_current_claim", default=None)
_lasting: ContextVar[bool] = ContextVar("gravimeta_lasting_claim_wanted", default=False)


class NeedsLastingClaim(Exception):
    """The operation spans several store transactions, and its claim protects only one at a time."""


def current_claim() -> Claim | None:
    """The cross-node claim of the structural operation running in this context (None: the lock is
    off, or no structural operation is running)."""
    return _current.get()


def require_lasting_claim() -> None:
    """Raise NeedsLastingClaim when the current structural claim protects one transaction only."""
    if _one_transaction.get():
        raise NeedsLastingClaim()


def lasting_claim_wanted() -> bool:
    """Whether the claim being taken is for an operation that raised NeedsLastingClaim under a claim of
    one transaction (run_structural's second attempt): a backend that can grant either gives the lasting
    one (AutoBackend)."""
    return _lasting.get()


class Claim(Protocol):
    """A granted cross-node claim on a scope. `one_transaction`: it protects each guarded store
    transaction on its own (advisory locks end at commit), not what happens between them.
    `path`: the scope path ('/m/c/s'). `fence`: the claim's fencing token, for calls to systems that can
    check one (connectors); None when the claim has none (advisory locks). `time_left()`: seconds this
    holder may still act on the claim by its own clock (inf when it cannot expire while held)."""

    one_transaction: bool

    @property
    def path(self) -> str: ...

    @property
    def fence(self) -> int | None: ...

    def time_left(self) -> float: ...

    def fence_guard(self) -> guard.WriteGuard | None: ...

    def make_durable(self) -> None:
        """Before the claim's fence is sent out of the store (an engine call): make sure a crash or a
        failover of the store cannot lose the grant, and so hand the same fence out again."""

    def release(self) -> None: ...


@runtime_checkable
class TransactionClaim(Claim, Protocol):
    """A claim that IS a database transaction (PostgreSQL advisory locks): taken before the TreeLock,
    the operation's store writes run in it (`transaction`, installed with guard.joining), and `commit()`
    ends it once the operation succeeded; `release()` rolls back whatever was not committed."""

    def transaction(self) -> AbstractContextManager[Session]: ...

    def commit(self) -> None: ...


class ClaimBackend(Protocol):
    """Grants claims on scopes (the lease table, PostgreSQL advisory locks, ...)."""

    def claim(self, scope: NameIdentifier) -> Claim: ...


class Coordinator:
    """Orders cross-node claims and in-process TreeLocks for the dispatchers."""

    def __init__(self, tree_lock: TreeLock, claims: ClaimBackend | None = None, runtime: object | None = None):
        self.tree_lock = tree_lock
        self.claims = claims
        #: what keeps the cross-node layer alive (bootstrap.DistributedLock: heartbeat thread, node row)
        self.runtime = runtime
        #: called once a structural operation holds its claim and TreeLock, before its work: the
        #: request's access check runs again there (gravimeta/api/door.py), so that no other structural
        #: change of the scope comes between the check and the change
        self.when_held: Callable[[], None] | None = None

    @contextmanager
    def structural(self, scope: NameIdentifier, lock_type: LockType = LockType.WRITE) -> Iterator[None]:
        """Claim `scope` across nodes, then hold the TreeLock on it, for a structural change."""
        if self.claims is None:
            with self.tree_lock.locked(scope, lock_type):
                self._held()
                yield
            return
        claim = self.claims.claim(scope)
        failpoints.hit("claim.after_grant", scope=claim.path, fence=claim.fence)
        own = claim if isinstance(claim, TransactionClaim) else None
        token, current = _one_transaction.set(claim.one_transaction), _current.set(claim)
        try:
            with self.tree_lock.locked(scope, lock_type), guard.installed(claim.fence_guard(), claim.path), \
                    guard.joining(None if own is None else own.transaction):
                self._held()
                yield
            if own is not None:  # after the TreeLock, as a release: the commit ends the claim's locks
                own.commit()
        finally:
            _current.reset(current)
            _one_transaction.reset(token)
            claim.release()

    def _held(self) -> None:
        if self.when_held is not None:
            self.when_held()

    def run_structural(self, scope: NameIdentifier, work: Callable[[], T], lock_type: LockType = LockType.WRITE) -> T:
        """`work()` inside structural(scope); once more if it raised NeedsLastingClaim (see the module
        docstring), then asking for a lasting claim (lasting_claim_wanted). A second refusal means the
        backend has none to give."""
        for attempt in (1, 2):
            wanted = _lasting.set(attempt == 2)
            try:
                with self.structural(scope, lock_type):
                    return work()
            except NeedsLastingClaim:
                if attempt == 2:
                    raise errors.ScopeBusy(f"The catalog of {scope} changed while this operation started; "
                                           "retry it") from None
            finally:
                _lasting.reset(wanted)
        raise AssertionError("unreachable")

    @contextmanager
    def local(self, ident: NameIdentifier, lock_type: LockType) -> Iterator[None]:
        """Only the TreeLock: reads and non-structural updates (the store makes those safe across nodes)."""
        with self.tree_lock.locked(ident, lock_type):
            yield
