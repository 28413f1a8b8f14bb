"""A granted lease claim (backend LEASE_TABLE): the held row, its local deadline, the fence guard
that every store write of the operation runs first, and the release.

The fence guard runs first inside every store write transaction of the operation: it re-reads the claim
row FOR UPDATE and raises FenceLost unless holder, fence and an unexpired lease all match, so a holder
that was paused past its lease and lost the claim cannot commit. A stealer must delete that row first,
so it waits for any store transaction that passed the guard to finish. Release deletes the row only if
(holder, fence) still match; a successful journalled operation has already deleted it, with the fence
check of its last store write (_check_fence_and_release).

The guard (and the store statements after it) wait on row locks at most for the time the claim has
left, the release for lock_waits.BACKGROUND_WAIT_S (gravimeta/store/lock_waits.py): a guard that runs
out of it raises FenceLost, as the claim could not be checked before it ran out.

The holder trusts a claim only until (start of its last successful renewal + TTL) by its own monotonic
clock, which is never later than the database's expiry; past that it treats the claim as lost without
asking the database.

Durable before its fence leaves the store. On PostgreSQL the grant commits without waiting for the WAL
flush (LeaseBackend._async_commit), and so without waiting for a synchronous standby either: a crash, or a
failover, in the next few hundred milliseconds loses the grant and its fence counter bump, and the store
hands that fence out again. Nothing in the store relied on the lost grant (every guarded store transaction
is durable and flushes the WAL before it), but an engine that was sent the fence has seen it, and it admits
a token equal to the highest it saw: two holders with one token. So before the fence is first sent out
(gravimeta/dispatch/engine_door.py) the grant is made durable (`make_durable`): a durable store transaction
this claim's guard checked has done it already (the journal's intent, before every journalled engine call);
otherwise one small durable write on the claim row does. tests/ha/test_durable_fence.py.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol, cast

from sqlalchemy import Connection, Engine, delete, event, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.concurrency import metrics
from gravimeta.concurrency.db_clock import db_now
from gravimeta.concurrency.tables import scope_lease
from gravimeta.store import guard, lock_waits
from gravimeta.store.commit_check import lost_answer
from gravimeta.store.guard import WriteGuard

log = logging.getLogger(__name__)

#: Test-only switches that disable one safety mechanism, so the HA tests can show that they fail
#: without it. Never set by the server.
UNSAFE_NAIVE_CLAIM = "naive_claim"  # SELECT conflicts, then INSERT in another transaction, no anchors
UNSAFE_NO_FENCE = "no_fence"  # the fence guard does nothing
UNSAFE_NO_LOCAL_DEADLINE = "no_local_deadline"  # trust the claim locally forever, lost or not (only the DB check)


class ClaimBackend(Protocol):
    """What a claim needs of the backend that granted it (scope_lease.LeaseBackend is the one): named here
    so that this module need not import the backend, which imports it."""

    engine: Engine
    dialect: str
    ttl_ms: int
    durable_claims: bool
    unsafe: frozenset[str]

    def _untrack(self, claim: LeaseClaim) -> None: ...

    def _async_commit(self, conn: Connection) -> None: ...


class LeaseClaim:
    """A granted claim: its row is (path, holder, fence); valid locally until `deadline` (monotonic)."""

    one_transaction = False  # it lasts until released (or stolen, which its fence guard detects)

    def __init__(self, backend: ClaimBackend, path: str, holder: str, fence: int, deadline: float):
        self.backend, self.path, self.holder, self.fence = backend, path, holder, fence
        self.deadline = deadline
        self.lost = False
        self.released = False
        #: the grant is known durable (module docstring, "Durable before its fence leaves the store")
        self.durable = backend.durable_claims or backend.dialect != "postgresql"

    def time_left(self) -> float:
        """Seconds until the local deadline (0 once lost): how long this holder may still act."""
        if UNSAFE_NO_LOCAL_DEADLINE in self.backend.unsafe:  # TEST-ONLY: a whole lease left, always
            return self.backend.ttl_ms / 1000
        return 0.0 if not self.trusted() else max(0.0, self.deadline - time.monotonic())

    def trusted(self) -> bool:
        """Whether this process may still act on the claim without asking the database."""
        if UNSAFE_NO_LOCAL_DEADLINE in self.backend.unsafe:  # TEST-ONLY: whatever its clock and renewals say
            return True
        if self.lost:
            return False
        if time.monotonic() >= self.deadline:
            self.mark_lost("not renewed before its local deadline")
        return not self.lost

    def mark_lost(self, why: str) -> None:
        if not self.lost:
            self.lost = True
            metrics.claims_lost.inc()
            log.warning("claim on %s (holder %s, fence %d) lost: %s", self.path, self.holder, self.fence, why)

    def fence_guard(self) -> WriteGuard:
        """A guard for EntityStore.write(): the claim row, locked, must still be ours and unexpired."""
        if UNSAFE_NO_FENCE in self.backend.unsafe:
            return lambda session: None
        return self._check_fence

    def _check_fence(self, session: Session) -> None:
        if guard.in_last_write():
            self._check_fence_and_release(session)
            return
        if not self.trusted():
            metrics.fence_rejects.inc()
            raise errors.FenceLost(f"The claim on {self.path} expired before this change could be saved; retry")
        row = self._execute_bounded(session, (
            select(scope_lease.c.holder_id, scope_lease.c.fence,
                   (scope_lease.c.lease_expires_at > db_now(self.backend.dialect)).label("live"))
            .where(scope_lease.c.scope_path == self.path)
            .with_for_update()
        )).first()
        if row is None or row.holder_id != self.holder or row.fence != self.fence or not row.live:
            self.mark_lost("its row was stolen, released or expired")
            metrics.fence_rejects.inc()
            raise errors.FenceLost(
                f"The claim on {self.path} was taken over by another operation (fence {self.fence}); "
                "this change was not saved; retry"
            )
        if not self.durable:  # this transaction's commit flushes the WAL of the grant too
            event.listen(session, "after_commit", self._made_durable, once=True)

    def _made_durable(self, _session: Session) -> None:
        self.durable = True

    def make_durable(self) -> None:
        """Make the grant durable before its fence leaves the store (module docstring): nothing when a
        durable transaction has done it; otherwise one durable write on the claim row, whose commit waits
        for the WAL flush and a synchronous standby up to it, the grant included. StaleFence (nothing is
        to be sent) when the row is no longer this claim's or stays locked until the claim runs out."""
        if self.durable:
            return
        seconds = self.time_left()
        lease = scope_lease.c
        try:
            with self.backend.engine.begin() as conn:
                touched = cast(CursorResult[Any], conn.execute(lock_waits.bounded(
                    update(scope_lease).where(lease.scope_path == self.path, lease.holder_id == self.holder,
                                              lease.fence == self.fence).values(updated_at=lease.updated_at),
                    self.backend.dialect, seconds))).rowcount
        except DBAPIError as exc:
            if not lock_waits.timed_out(exc):
                raise
            touched = 0
        if touched != 1:
            self.mark_lost("its row was gone or locked when its grant was to be made durable")
            raise errors.StaleFence(f"The claim on {self.path} could not be made durable before its fence "
                                    f"{self.fence} was sent to an engine; nothing was sent")
        self.durable = True

    def _check_fence_and_release(self, session: Session) -> None:
        """The check in the operation's last store write, which also releases the claim: ONE
        `DELETE ... WHERE path, holder, fence match AND unexpired`. It takes the same row lock as the
        SELECT ... FOR UPDATE of the ordinary check (a stealer must delete the row, so it waits, and
        then finds nothing to steal), deletes a row exactly when that check would pass, and a rollback
        undoes it. So a successful operation needs no release transaction: once this transaction
        commits, release() has nothing left to do."""
        if not self.trusted():
            metrics.fence_rejects.inc()
            raise errors.FenceLost(f"The claim on {self.path} expired before this change could be saved; retry")
        deleted = cast(CursorResult[Any], self._execute_bounded(session, delete(scope_lease).where(
            scope_lease.c.scope_path == self.path,
            scope_lease.c.holder_id == self.holder,
            scope_lease.c.fence == self.fence,
            scope_lease.c.lease_expires_at > db_now(self.backend.dialect),
        ))).rowcount
        if deleted != 1:
            self.mark_lost("its row was stolen, released or expired")
            metrics.fence_rejects.inc()
            raise errors.FenceLost(
                f"The claim on {self.path} was taken over by another operation (fence {self.fence}); "
                "this change was not saved; retry"
            )
        event.listen(session, "after_commit", self._released_by_commit, once=True)

    def _execute_bounded(self, session: Session, stmt: Any) -> Any:
        """Execute the guard's locking statement, and run everything after it in this transaction, with
        lock waits bounded by the time the claim has left; FenceLost if the row stays locked that long."""
        seconds = self.time_left()
        lock_waits.bound_connection(session.connection(), self.backend.dialect, seconds)
        try:
            return session.execute(lock_waits.bounded(stmt, self.backend.dialect, seconds))
        except DBAPIError as exc:
            if not lock_waits.timed_out(exc):
                raise
            self.mark_lost("its row stayed locked until the claim ran out")
            metrics.fence_rejects.inc()
            raise errors.FenceLost(
                f"The claim on {self.path} could not be checked before it ran out (its row stayed locked); "
                "this change was not saved; retry") from exc

    def _released_by_commit(self, _session: Session) -> None:
        if not self.released:
            self.released = True
            self.backend._untrack(self)

    def release(self) -> None:
        """Delete the claim row if it is still ours. Never raises: an unreleased row simply expires. A
        release whose connection failed (its COMMIT may not have reached the server, and nobody renews
        the row any more) is sent once more on a new connection (not after a failure to connect): it
        deletes only this claim's row, so sending it twice is harmless, and without it the scope would
        stay busy until the lease expired."""
        if self.released:
            return
        self.released = True
        self.backend._untrack(self)
        for attempt in (1, 2):
            try:
                with self.backend.engine.begin() as conn:
                    self.backend._async_commit(conn)
                    conn.execute(lock_waits.bounded(delete(scope_lease).where(
                        scope_lease.c.scope_path == self.path,
                        scope_lease.c.holder_id == self.holder,
                        scope_lease.c.fence == self.fence,
                    ), self.backend.dialect, lock_waits.BACKGROUND_WAIT_S))
                return
            except Exception as exc:  # the caller's own outcome matters more; the lease expires after its TTL
                if attempt == 1 and lost_answer(exc):
                    log.info("the release of the claim on %s lost its connection; sending it again", self.path)
                    continue
                log.exception("could not release the claim on %s; it will expire", self.path)
                return
