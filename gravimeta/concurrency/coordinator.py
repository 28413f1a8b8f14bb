"""MetadataConcurrencyCoordinator: the one door every dispatcher goes through.

A structural operation (create, rename, drop, cascade) runs as:
  1. claim its scope in the shared database (cross-node; skipped when the distributed lock is off),
  2. take exactly one TreeLock (the same identifier and type as with the flag off),
  3. the work (connector + store; every store write transaction first runs the claim's fence guard),
  4. release the TreeLock, then the claim (in `finally`).
The claim is taken before the TreeLock so that a thread waiting on another replica never holds the
local tree lock. Non-structural operations and reads take only the TreeLock.

Some claims (PostgreSQL advisory locks) protect each store transaction on its own, not the gap between
two of them. An operation that finds it needs several (a journalled connector operation) raises
NeedsLastingClaim before it writes anything; `run_structural` then runs it once more, when the backend
knows better (AutoBackend learns a catalog's connector from the connector cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

from gravimeta import errors
from gravimeta.concurrency.tree_lock import LockType, TreeLock
from gravimeta.entities import NameIdentifier
from gravimeta.store import guard

T = TypeVar("T")
_one_transaction: ContextVar[bool] = ContextVar("gravimeta_claim_one_transaction", default=False)


class NeedsLastingClaim(Exception):
    """The operation spans several store transactions, and its claim protects only one at a time."""


def require_lasting_claim() -> None:
    """Raise NeedsLastingClaim when the current structural claim protects one transaction only."""
    if _one_transaction.get():
        raise NeedsLastingClaim()


class Claim(Protocol):
    """A granted cross-node claim on a scope. `one_transaction`: it protects each guarded store
    transaction on its own (advisory locks end at commit), not what happens between them."""

    one_transaction: bool

    def fence_guard(self) -> guard.WriteGuard | None: ...

    def release(self) -> None: ...


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

    @contextmanager
    def structural(self, scope: NameIdentifier, lock_type: LockType = LockType.WRITE) -> Iterator[None]:
        """Claim `scope` across nodes, then hold the TreeLock on it, for a structural change."""
        if self.claims is None:
            with self.tree_lock.locked(scope, lock_type):
                yield
            return
        claim = self.claims.claim(scope)
        token = _one_transaction.set(claim.one_transaction)
        try:
            with self.tree_lock.locked(scope, lock_type), guard.installed(claim.fence_guard()):
                yield
        finally:
            _one_transaction.reset(token)
            claim.release()

    def run_structural(self, scope: NameIdentifier, work: Callable[[], T], lock_type: LockType = LockType.WRITE) -> T:
        """`work()` inside structural(scope); once more if it raised NeedsLastingClaim (see the module
        docstring). A second refusal means the catalog changed its connector twice meanwhile."""
        for attempt in (1, 2):
            try:
                with self.structural(scope, lock_type):
                    return work()
            except NeedsLastingClaim:
                if attempt == 2:
                    raise errors.ScopeBusy(f"The catalog of {scope} changed while this operation started; "
                                           "retry it") from None
        raise AssertionError("unreachable")

    @contextmanager
    def local(self, ident: NameIdentifier, lock_type: LockType) -> Iterator[None]:
        """Only the TreeLock: reads and non-structural updates (the store makes those safe across nodes)."""
        with self.tree_lock.locked(ident, lock_type):
            yield
