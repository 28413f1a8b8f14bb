"""The fences of a `jdbc-mysql` catalog, in a database gravimeta owns on the server (`gravimeta_fence`, or
the catalog's `gravimeta.fence-database`):

    gravimeta_fences(scope VARBINARY(3072) PRIMARY KEY, fence BIGINT NOT NULL)
    gravimeta_identity(one INT PRIMARY KEY, identity VARCHAR(64) NOT NULL)

MySQL and MariaDB commit DDL implicitly, so a check cannot commit with the change. Instead every
mutating call and every barrier of a catalog holds the catalog's named lock (GET_LOCK on a name derived
from the catalog's part of the fence key) from before its check until its DDL has returned:

    GET_LOCK -> check and record the fence (one InnoDB transaction) -> the DDL -> RELEASE_LOCK

So a barrier cannot run between a call's check and its DDL: it waits for the lock, and when it gets it
the call's DDL has landed (before the barrier, which the repair's observation then sees) or the call's
session is gone (its lock is released only when its session ends, and a session cannot send anything
after that). A call that comes to its check after the barrier reads the barrier's token and is refused.
What can hold the lock for long is a call paused after its check: its session's wait_timeout is what
was left of its claim (at least one second, MySQL counts whole seconds), after which the server ends the
session and releases the lock, so a barrier waits at most that long behind it. The remaining window and
its measurement: docs/engines.md.

The lock is the catalog's, not the object's: named locks have no shared mode, so a lock per key could
not order a call on a schema with a barrier on its catalog. Calls of one catalog therefore run their
DDL one at a time; different catalogs do not wait for each other.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from connectors.fencing import Fence, highest_conflicting, stale_fence
from connectors.jdbc.pgfences import ancestors
from connectors.jdbc.sqltext import my_ident
from gravimeta.failpoints import disabled_for_test

DEFAULT_DATABASE = "gravimeta_fence"
FENCES, IDENTITY = "gravimeta_fences", "gravimeta_identity"


def lock_name(key: str) -> str:
    """The named lock of the catalog a fence key belongs to (its first part); 64 characters at most."""
    catalog = "/" + key.strip("/").split("/", 1)[0]
    return "gravimeta:" + hashlib.sha256(catalog.encode("utf-8")).hexdigest()[:48]


def make(cur: Any, database: str) -> str:
    """The fence database, its tables and the server's identity where missing; the identity."""
    db = my_ident(database)
    cur.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {db}.{FENCES} (scope VARBINARY(3072) PRIMARY KEY, "
                "fence BIGINT NOT NULL) ENGINE=InnoDB")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {db}.{IDENTITY} (one INT PRIMARY KEY, identity VARCHAR(64) NOT NULL) "
                "ENGINE=InnoDB")
    cur.execute(f"INSERT IGNORE INTO {db}.{IDENTITY} (one, identity) VALUES (1, %s)", (uuid.uuid4().hex,))
    cur.execute(f"SELECT identity FROM {db}.{IDENTITY} WHERE one = 1")
    return str(cur.fetchone()[0])


def identity(cur: Any, database: str) -> str | None:
    cur.execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (database, IDENTITY))
    if cur.fetchone() is None:
        return None
    cur.execute(f"SELECT identity FROM {my_ident(database)}.{IDENTITY} WHERE one = 1")
    row = cur.fetchone()
    return str(row[0]) if row else None


def exists(cur: Any, database: str) -> bool:
    cur.execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (database, FENCES))
    return cur.fetchone() is not None


def check_and_record(cur: Any, database: str, fence: Fence, engine: str) -> None:
    """Under the catalog's named lock: StaleFence when a higher token was recorded on the key or a
    related key; otherwise record the token (committed before the DDL that follows)."""
    if fence.token is None or disabled_for_test("jdbc_fence_check"):  # TEST-ONLY when off: no check, no record
        return
    table = f"{my_ident(database)}.{FENCES}"
    keys = [*ancestors(fence.key), fence.key]
    cur.execute("BEGIN")
    try:
        # no locking read: the named lock orders the calls of this catalog, and other catalogs' keys are
        # other rows (a FOR UPDATE over the range would take gap locks, and deadlock with their inserts)
        cur.execute(f"SELECT CAST(scope AS CHAR CHARACTER SET utf8mb4), fence FROM {table} WHERE scope IN "
                    f"({', '.join(['%s'] * len(keys))}) OR (scope >= %s AND scope < %s)",
                    (*keys, fence.key + "/", fence.key + "0"))
        highest = highest_conflicting([(str(k), int(f)) for k, f in cur.fetchall()], fence)
        if highest is not None:
            raise stale_fence(fence, highest, engine)
        cur.execute(f"INSERT INTO {table} (scope, fence) VALUES (%s, %s) "
                    "ON DUPLICATE KEY UPDATE fence = GREATEST(fence, VALUES(fence))", (fence.key, fence.token))
        cur.execute("COMMIT")
    except BaseException:
        try:
            cur.execute("ROLLBACK")
        except Exception:  # the connection is gone (the caller invalidates it): the original error stands
            pass
        raise
