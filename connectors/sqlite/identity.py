"""The identity of a `sqlite` catalog file: a random id kept in the file itself, made when the file is
prepared (or, for a file made before identities, when it is first asked), never changed after. One file
has one, by whatever path it is reached (a hard link, a bind mount, a move), so gravimeta recognises the
engine by it where the paths do not resolve to one (Connector.engine_identity).

    gravimeta_identity(one INTEGER PRIMARY KEY CHECK (one = 1), identity TEXT NOT NULL)
"""

from __future__ import annotations

import sqlite3
import uuid

TABLE = "gravimeta_identity"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (one INTEGER PRIMARY KEY CHECK (one = 1), identity TEXT NOT NULL)"


def read(conn: sqlite3.Connection) -> str | None:
    row = conn.execute(f"SELECT identity FROM main.{TABLE} WHERE one = 1").fetchone()
    return str(row[0]) if row else None


def read_or_make(conn: sqlite3.Connection) -> str:
    """The file's identity; made (its own write transaction) when it has none yet. Outside a transaction."""
    found = read(conn)
    if found is not None:
        return found  # the common case: a read, no write lock
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"INSERT OR IGNORE INTO main.{TABLE} (one, identity) VALUES (1, ?)", (uuid.uuid4().hex,))
        found = read(conn)
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:
            conn.rollback()
    assert found is not None
    return found
