"""MetadataConcurrencyCoordinator: the one door every dispatcher goes through.

A structural operation (create, rename, drop, cascade) runs as:
  1. claim its scope in the shared database (cross-node; skipped when the distributed lock is off),
  2. take exactly one TreeLock (the same identifier and type as with the flag off),
  3. the work (connector + store; every store write transaction first runs the claim's fence guard),
  4. release the TreeLock, then the claim (in `finally`).
The claim is taken before the TreeLock so that a thread waiting on another replica never holds the
local tree lock. Non-structural operations and reads take only the TreeLock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from gravimeta.concurrency.tree_lock import LockType, TreeLock
from gravimeta.entities import NameIdentifier
from gravimeta.store import guard


class Claim(Protocol):
    """A granted cross-node claim on a scope."""

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
        try:
            with self.tree_lock.locked(scope, lock_type), guard.installed(claim.fence_guard()):
                yield
        finally:
            claim.release()

    @contextmanager
    def local(self, ident: NameIdentifier, lock_type: LockType) -> Iterator[None]:
        """Only the TreeLock: reads and non-structural updates (the store makes those safe across nodes)."""
        with self.tree_lock.locked(ident, lock_type):
            yield
