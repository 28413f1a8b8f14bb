"""The scope lease (backend LEASE_TABLE): cross-node claims as rows of gm_scope_lease (DESIGN.md §3).

A claim on P is granted in ONE transaction that
  1. locks the serializer rows: gm_claim_anchor '/' FOR KEY SHARE and '/<metalake>' FOR UPDATE (a root
     claim locks '/' FOR UPDATE). Every two related paths share an anchor, so their claim transactions
     run one after the other and each sees the other's committed row (READ COMMITTED re-reads per
     statement). On SQLite the transaction is BEGIN IMMEDIATE, which serializes all writers anyway;
  2. reads the claims on P, its ancestors (IN list) and its descendants (LIKE 'P/%' with wildcards
     escaped), judging expiry with the database clock; any live one means "busy": roll back and wait;
  3. deletes the expired related claims it found (a steal: their holders' fence checks now fail),
  4. takes the next fence for P from gm_scope_fence (never deleted, so fences never reset), and
  5. inserts the claim row, expiring TTL later by the database clock.
On PostgreSQL the whole transaction is one call of the database function gm_claim_scope (alembic
revisions 0004 and 0005: the same statements in the same order, one round trip instead of seven), which also
takes the scope's advisory locks when advisory-path operations can run (PG_ADVISORY, AUTO). On
MySQL/MariaDB and SQLite the statements are sent one by one.
Release deletes the row only if (holder, fence) still match; a successful journalled operation has
already deleted it, with the fence check of its last store write (_check_fence_and_release). The fence guard runs first inside every
store write transaction of the operation: it re-reads the claim row FOR UPDATE and raises FenceLost
unless holder, fence and an unexpired lease all match, so a holder that was paused past its lease and
lost the claim cannot commit. A stealer must delete that row first, so it waits for any store
transaction that passed the guard to finish.

The holder renews its claims every TTL/3 from the heartbeat thread and trusts a claim only until
(start of its last successful renewal + TTL) by its own monotonic clock, which is never later than the
database's expiry; past that it treats the claim as lost without asking the database.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

from sqlalchemy import Connection, Engine, delete, event, func, insert, select, text, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.concurrency import metrics, paths, waiter_line
from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.tables import claim_anchor, scope_fence, scope_lease
from gravimeta.entities import NameIdentifier
from gravimeta.store import guard
from gravimeta.store.guard import WriteGuard

log = logging.getLogger(__name__)

#: Test-only switches that disable one safety mechanism, so the HA tests can show that they fail
#: without it. Never set by the server.
UNSAFE_NAIVE_CLAIM = "naive_claim"  # SELECT conflicts, then INSERT in another transaction, no anchors
UNSAFE_NO_FENCE = "no_fence"  # the fence guard does nothing
UNSAFE_NO_LOCAL_DEADLINE = "no_local_deadline"  # trust the claim locally forever (only the DB check)


# The whole claim transaction on PostgreSQL, in one call (alembic/versions/0005_claim_waiter_line.py, first written as 0004).
_PG_CLAIM = text(
    "SELECT status, fence, stolen, ahead FROM gm_claim_scope(CAST(:path AS text), CAST(:anchor AS text), "
    "CAST(:related AS text[]), CAST(:descendants AS text), CAST(:holder AS text), CAST(:ttl_ms AS bigint), "
    "CAST(:wait_ttl_ms AS bigint), CAST(:async AS boolean), CAST(:shared AS bigint[]), CAST(:exclusive AS bigint))"
)


class _Backoff:
    """Exponential backoff with full jitter, capped, never sleeping past the deadline."""

    def __init__(self, first_s: float = 0.002, cap_s: float = 0.1):
        self.next_s, self.cap_s = first_s, cap_s

    def sleep(self, deadline: float, cap_s: float | None = None) -> None:
        """Sleep up to the current step (or `cap_s`, if smaller), then double the step."""
        step = self.next_s if cap_s is None else min(self.next_s, cap_s)
        delay = min(random.uniform(0, step), max(0.0, deadline - time.monotonic()))
        self.next_s = min(self.cap_s, self.next_s * 2)
        time.sleep(delay)


class _PathGates:
    """One lock per scope path, for the threads of one process that wait to claim that path. Created
    on first use, never removed (one small lock per path this process has claimed); a fork starts
    with none, whatever the parent held."""

    def __init__(self) -> None:
        self._gates: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def for_path(self, path: str) -> threading.Lock:
        with self._lock:
            if self._pid != os.getpid():
                self._gates, self._pid = {}, os.getpid()
            return self._gates.setdefault(path, threading.Lock())


class _Attempt(NamedTuple):
    """One claim attempt: the fence if granted; otherwise, for a waiter in the database line, how
    many related waiters are ahead of it (None: not in line, e.g. the line is off)."""

    fence: int | None
    ahead: int | None = None


class _NoGate:
    def acquire(self, timeout: float) -> bool:
        return True

    def release(self) -> None:
        pass


_NO_GATE = _NoGate()


class LeaseClaim:
    """A granted claim: its row is (path, holder, fence); valid locally until `deadline` (monotonic)."""

    one_transaction = False  # it lasts until released (or stolen, which its fence guard detects)

    def __init__(self, backend: LeaseBackend, path: str, holder: str, fence: int, deadline: float):
        self.backend, self.path, self.holder, self.fence = backend, path, holder, fence
        self.deadline = deadline
        self.lost = False
        self.released = False

    def trusted(self) -> bool:
        """Whether this process may still act on the claim without asking the database."""
        if self.lost:
            return False
        if UNSAFE_NO_LOCAL_DEADLINE in self.backend.unsafe:
            return True
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
        row = session.execute(
            select(scope_lease.c.holder_id, scope_lease.c.fence,
                   (scope_lease.c.lease_expires_at > db_now(self.backend.dialect)).label("live"))
            .where(scope_lease.c.scope_path == self.path)
            .with_for_update()
        ).first()
        if row is None or row.holder_id != self.holder or row.fence != self.fence or not row.live:
            self.mark_lost("its row was stolen, released or expired")
            metrics.fence_rejects.inc()
            raise errors.FenceLost(
                f"The claim on {self.path} was taken over by another operation (fence {self.fence}); "
                "this change was not saved; retry"
            )

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
        deleted = cast(CursorResult[Any], session.execute(delete(scope_lease).where(
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

    def _released_by_commit(self, _session: Session) -> None:
        if not self.released:
            self.released = True
            self.backend._untrack(self)

    def release(self) -> None:
        """Delete the claim row if it is still ours. Never raises: an unreleased row simply expires."""
        if self.released:
            return
        self.released = True
        self.backend._untrack(self)
        try:
            with self.backend.engine.begin() as conn:
                self.backend._async_commit(conn)
                conn.execute(delete(scope_lease).where(
                    scope_lease.c.scope_path == self.path,
                    scope_lease.c.holder_id == self.holder,
                    scope_lease.c.fence == self.fence,
                ))
        except Exception:  # the caller's own outcome matters more; the lease expires after its TTL
            log.exception("could not release the claim on %s; it will expire", self.path)


class LeaseBackend:
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
        self.unsafe = frozenset(unsafe)
        #: PostgreSQL with advisory-path operations (PG_ADVISORY, AUTO): advisory_plan(path) -> the
        #: [(key, exclusive)] advisory locks the claim also takes, so it excludes those operations
        self.advisory_plan = advisory_plan
        self.heartbeat = heartbeat or Heartbeat(ttl_ms / 3000)
        self.heartbeat.add_task("renew-claims", self.renew_all)
        self._claims: dict[str, LeaseClaim] = {}
        self._claims_lock = threading.Lock()
        self._claims_pid = os.getpid()
        self._known_anchors: set[str] = set()
        self._gates = _PathGates()
        #: queue this process's threads per path before polling (GRAVIMETA_CLAIM_GATE=false: each polls
        #: on its own, the A/B of bench/hot_parent.py)
        self.gated = os.environ.get("GRAVIMETA_CLAIM_GATE", "").lower() not in ("0", "false")
        #: GRAVIMETA_CLAIM_LINE=true: waiters take tickets and are served in order across processes
        #: (waiter_line.py). Off by default: it lowers throughput on mixed and hot scopes
        #: (docs/benchmarks.md); 0 = no tickets are written
        self.wait_ttl_ms = (
            waiter_line.WAIT_TTL_MS if os.environ.get("GRAVIMETA_CLAIM_LINE", "").lower() in ("1", "true") else 0
        )
        #: wait for the WAL flush of claim and release commits too (off: see _async_commit)
        self.durable_claims = os.environ.get("GRAVIMETA_DURABLE_CLAIMS", "").lower() in ("1", "true")

    # ----------------------------------------------------------------- claiming

    def claim(self, scope: NameIdentifier) -> LeaseClaim:
        return self.claim_path(paths.scope_path(scope))

    def claim_path(self, path: str) -> LeaseClaim:
        """Claim `path`, waiting with backoff while a related live claim exists; ScopeBusy on timeout.
        Threads of this process that want the same path queue at a local gate first, so only one of
        them polls the database at a time (fewer polls, and a thread that has waited longer is not
        overtaken by every newcomer of its own process: bench/hot_parent.py)."""
        self.heartbeat.ensure_started()
        holder = f"{self.node_id}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        started = time.monotonic()
        deadline = started + self.timeout_ms / 1000
        gate = self._gates.for_path(path) if self.gated else _NO_GATE
        if not gate.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise self._busy(path)
        try:
            backoff, waiting = _Backoff(), False
            while True:
                attempt_at = time.monotonic()
                attempt = self._try_claim(path, holder, waiting)
                if attempt.fence is not None:
                    claim = LeaseClaim(self, path, holder, attempt.fence, attempt_at + self.ttl_ms / 1000)
                    self._track(claim)
                    metrics.claim_acquire_seconds.labels(self.name).observe(time.monotonic() - started)
                    return claim
                waiting = True
                metrics.contention_waits.labels(self.name).inc()
                if time.monotonic() >= deadline:
                    if self.wait_ttl_ms > 0:
                        waiter_line.give_up(self.engine, holder)
                    raise self._busy(path)
                # near the head of the line: poll often, to take the scope as soon as it is free
                backoff.sleep(deadline, None if attempt.ahead is None else waiter_line.poll_cap_s(attempt.ahead))
        finally:
            gate.release()

    def _busy(self, path: str) -> errors.ScopeBusy:
        metrics.scope_busy.labels(self.name).inc()
        return errors.ScopeBusy(
            f"Another operation is changing {path} or a related scope; gave up after {self.timeout_ms} ms, retry later"
        )

    def _try_claim(self, path: str, holder: str, waiting: bool) -> _Attempt:
        """One attempt. `waiting`: an earlier attempt of this holder may have taken a ticket."""
        if UNSAFE_NAIVE_CLAIM in self.unsafe:
            return _Attempt(self._try_claim_naive(path, holder))
        anchors = self._anchors(path)
        self._ensure_anchors(anchors)
        if self.dialect == "postgresql":
            return self._try_claim_in_one_call(path, holder, anchors)
        try:
            with self.engine.connect() as conn:
                conn.execution_options(sqlite_begin="IMMEDIATE")
                with conn.begin():
                    if not self._lock_anchors(conn, path, anchors):
                        self._known_anchors.difference_update(anchors)
                        return _Attempt(None)
                    if self.wait_ttl_ms <= 0:  # no line: the claim transaction as before it existed
                        if not self._clear_related(conn, path):
                            return _Attempt(None)
                        return _Attempt(self._grant(conn, path, holder))
                    related = self._related_claims(conn, path)
                    ticket = waiter_line.ticket_of(conn, holder) if waiting else None
                    ahead = waiter_line.others_ahead(conn, self.dialect, path, holder, ticket)
                    if ahead or any(r.live for r in related):
                        waiter_line.wait_in_line(conn, self.dialect, path, holder, ticket, self.wait_ttl_ms)
                        return _Attempt(None, ahead)
                    if waiting:
                        waiter_line.leave_line(conn, self.dialect, path, holder)
                    self._steal(conn, related)
                    return _Attempt(self._grant(conn, path, holder))
        except IntegrityError:  # a row we could not see yet (e.g. MySQL PAD SPACE equality): just retry
            return _Attempt(None)

    def _try_claim_in_one_call(self, path: str, holder: str, anchors: list[str]) -> _Attempt:
        """The same transaction as the statements of _try_claim, as ONE call of the database function
        gm_claim_scope (alembic/versions/0005) in autocommit mode: one round trip instead of seven."""
        advisory = self.advisory_plan(path) if self.advisory_plan is not None else None
        params = {
            "path": path, "anchor": anchors[-1], "related": [path, *paths.ancestors(path)],
            "descendants": paths.descendant_pattern(path), "holder": holder, "ttl_ms": self.ttl_ms,
            "wait_ttl_ms": self.wait_ttl_ms, "async": not self.durable_claims,
            "shared": None if advisory is None else [key for key, exclusive in advisory if not exclusive],
            "exclusive": None if advisory is None else next(key for key, exclusive in advisory if exclusive),
        }
        try:
            with self.engine.connect() as conn:
                row = conn.execution_options(isolation_level="AUTOCOMMIT").execute(_PG_CLAIM, params).one()
        except IntegrityError:  # as in _try_claim: retry
            return _Attempt(None)
        if row.status == "no-anchor":
            self._known_anchors.difference_update(anchors)
        if row.status != "granted":
            return _Attempt(None, row.ahead if self.wait_ttl_ms > 0 and row.status == "waiting" else None)
        for stolen in row.stolen:
            metrics.steals.inc()
            log.info("stole expired claim (path holder fence: %s)", stolen)
        return _Attempt(int(row.fence))

    def _try_claim_naive(self, path: str, holder: str) -> int | None:
        with self.engine.begin() as conn:
            if not self._clear_related(conn, path):
                return None
        try:
            with self.engine.begin() as conn:
                return self._grant(conn, path, holder)
        except IntegrityError:
            return None

    def _clear_related(self, conn: Connection, path: str) -> bool:
        """False if a live claim on a related path exists; otherwise delete the expired ones (steals)."""
        related = self._related_claims(conn, path)
        if any(r.live for r in related):
            return False
        self._steal(conn, related)
        return True

    def _related_claims(self, conn: Connection, path: str) -> list[Any]:
        """The claims on `path`, its ancestors and its descendants, each with whether it is live."""
        lease = scope_lease.c
        rows = conn.execute(
            select(lease.scope_path, lease.holder_id, lease.fence,
                   (lease.lease_expires_at > db_now(self.dialect)).label("live"))
            .where(paths.related_in_sql(lease.scope_path, path))
        ).all()
        return [r for r in rows if paths.related(r.scope_path, path)]  # SQLite LIKE ignores ASCII case

    def _steal(self, conn: Connection, related: list[Any]) -> None:
        """Delete the expired ones among `related` (a steal: their holders' fence checks now fail)."""
        lease = scope_lease.c
        for r in related:
            stolen = conn.execute(delete(scope_lease).where(
                lease.scope_path == r.scope_path, lease.holder_id == r.holder_id, lease.fence == r.fence,
                lease.lease_expires_at <= db_now(self.dialect),
            )).rowcount
            if stolen:
                metrics.steals.inc()
                log.info("stole expired claim on %s (holder %s, fence %d)", r.scope_path, r.holder_id, r.fence)

    def _grant(self, conn: Connection, path: str, holder: str) -> int:
        fence_col = scope_fence.c
        fence: int | None
        if self.dialect == "mysql":
            # no UPDATE ... RETURNING: an upsert that hands the new fence back through LAST_INSERT_ID(expr),
            # which the server reports with the statement's result (one statement instead of two)
            upsert = mysql_insert(scope_fence).values(scope_path=path, fence=func.last_insert_id(1))
            result = conn.execute(upsert.on_duplicate_key_update(fence=func.last_insert_id(fence_col.fence + 1)))
            fence = int(cast(CursorResult[Any], result).lastrowid)
        else:  # PostgreSQL, SQLite: the new fence in the same statement; the path's first grant inserts 1
            bump = update(scope_fence).where(fence_col.scope_path == path).values(fence=fence_col.fence + 1)
            fence = conn.execute(bump.returning(fence_col.fence)).scalar_one_or_none()
            if fence is None:
                fence = 1
                conn.execute(insert(scope_fence).values(scope_path=path, fence=fence))
        now = db_now(self.dialect)
        conn.execute(insert(scope_lease).values(
            scope_path=path, holder_id=holder, fence=fence,
            lease_expires_at=db_now_plus(self.dialect, self.ttl_ms), acquired_at=now, updated_at=now,
        ))
        return fence

    def _async_commit(self, conn: Connection) -> None:
        """PostgreSQL: commit this claim or release transaction without waiting for its WAL flush
        (bench/claim_overhead.py: the two fsyncs were most of the lease's cost). Safe because the
        fence check runs inside the operation's durable store transaction, whose commit flushes the
        WAL written before it, claim row included: a claim lost in a crash was never relied on by a
        committed change, and a release lost in a crash only leaves a row that expires."""
        if self.dialect == "postgresql" and not self.durable_claims:
            conn.exec_driver_sql("SET LOCAL synchronous_commit = off")

    # ----------------------------------------------------------------- anchors

    @staticmethod
    def _anchors(path: str) -> list[str]:
        anchor = paths.anchor_of(path)
        return [paths.ROOT_PATH] if anchor == paths.ROOT_PATH else [paths.ROOT_PATH, anchor]

    def _ensure_anchors(self, anchors: list[str]) -> None:
        """Create missing anchor rows in their own transaction (rows are never deleted)."""
        missing = [a for a in anchors if a not in self._known_anchors]
        if not missing or self.dialect == "sqlite":
            return
        stmt = (
            pg_insert(claim_anchor).on_conflict_do_nothing() if self.dialect == "postgresql"
            else mysql_insert(claim_anchor).prefix_with("IGNORE")
        )
        with self.engine.begin() as conn:
            conn.execute(stmt, [{"anchor": a} for a in missing])
        self._known_anchors.update(missing)

    def _lock_anchors(self, conn: Connection, path: str, anchors: list[str]) -> bool:
        if self.dialect == "sqlite":  # BEGIN IMMEDIATE already made this the only writer
            return True
        anchor = claim_anchor.c.anchor
        root = select(anchor).where(anchor == paths.ROOT_PATH)
        if len(anchors) == 1:  # a root claim excludes every other claim: FOR UPDATE on '/'
            return conn.execute(root.with_for_update()).first() is not None
        # FOR KEY SHARE on PostgreSQL (LOCK IN SHARE MODE on MySQL): conflicts with FOR UPDATE only.
        # (key_share without read would be FOR NO KEY UPDATE, which does NOT conflict with it.)
        found = conn.execute(root.with_for_update(read=True, key_share=True)).first()
        return found is not None and conn.execute(
            select(anchor).where(anchor == anchors[1]).with_for_update()
        ).first() is not None

    # ----------------------------------------------------------------- renewal

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
            try:
                with self.engine.begin() as conn:
                    renewed = conn.execute(update(scope_lease).where(
                        scope_lease.c.scope_path == claim.path,
                        scope_lease.c.holder_id == claim.holder,
                        scope_lease.c.fence == claim.fence,
                        scope_lease.c.lease_expires_at > db_now(self.dialect),
                    ).values(
                        lease_expires_at=db_now_plus(self.dialect, self.ttl_ms), updated_at=db_now(self.dialect),
                    )).rowcount
            except Exception as exc:
                metrics.heartbeat_failures.labels("lease").inc()
                log.warning("could not renew the claim on %s: %s", claim.path, exc)
                claim.trusted()  # marks it lost if its deadline has passed meanwhile
                continue
            if renewed:
                claim.deadline = started + self.ttl_ms / 1000
            elif not claim.released:
                claim.mark_lost("its row was stolen or had expired at renewal")
