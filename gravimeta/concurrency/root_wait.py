"""A waiting root claim holds new claims back, for a bounded time (LEASE_TABLE; docs/ha.md, "Root claims").

A root claim (a metalake create, rename or drop claims '/') is related to every claim, so it is granted
only at a moment with no live claim anywhere. Under a steady churn in one metalake there is no such
moment, and it ran out of its claim timeout (503 ScopeBusy). So a root claim attempt that finds the tree
busy records itself, in the same claim transaction, as the waiting root claim: columns of the '/' anchor
row, which it holds FOR UPDATE (alembic 0021). Every other claim attempt locks that row FOR KEY SHARE
anyway; while the record is live it answers 'held' (busy) without granting. The live claims end one by
one, none replaces them, and the root claim's next attempt is granted and ends the record.

Bounds, each judged by the database clock (the node only sends durations):
  - the record lives POLL_S past the waiter's last busy attempt, which renews it: a waiter that dies or
    freezes holds new claims back for at most POLL_S;
  - one waiter's record lasts at most HOLD_SHARE of its claim timeout from its first busy attempt: a root
    claim stuck behind a claim that does not end (a frozen holder) then stops holding the others back and
    keeps trying as any claim does, until its timeout;
  - once a record has ended, the next one starts only after as long again as it lasted: waiting root
    claims hold the others back at most half of the time.
A claim held back by a waiting root claim therefore waits for the claims that were live when the root
claim began to wait, then for the root claim's own work; never longer than HOLD_SHARE of the root claim's
timeout per record. The advisory root claim (PG_ADVISORY, AUTO) records nothing: it waits in PostgreSQL's
lock queue, which holds later claims back by itself. An advisory claim under a metalake reads the record
all the same (gm_advisory_claim, before it takes a lock), because a lease root claim under AUTO try-locks
'/''s advisory key exclusively, which a churn of advisory claims holding it shared would never let it do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text, update
from sqlalchemy.exc import DBAPIError

from gravimeta.concurrency.db_clock import db_now
from gravimeta.concurrency.tables import claim_anchor
from gravimeta.failpoints import disabled_for_test
from gravimeta.store import lock_waits

log = logging.getLogger(__name__)

#: how long a waiting root claim's record lives past its last busy attempt
POLL_S = 0.5
#: the longest one waiter's record lasts, as a share of its claim timeout
HOLD_SHARE = 0.25
#: how often a waiting root claim tries again while its record holds the others back (its backoff's cap)
RETRY_S = 0.02


@dataclass
class RootWait:
    """What a root claim attempt sends about its wait (hold_ms, poll_ms) and what it learns (`waiting`:
    the attempt recorded or renewed this claim as the waiting root claim)."""

    hold_ms: int
    poll_ms: int
    waiting: bool = False

    @classmethod
    def for_attempt(cls, timeout_ms: int, left_s: float) -> RootWait:
        """The parameters of one attempt of a root claim with `timeout_ms`, `left_s` seconds before its
        deadline: the record never outlives the waiter's own deadline."""
        left_ms = max(1, int(left_s * 1000))
        hold_ms = min(int(timeout_ms * HOLD_SHARE), left_ms)
        if disabled_for_test("root_hold_cap"):  # TEST-ONLY: a record lasts until its waiter's deadline
            hold_ms = left_ms
        poll_ms = int(POLL_S * 1000)
        if disabled_for_test("root_wait_expiry"):  # TEST-ONLY: a record outlives a dead waiter until its end
            poll_ms = hold_ms
        if disabled_for_test("root_hold_back"):  # TEST-ONLY: a root claim records nothing, holds nothing back
            hold_ms = 0
        return cls(hold_ms, poll_ms)


#: SQLite (its claim is statements, in BEGIN IMMEDIATE): record or renew the waiting root claim, as
#: gm_claim_scope's gm_root_wait does on PostgreSQL and the procedure on MariaDB. Renew a record of this
#: holder before its end; else start one if none is live and the last one has rested as long as it lasted.
_SQLITE_WAIT = text("""
UPDATE gm_claim_anchor SET
    root_waiter = :holder,
    root_wait_since = CASE WHEN :mine THEN root_wait_since ELSE :now END,
    root_wait_ends = CASE WHEN :mine THEN root_wait_ends ELSE strftime('%Y-%m-%d %H:%M:%f', :now, :hold) END,
    root_wait_until = min(CASE WHEN :mine THEN root_wait_ends ELSE strftime('%Y-%m-%d %H:%M:%f', :now, :hold) END,
                          strftime('%Y-%m-%d %H:%M:%f', :now, :poll))
WHERE anchor = '/' AND (:mine OR root_wait_until IS NULL
                        OR julianday(:now) >= 2 * julianday(root_wait_until) - julianday(root_wait_since))
""")
_SQLITE_MINE = text("SELECT root_waiter = :holder AND :now < root_wait_ends FROM gm_claim_anchor WHERE anchor = '/'")
_SQLITE_NOW = text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")


def record_in_sqlite(conn: Connection, holder: str, wait: RootWait) -> None:
    """In a root claim's busy attempt on SQLite (BEGIN IMMEDIATE: no other writer meanwhile): record or
    renew this claim as the waiting root claim; `wait.waiting` says whether it is."""
    if wait.hold_ms <= 0:
        return
    now = conn.execute(_SQLITE_NOW).scalar_one()
    mine = bool(conn.execute(_SQLITE_MINE, {"holder": holder, "now": now}).scalar())
    done = conn.execute(_SQLITE_WAIT, {
        "holder": holder, "mine": mine, "now": now,
        "hold": f"{wait.hold_ms / 1000:+.3f} seconds", "poll": f"{wait.poll_ms / 1000:+.3f} seconds"})
    wait.waiting = done.rowcount == 1


def end(engine: Engine, dialect: str, holder: str) -> None:
    """The root claim gave up (ScopeBusy): end its record now, if it is still live, so that it holds
    nothing back for the rest of its POLL_S. Best effort, bounded: the record expires anyway."""
    a = claim_anchor.c
    now = db_now(dialect)
    try:
        with engine.begin() as conn:
            conn.execute(lock_waits.bounded(
                update(claim_anchor).where(a.anchor == "/", a.root_waiter == holder, a.root_wait_until > now)
                .values(root_wait_until=now), dialect, lock_waits.BACKGROUND_WAIT_S))
    except DBAPIError as exc:
        log.info("could not end the waiting root claim's record (it expires by itself): %s", exc.orig)
