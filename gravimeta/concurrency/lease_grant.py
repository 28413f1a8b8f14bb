"""The claim transaction of the lease backend (LEASE_TABLE): one attempt to claim a scope path.

A claim on P is granted in ONE transaction that
  1. locks the serializer rows: gm_claim_anchor '/' FOR KEY SHARE and '/<metalake>' FOR UPDATE (a root
     claim locks '/' FOR UPDATE). Every two related paths share an anchor, so their claim transactions
     run one after the other and each sees the other's committed row (READ COMMITTED re-reads per
     statement). On SQLite the transaction is BEGIN IMMEDIATE, which serializes all writers anyway.
     The same read of '/' gives the waiting root claim's record: while it is live, a claim under a
     metalake is held back ('held', busy), and a busy root claim writes or renews it (root_wait.py);
  2. reads the claims on P, its ancestors (IN list) and its descendants (LIKE 'P/%' with wildcards
     escaped), judging expiry with the database clock; any live one means "busy": roll back and wait.
     If it found some and all were expired, it reads each of them again FOR UPDATE, by its key, and
     judges it again: the locking read waits for a renewal in flight and sees it live (see "A steal
     racing a renewal"). By key, so that it locks (and waits for) those rows only, never a claim of
     another metalake that the IN/LIKE test's plan visits (_lock_claims);
  3. deletes the expired related claims it found (a steal: their holders' fence checks now fail),
  4. takes the next fence: one more than the highest fence stored in the anchor rows it read ('/' and
     the metalake's; all of them for a root claim) and stores it in its own anchor row, so a later grant
     on ANY related path gets a greater fence (related paths share a locked anchor row; anchor rows
     are never deleted, so fences never reset), and
  5. inserts the claim row, expiring TTL later by the database clock.
On PostgreSQL the whole transaction is one call of the database function gm_claim_scope (alembic
revisions 0004, 0012, 0020 and 0021: the same statements in the same order, one round trip instead of eight or more), which also
takes the scope's advisory locks when advisory-path operations can run (PG_ADVISORY, AUTO). On
MySQL/MariaDB it is one call of the stored procedure gm_claim_scope (alembic revisions 0013, 0015, 0020 and 0021,
the same statements again). On SQLite the statements are sent one by one. The anchor rows are created
beforehand, once, in a transaction of their own that is bounded like the claim (_ensure_anchors).

A steal racing a renewal (tests/ha/test_lease_interleavings.py). H holds /m/c and
renews just before its lease expires; S claims /m just after:
  H  UPDATE gm_scope_lease SET lease_expires_at = now+TTL WHERE /m/c, H, fence AND unexpired   (row lock)
  S  locks the anchors; SELECT ... related: /m/c committed, expired
  S  SELECT ... WHERE scope_path = '/m/c' FOR UPDATE                        -> waits for H's row lock
  H  COMMIT
  S  the locking read returns the renewed row (PostgreSQL re-fetches the updated version after the
     wait, EvalPlanQual; InnoDB's locking read reads the latest committed version): live, so busy.
With a plain read (before revision 0012) S saw the committed, expired row, its steal DELETE waited for
H's lock, re-checked the renewed row, deleted nothing, and S was granted anyway: two live related
claims, both passing their fence guards. In the other order (S's locking read first) the expired row
is S's until S commits; H's renewal matches no unexpired row (InnoDB waits for S's lock first, then
finds the row gone), and H's claim is lost.
Renewal therefore needs no anchor: the row lock orders it with every claim that could steal it.
Only a claimant about to steal takes the locking read, so a claim committed live answers busy at the
plain read, as before, without waiting for its holder's transactions or holding its row (which would hold
up that claim's renewal). It does wait for the fenced store transaction of a related holder whose
lease has expired, as the steal's DELETE always did, and for no other row. Every such wait is bounded:
an attempt waits on row locks at most until the claim's deadline (gravimeta/store/lock_waits.py), and an attempt that runs out of it counts as busy.
A root claim does not wait there at all: it holds '/' FOR UPDATE, which every other claim needs, so its
wait on one holder stalled in a fenced transaction would hold up the claims of every metalake. It locks
the rows NOWAIT, and a row another transaction holds makes the attempt busy at once: its transaction
ends, '/' is free again, and it retries with backoff like any busy attempt (alembic revision 0020).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import Connection, Engine, case, delete, func, insert, select, text, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Row
from sqlalchemy.exc import DBAPIError, IntegrityError

from gravimeta import failpoints
from gravimeta.concurrency import metrics, paths, root_wait
from gravimeta.concurrency.db_clock import db_now, db_now_plus
from gravimeta.concurrency.lease_claim import UNSAFE_NAIVE_CLAIM
from gravimeta.concurrency.root_wait import RootWait
from gravimeta.concurrency.tables import claim_anchor, scope_lease
from gravimeta.store import lock_waits
from gravimeta.store.commit_check import lost_answer

log = logging.getLogger(__name__)


# The whole claim transaction on PostgreSQL, in one call (alembic/versions/0021_root_claim_holds_new_claims_back.py,
# first written as 0004).
_PG_CLAIM = text(
    # the first argument also sets lock_timeout for the call (lock_waits.pg_argument)
    f"SELECT status, fence, stolen FROM gm_claim_scope({lock_waits.pg_argument('CAST(:path AS text)')}, "
    "CAST(:anchor AS text), "
    "CAST(:related AS text[]), CAST(:descendants AS text), CAST(:holder AS text), CAST(:ttl_ms AS bigint), "
    "CAST(:async AS boolean), CAST(:shared AS bigint[]), CAST(:exclusive AS bigint), "
    "CAST(:hold_ms AS bigint), CAST(:poll_ms AS bigint))"
)


# The whole claim transaction on MySQL/MariaDB, in one call (alembic/versions/0013_mariadb_claim_procedure.py,
# now as written by 0021). Its lock waits are bounded by the statement's DEADLINE option (lock_waits.install:
# SET STATEMENT ... FOR).
_MYSQL_CLAIM = text("CALL gm_claim_scope(:path, :anchor, :r1, :r2, :r3, :r4, :r5, :descendants, :holder, :ttl_ms, "
                    ":hold_ms, :poll_ms)")
#: the procedure takes the scope and its ancestors as five arguments: enough for a table's path
_MYSQL_RELATED = 5


def _wait_arguments(wait: RootWait | None) -> dict[str, int]:
    """gm_claim_scope's last two arguments: a root claim's hold and poll (root_wait.py); 0 records nothing."""
    return {"hold_ms": 0 if wait is None else wait.hold_ms, "poll_ms": 0 if wait is None else wait.poll_ms}


class ClaimTransaction:
    """The claim attempt of LeaseBackend (mixed into it): the anchors, the related read, the steal
    and the grant, with the settings below taken from the backend."""

    engine: Engine
    dialect: str
    ttl_ms: int
    timeout_ms: int
    unsafe: frozenset[str]
    advisory_plan: Callable[[str], list[tuple[int, bool]]] | None
    durable_claims: bool
    _known_anchors: set[str]

    def _try_claim(self, path: str, holder: str, deadline: float | None = None,
                   wait: RootWait | None = None) -> int | None:
        """One attempt: the new claim's fence, or None if a related claim is live, a waiting root claim
        holds this claim back (or, rarely, the attempt met a row it could not see yet: the caller retries
        either way). `deadline` (monotonic): no lock wait of the attempt lasts past it (then it is busy,
        None). `wait` (a root claim's attempt): how a busy attempt records the claim as the waiting root
        claim (root_wait.py); the attempt sets `wait.waiting`."""
        if UNSAFE_NAIVE_CLAIM in self.unsafe:
            return self._try_claim_naive(path, holder)
        if deadline is None:
            deadline = lock_waits.deadline_in(self.timeout_ms / 1000)
        try:
            anchors = self._anchors(path)
            self._ensure_anchors(anchors, deadline)
            if self.dialect == "postgresql":
                return self._try_claim_in_one_call(path, holder, anchors, deadline, wait)
            if self.dialect == "mysql" and len(paths.ancestors(path)) < _MYSQL_RELATED:
                return self._try_claim_in_one_procedure_call(path, holder, anchors, deadline, wait)
            return self._try_claim_in_statements(path, holder, anchors, deadline, wait)
        except DBAPIError as exc:
            if lock_waits.timed_out(exc):  # a row stayed locked until the deadline: busy, like a live claim
                return None
            if lost_answer(exc):
                self._withdraw_attempt(path, holder)
            raise

    def _withdraw_attempt(self, path: str, holder: str) -> None:
        """The connection of an attempt failed before its answer came: on PostgreSQL and MariaDB the
        attempt is one call that commits by itself, so it may have been granted, and nobody would renew
        or release that row: its scope would stay busy until the lease expired. Delete it, in a
        transaction of its own, by this attempt's holder id (unique per claim_path call, so it matches
        no other claim; the fence never left this process). Best effort: the database may be away, or
        the call may still commit after this looked; the row then expires after its TTL."""
        try:
            with self.engine.begin() as conn:
                conn.execute(lock_waits.bounded(delete(scope_lease).where(
                    scope_lease.c.scope_path == path, scope_lease.c.holder_id == holder,
                ), self.dialect, lock_waits.BACKGROUND_WAIT_S))
        except DBAPIError as exc:
            log.warning("the claim attempt on %s lost its answer and its row could not be deleted (it expires "
                        "after its TTL): %s", path, exc.orig)

    def _try_claim_in_statements(self, path: str, holder: str, anchors: list[str], deadline: float,
                                 wait: RootWait | None = None) -> int | None:
        """The claim transaction as statements sent one by one (SQLite; MariaDB for paths deeper than the
        procedure takes). Every busy answer commits what it wrote: nothing, or a root claim's record."""
        try:
            with self.engine.connect() as conn:
                conn.execution_options(sqlite_begin="IMMEDIATE", **{lock_waits.DEADLINE: deadline})
                with conn.begin():
                    refused = self._lock_anchors(conn, path, anchors)
                    if refused == "no-anchor":
                        self._known_anchors.difference_update(anchors)
                    if refused is not None:
                        return None
                    if not self._clear_related(conn, path):
                        # a root claim's statements run on SQLite only (MariaDB's root claim is its procedure)
                        if wait is not None and self.dialect == "sqlite":
                            root_wait.record_in_sqlite(conn, holder, wait)
                        return None
                    fence = self._grant(conn, path, holder, anchors)
                    failpoints.hit("claim.before_grant", scope=path)  # not on PostgreSQL: its claim is one call
                    return fence
        except IntegrityError:  # a row we could not see yet (e.g. MySQL PAD SPACE equality): just retry
            return None

    def _try_claim_in_one_call(self, path: str, holder: str, anchors: list[str], deadline: float,
                               wait: RootWait | None = None) -> int | None:
        """The same transaction as the statements of _try_claim, as ONE call of the database function
        gm_claim_scope (alembic/versions/0012) in autocommit mode: one round trip instead of eight."""
        advisory = self.advisory_plan(path) if self.advisory_plan is not None else None
        params = {
            "path": path, "anchor": anchors[-1], "related": [path, *paths.ancestors(path)],
            "descendants": paths.descendant_pattern(path), "holder": holder, "ttl_ms": self.ttl_ms,
            "async": not self.durable_claims,
            "shared": None if advisory is None else [key for key, exclusive in advisory if not exclusive],
            "exclusive": None if advisory is None else next(key for key, exclusive in advisory if exclusive),
            "gm_lock_timeout": lock_waits.pg_lock_timeout(lock_waits.left(deadline)),
            **_wait_arguments(wait),
        }
        try:
            with self.engine.connect() as conn:
                row = conn.execution_options(isolation_level="AUTOCOMMIT").execute(_PG_CLAIM, params).one()
        except IntegrityError:  # as in _try_claim: retry
            return None
        return self._answer(row.status, row.fence, row.stolen, anchors, wait)

    def _try_claim_in_one_procedure_call(self, path: str, holder: str, anchors: list[str],
                                         deadline: float, wait: RootWait | None = None) -> int | None:
        """The same transaction as the statements of _try_claim, as ONE call of the stored procedure
        gm_claim_scope (alembic/versions/0013), which commits (or rolls back) itself."""
        related = [path, *paths.ancestors(path)]
        params = {"path": path, "anchor": anchors[-1], "descendants": paths.descendant_pattern(path),
                  "holder": holder, "ttl_ms": self.ttl_ms, **_wait_arguments(wait),
                  **{f"r{i + 1}": related[i] if i < len(related) else None for i in range(_MYSQL_RELATED)}}
        try:
            with self.engine.connect() as conn:
                # the procedure commits its own transaction; the close that follows ends the driver's empty
                # one with the ROLLBACK the pool would send anyway (a COMMIT here would be one more round trip)
                row = conn.execution_options(**{lock_waits.DEADLINE: deadline}).execute(_MYSQL_CLAIM, params).one()
        except IntegrityError:  # as in _try_claim_in_statements: retry
            return None
        return self._answer(row.status, row.fence, list(filter(None, row.stolen.split("\n"))), anchors, wait)

    def _answer(self, status: str, fence: int | None, stolen: list[str], anchors: list[str],
                wait: RootWait | None = None) -> int | None:
        """The fence of a one-call claim ('granted'), or None ('busy'; 'held': a waiting root claim holds
        it back; 'waiting': a root claim's attempt recorded it as the waiting one; 'no-anchor': the
        anchors are created again before the next attempt). Each stolen claim is counted and logged."""
        if status == "no-anchor":
            self._known_anchors.difference_update(anchors)
        if wait is not None:
            wait.waiting = status == "waiting"
        if status != "granted":
            return None
        for what in stolen:
            metrics.steals.inc()
            log.info("stole expired claim (path holder fence: %s)", what)
        assert fence is not None, "a granted claim has a fence"
        return int(fence)

    def _try_claim_naive(self, path: str, holder: str) -> int | None:
        with self.engine.begin() as conn:
            if not self._clear_related(conn, path):
                return None
        try:
            with self.engine.begin() as conn:
                return self._grant(conn, path, holder, self._anchors(path))
        except IntegrityError:
            return None

    def _clear_related(self, conn: Connection, path: str) -> bool:
        """False if a live claim on a related path exists; otherwise delete the expired ones (steals).

        A plain read first: a claim committed live means busy at once, without waiting for any lock. Only
        when there are related claims and all were committed expired does the decision need a locking read:
        it waits for any transaction that holds one of these rows (a renewal, a fence
        guard, a release) and judges the row as that transaction committed it, so a renewal in flight is
        seen as live; and a row found expired stays locked by this transaction, so no renewal can revive
        it before _steal deletes it."""
        related = self._related_claims(conn, path)
        if any(r.live for r in related):
            return False
        if related:
            related = self._lock_claims(conn, [r.scope_path for r in related], nowait=path == paths.ROOT_PATH)
            if any(r.live for r in related):
                return False
        self._steal(conn, related)
        return True

    def _related_claims(self, conn: Connection, path: str) -> list[Row]:
        """The claims on `path`, its ancestors and its descendants, as committed, each with whether it
        is live (a plain read: it waits for no lock)."""
        lease = scope_lease.c
        rows = conn.execute(
            select(lease.scope_path, lease.holder_id, lease.fence,
                   (lease.lease_expires_at > db_now(self.dialect)).label("live"))
            .where(paths.related_in_sql(lease.scope_path, path))
        ).all()
        return [r for r in rows if paths.related(r.scope_path, path)]  # SQLite LIKE ignores ASCII case

    def _lock_claims(self, conn: Connection, keys: list[str], nowait: bool = False) -> list[Row]:
        """The claims on `keys` (found by _related_claims), each read FOR UPDATE by its primary key and
        judged again: PostgreSQL re-reads a row updated while it waited, InnoDB's locking read returns
        the latest committed version (SQLite: BEGIN IMMEDIATE already excludes other writers). One
        lookup per key, not the IN/LIKE test again: InnoDB locks every row a locking read visits, and
        that test's plan (a full scan, or a range scan reading one row past its range) visits claims of
        other metalakes, so a holder frozen inside its fenced transaction anywhere would stall this
        claim while it holds its metalake's anchor (alembic/versions/0015). No related claim can appear
        meanwhile (each takes the anchor this transaction holds); a released one is simply not found.
        `nowait` (a root claim, which holds '/' FOR UPDATE and so excludes every other claim): a row locked
        by another transaction raises the lock error at once, which _try_claim answers as busy, instead
        of a wait that would hold up the claims of every metalake (alembic/versions/0020)."""
        lease = scope_lease.c
        query = select(lease.scope_path, lease.holder_id, lease.fence,
                       (lease.lease_expires_at > db_now(self.dialect)).label("live"))
        return [row for key in keys
                for row in conn.execute(query.where(lease.scope_path == key).with_for_update(nowait=nowait)).all()]

    def _steal(self, conn: Connection, related: list[Row]) -> None:
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

    def _grant(self, conn: Connection, path: str, holder: str, anchors: list[str]) -> int:
        """Take the next fence and insert the claim row. The fence is above every earlier grant on a
        related path: each grant stores its fence in its own anchor row (the metalake's, or '/' for a
        root claim), a claim under a metalake reads '/' and its metalake's row (both locked by it), and
        a root claim, which excludes every other claim, reads all of them."""
        a = claim_anchor.c
        highest = select(func.max(a.fence))
        if len(anchors) > 1:
            highest = highest.where(a.anchor.in_(anchors))
        fence = int(conn.execute(highest).scalar() or 0) + 1
        if len(anchors) > 1:
            conn.execute(update(claim_anchor).where(a.anchor == anchors[-1]).values(fence=fence))
        else:  # a granted root claim also ends its record as the waiting root claim (root_wait.py)
            earliest = func.min if self.dialect == "sqlite" else func.least
            conn.execute(update(claim_anchor).where(a.anchor == paths.ROOT_PATH).values(
                fence=fence, root_wait_until=case((a.root_waiter == holder, earliest(a.root_wait_until, db_now(
                    self.dialect))), else_=a.root_wait_until)))
        now = db_now(self.dialect)
        conn.execute(insert(scope_lease).values(
            scope_path=path, holder_id=holder, fence=fence,
            lease_expires_at=db_now_plus(self.dialect, self.ttl_ms), acquired_at=now, updated_at=now,
        ))
        return fence

    # ----------------------------------------------------------------- anchors

    @staticmethod
    def _anchors(path: str) -> list[str]:
        anchor = paths.anchor_of(path)
        return [paths.ROOT_PATH] if anchor == paths.ROOT_PATH else [paths.ROOT_PATH, anchor]

    def _ensure_anchors(self, anchors: list[str], deadline: float) -> None:
        """Create missing anchor rows in their own transaction (rows are never deleted), waiting on row
        locks at most until `deadline`, like every statement of the claim (a timeout error: busy).

        The bound matters on MariaDB: INSERT IGNORE checks for the duplicate by taking a shared lock on
        the existing row, so it waits behind any claim transaction that holds that anchor FOR UPDATE.
        PostgreSQL's ON CONFLICT DO NOTHING does not lock an existing row; it waits only for a concurrent,
        uncommitted insert of the same anchor (bounded by lock_timeout here all the same). SQLite: its
        writers wait on busy_timeout. One statement with every missing row: the MariaDB bound is put in
        front of single statements only (lock_waits.install)."""
        missing = [a for a in anchors if a not in self._known_anchors]
        if not missing:
            return
        rows = [{"anchor": a} for a in missing]
        stmt = (
            pg_insert(claim_anchor).values(rows).on_conflict_do_nothing() if self.dialect == "postgresql"
            else sqlite_insert(claim_anchor).values(rows).on_conflict_do_nothing() if self.dialect == "sqlite"
            else mysql_insert(claim_anchor).values(rows).prefix_with("IGNORE")
        )
        with self.engine.connect() as conn:
            conn.execution_options(**{lock_waits.DEADLINE: deadline})  # MariaDB: every statement below
            with conn.begin():
                if self.dialect == "postgresql":  # lock_timeout for the rest of this transaction
                    conn.execute(select(func.set_config(
                        "lock_timeout", lock_waits.pg_lock_timeout(lock_waits.left(deadline)), True)))
                conn.execute(stmt)
        self._known_anchors.update(missing)

    def _lock_anchors(self, conn: Connection, path: str, anchors: list[str]) -> str | None:
        """Lock the anchor rows: None, or why the attempt ends here: 'no-anchor' (one is missing: the
        caller creates it and retries) or 'held' (a claim under a metalake, and a waiting root claim's
        record is live: root_wait.py). The locking read of '/' waits for a root attempt's transaction and
        returns the row as it committed it (SQLite: BEGIN IMMEDIATE, no other writer meanwhile)."""
        a = claim_anchor.c
        held = func.coalesce(a.root_wait_until > db_now(self.dialect), False).label("held")
        if self.dialect == "sqlite":  # BEGIN IMMEDIATE already made this the only writer
            rows = conn.execute(select(a.anchor, held).where(a.anchor.in_(anchors))).all()
            if len(rows) != len(anchors):
                return "no-anchor"
            return "held" if len(anchors) > 1 and any(r.held for r in rows if r.anchor == paths.ROOT_PATH) else None
        root = select(a.anchor, held).where(a.anchor == paths.ROOT_PATH)
        if len(anchors) == 1:  # a root claim excludes every other claim: FOR UPDATE on '/'
            return None if conn.execute(root.with_for_update()).first() is not None else "no-anchor"
        # FOR KEY SHARE on PostgreSQL (LOCK IN SHARE MODE on MySQL): conflicts with FOR UPDATE only.
        # (key_share without read would be FOR NO KEY UPDATE, which does NOT conflict with it.)
        found = conn.execute(root.with_for_update(read=True, key_share=True)).first()
        if found is not None and found.held:
            return "held"
        return None if found is not None and conn.execute(
            select(a.anchor).where(a.anchor == anchors[1]).with_for_update()
        ).first() is not None else "no-anchor"
