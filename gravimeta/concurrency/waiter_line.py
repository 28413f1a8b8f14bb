"""The line of claim waiters (gm_claim_waiter, alembic revision 0005): first come, first served.

A claim attempt that finds its scope busy takes a ticket (an increasing id) or renews the one it has;
a claim is granted only when no live claim AND no older live ticket exists on a related path. So a
replica that has just released a scope cannot take it again ahead of the replicas that were waiting
for it. Each attempt learns how many waiters are ahead of it; the first two in line poll often, the
others seldom (poll_cap_s), so the next in line is awake when the scope comes free. A ticket expires
WAIT_TTL_MS after its last renewal: a waiter that died stops blocking the line then (one that gives
up deletes its ticket at once).

These are the statements of the claim transaction on MariaDB/MySQL and SQLite, run after the anchor
locks (which serialize every claim attempt on related paths, tickets included). On PostgreSQL the
function gm_claim_scope does the same in SQL.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, and_, delete, insert, or_, select, update

from gravimeta.concurrency import paths
from gravimeta.concurrency.db_clock import db_now, db_now_plus
from gravimeta.concurrency.tables import claim_waiter

#: how long a ticket outlives its last renewal; waiters renew it at every poll (at most every 100 ms)
WAIT_TTL_MS = 1000


def poll_cap_s(ahead: int) -> float:
    """The longest sleep between two polls of a waiter with `ahead` older related waiters: 10 ms for
    the first two in line (the second must be awake when the head's operation ends, or the scope
    stays free while it sleeps and nobody behind may take it), 100 ms for the rest."""
    return 0.01 if ahead <= 1 else 0.1


def ticket_of(conn: Connection, holder: str) -> int | None:
    return conn.execute(select(claim_waiter.c.id).where(claim_waiter.c.holder_id == holder)).scalar_one_or_none()


def others_ahead(conn: Connection, dialect: str, path: str, holder: str, ticket: int | None) -> int:
    """How many live tickets of other waiters on related paths are older than `ticket` (or exist at
    all, for a newcomer without one)."""
    w = claim_waiter.c
    query = select(w.scope_path).where(paths.related_in_sql(w.scope_path, path), w.expires_at > db_now(dialect), w.holder_id != holder)
    if ticket is not None:
        query = query.where(w.id < ticket)
    return sum(paths.related(p, path) for p in conn.execute(query).scalars())  # SQLite LIKE ignores case


def wait_in_line(conn: Connection, dialect: str, path: str, holder: str, ticket: int | None,
                 ttl_ms: int = WAIT_TTL_MS) -> None:
    """Take a ticket, or renew the one this waiter has, live for `ttl_ms`."""
    expires = db_now_plus(dialect, ttl_ms)
    if ticket is None:
        conn.execute(insert(claim_waiter).values(holder_id=holder, scope_path=path, expires_at=expires))
    else:
        conn.execute(update(claim_waiter).where(claim_waiter.c.holder_id == holder).values(expires_at=expires))


def leave_line(conn: Connection, dialect: str, path: str, holder: str) -> None:
    """On a grant: delete this waiter's ticket and the expired tickets on related paths."""
    w = claim_waiter.c
    conn.execute(delete(claim_waiter).where(
        or_(w.holder_id == holder, and_(paths.related_in_sql(w.scope_path, path), w.expires_at <= db_now(dialect)))
    ))


def give_up(engine: Engine, holder: str) -> None:
    """A waiter that stops waiting (timeout) leaves the line at once; never raises (the ticket expires)."""
    try:
        with engine.begin() as conn:
            conn.execute(delete(claim_waiter).where(claim_waiter.c.holder_id == holder))
    except Exception:  # noqa: BLE001 - the ticket expires after WAIT_TTL_MS anyway
        pass


def delete_expired(conn: Connection, dialect: str) -> int:
    """The reclaimer's part: every expired ticket."""
    return conn.execute(delete(claim_waiter).where(claim_waiter.c.expires_at <= db_now(dialect))).rowcount
