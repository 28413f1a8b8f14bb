"""The fence table of a `jdbc-postgresql` catalog, in a schema gravimeta owns inside the catalog's database:

    gravimeta_fence.fences(scope text COLLATE "C" PRIMARY KEY, fence bigint NOT NULL)
    gravimeta_fence.identity(one int PRIMARY KEY CHECK (one = 1), identity text NOT NULL)

PostgreSQL runs DDL in transactions, so a mutating call is ONE transaction: its first statements check
and record the call's fence (connectors/fencing.py's rule), then come its DDL statements, then COMMIT. A
call whose token is lower than one recorded on its key or a related key changes nothing (StaleFence,
the transaction rolls back), and the record commits with the change or not at all.

Checks on related keys are ordered by row locks, taken root first (no deadlock between two calls): the
call's own key FOR UPDATE, each ancestor's row FOR SHARE, held to the commit. A call on a key and a
barrier on an ancestor or a descendant of it therefore never overlap: whichever locks second waits for
the other's commit, and then reads its token. The descendants' rows need no lock: every writer of one
holds a share lock on this key's row, which the FOR UPDATE waits out. Missing rows are inserted first
(token 0, in key order), so that there is a row to lock.

The identity is a random id made once, so that gravimeta recognises the database however it is reached
(Connector.engine_identity). The schema is made at the catalog's create (prepare_engine) and, for a
database that has none yet (the catalog's URL was changed), when its identity is first asked for.
"""

from __future__ import annotations

import uuid
from typing import Any

from connectors.fencing import Fence, highest_conflicting, stale_fence
from gravimeta import errors
from gravimeta.failpoints import disabled_for_test

SCHEMA = "gravimeta_fence"
FENCES = f"{SCHEMA}.fences"
IDENTITY = f"{SCHEMA}.identity"
CREATE = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f'CREATE TABLE IF NOT EXISTS {FENCES} (scope text COLLATE "C" PRIMARY KEY, fence bigint NOT NULL)',
    f"CREATE TABLE IF NOT EXISTS {IDENTITY} (one int PRIMARY KEY CHECK (one = 1), identity text NOT NULL)",
)
#: why a mutating call cannot run: its database has no fence table
MISSING = "42P01"


def ancestors(key: str) -> list[str]:
    """'/c1.2/s3.4/t5.6' -> ['/c1.2', '/c1.2/s3.4'] (the key's ancestors, root first)."""
    parts = key.split("/")[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def make(cur: Any) -> str:
    """Create the schema, its tables and the identity where missing (the caller commits); the identity."""
    for statement in CREATE:
        cur.execute(statement)
    cur.execute(f"INSERT INTO {IDENTITY} (one, identity) VALUES (1, %s) ON CONFLICT (one) DO NOTHING",
                (uuid.uuid4().hex,))
    cur.execute(f"SELECT identity FROM {IDENTITY} WHERE one = 1")
    return str(cur.fetchone()[0])


def identity(cur: Any) -> str | None:
    """The database's identity, or None when it has no fence schema yet."""
    cur.execute("SELECT to_regclass(%s)", (IDENTITY,))
    if cur.fetchone()[0] is None:
        return None
    cur.execute(f"SELECT identity FROM {IDENTITY} WHERE one = 1")
    row = cur.fetchone()
    return str(row[0]) if row else None


def check_and_record(cur: Any, fence: Fence, engine: str) -> None:
    """Inside the call's transaction, first: StaleFence when a higher token was recorded on the fence's
    key (or, for related fences, an ancestor or descendant); otherwise record the token. No token:
    nothing (the distributed lock is off)."""
    if fence.token is None or disabled_for_test("jdbc_fence_check"):  # TEST-ONLY when off: no check, no record
        return
    above = ancestors(fence.key)
    cur.execute(f"INSERT INTO {FENCES} (scope, fence) SELECT unnest(%s::text[]), 0 ON CONFLICT (scope) DO NOTHING",
                (sorted([*above, fence.key]),))
    seen: list[tuple[str, int]] = []
    if above:
        cur.execute(f"SELECT scope, fence FROM {FENCES} WHERE scope = ANY(%s) ORDER BY scope FOR SHARE", (above,))
        seen += cur.fetchall()
    cur.execute(f"SELECT scope, fence FROM {FENCES} WHERE scope = %s FOR UPDATE", (fence.key,))
    seen += cur.fetchall()
    cur.execute(f"SELECT scope, fence FROM {FENCES} WHERE scope >= %s AND scope < %s",
                (fence.key + "/", fence.key + "0"))
    seen += cur.fetchall()
    highest = highest_conflicting(seen, fence)
    if highest is not None:
        raise stale_fence(fence, highest, engine)
    cur.execute(f"UPDATE {FENCES} SET fence = greatest(fence, %s) WHERE scope = %s", (fence.token, fence.key))


def missing(engine: str) -> errors.EngineUnreachable:
    return errors.EngineUnreachable(
        f"{engine} has no {SCHEMA} schema, in which gravimeta checks the fences of its calls: nothing was sent. "
        "It is made when the catalog is created or its properties change; do not drop it")
