"""The reclaimer: deletes claims whose lease has expired by the database clock.

Safe without any anchor lock: an expired claim already conflicts with nothing, and deleting its row
makes its (paused) holder's fence check fail, exactly like a steal. If that holder's store transaction
already passed its fence check and holds the row lock, the delete waits for it to finish.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, delete, select

from gravimeta.concurrency import metrics, waiter_line
from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.tables import scope_lease

log = logging.getLogger(__name__)


def reclaim_expired(engine: Engine) -> int:
    """Delete every expired claim (and every expired waiter's ticket); return how many claims."""
    with engine.begin() as conn:
        deleted = conn.execute(
            delete(scope_lease).where(scope_lease.c.lease_expires_at <= db_now(dialect_of(engine)))
        ).rowcount
        waiter_line.delete_expired(conn, dialect_of(engine))
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
