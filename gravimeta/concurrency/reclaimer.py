"""The reclaimer: deletes claims whose lease has expired by the database clock.

Safe without any anchor lock: an expired claim already conflicts with nothing, and deleting its row
makes its (paused) holder's fence check fail, exactly like a steal. A row that is locked right now (its
holder's store transaction passed its fence check and has not ended, or a stealer or renewal is at it)
is skipped, not waited for (FOR UPDATE SKIP LOCKED): the reclaimer runs on the heartbeat, and a holder
frozen inside its transaction must not freeze it too; the next run, or the server's idle-transaction
timeout (docs/ha.md, "Bounded waits"), takes care of that row. Its statements are bounded as well
(lock_waits.BACKGROUND_WAIT_S).
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, delete, select, tuple_

from gravimeta.concurrency import metrics
from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.tables import scope_lease
from gravimeta.store import lock_waits

log = logging.getLogger(__name__)


def reclaim_expired(engine: Engine) -> int:
    """Delete every expired claim that nobody holds locked now; return how many."""
    dialect = dialect_of(engine)
    lease = scope_lease.c
    with engine.begin() as conn:
        lock_waits.bound_connection(conn, dialect, lock_waits.BACKGROUND_WAIT_S)
        expired = select(lease.scope_path, lease.holder_id, lease.fence).where(lease.lease_expires_at <= db_now(dialect))
        if dialect != "sqlite":  # SQLite has no row locks (its writers wait on busy_timeout)
            expired = lock_waits.bounded(expired.with_for_update(skip_locked=True), dialect,
                                         lock_waits.BACKGROUND_WAIT_S)
        rows = [tuple(r) for r in conn.execute(expired)]
        deleted = 0
        if rows:  # locked by us now (SQLite: the only writer); still expired, as expiry is never undone
            deleted = conn.execute(delete(scope_lease).where(
                tuple_(lease.scope_path, lease.holder_id, lease.fence).in_(rows))).rowcount
    if deleted:
        metrics.reclaimed.inc(deleted)
        log.info("reclaimed %d expired claim(s)", deleted)
    return deleted


def live_claims(engine: Engine) -> list[dict[str, object]]:
    """Every claim row with whether it is live by the database clock (for `gravimeta locks`/admin)."""
    lease = scope_lease.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(lease.scope_path, lease.holder_id, lease.fence, lease.lease_expires_at, lease.acquired_at,
                   (lease.lease_expires_at > db_now(dialect_of(engine))).label("live"))
            .order_by(lease.scope_path)
        ).all()
    return [
        {"path": r.scope_path, "holder": r.holder_id, "fence": r.fence, "expires_at": str(r.lease_expires_at),
         "acquired_at": str(r.acquired_at), "live": bool(r.live)}
        for r in rows
    ]
