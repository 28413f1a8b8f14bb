"""The fence table of a `sqlite` catalog: the highest fencing token seen per claim scope, kept in the
catalog file itself, so that the check and the change commit in one SQLite transaction (the fence
contract in connectors/base.py; the rule in connectors/fencing.py).

    gravimeta_fences(scope TEXT PRIMARY KEY, fence INTEGER NOT NULL)

`check_and_record` runs first inside every mutating call's BEGIN IMMEDIATE transaction: SQLite admits one
writer at a time, so a call that passed the check commits before any later barrier or call reads the
table, and a call that comes after a barrier with a higher token finds it and changes nothing. Scopes
compare case-sensitively (BINARY collation; no LIKE, which ignores ASCII case): descendants of P are the
keys in the range ('P/', 'P0'), '0' being the character after '/'.
"""

from __future__ import annotations

import sqlite3

from connectors.fencing import Fence, highest_conflicting, stale_fence

TABLE = "gravimeta_fences"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (scope TEXT PRIMARY KEY, fence INTEGER NOT NULL)"


def _ancestors(scope: str) -> list[str]:
    """'/m/c' -> ['/', '/m'] (as gravimeta/concurrency/paths.ancestors)."""
    if scope == "/":
        return []
    parts = scope.split("/")[1:]
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def check_and_record(conn: sqlite3.Connection, fence: Fence, catalog: str) -> None:
    """StaleFence (the caller's transaction then rolls back) when a higher token was seen on the fence's
    scope (or a related one, when fence.related); otherwise record the token. No token: nothing."""
    if fence.token is None:
        return
    if fence.related:
        prefix = "/" if fence.key == "/" else fence.key + "/"
        candidates = [fence.key, *_ancestors(fence.key)]
        rows = conn.execute(
            f"SELECT scope, fence FROM main.{TABLE} WHERE scope IN ({', '.join('?' * len(candidates))}) "
            "OR (scope >= ? AND scope < ?)",
            (*candidates, prefix, prefix[:-1] + "0"),
        ).fetchall()
    else:
        rows = conn.execute(f"SELECT scope, fence FROM main.{TABLE} WHERE scope = ?", (fence.key,)).fetchall()
    seen = highest_conflicting(rows, fence)
    if seen is not None:
        raise stale_fence(fence, seen, f"SQLite catalog {catalog}")
    conn.execute(
        f"INSERT INTO main.{TABLE} (scope, fence) VALUES (?, ?) "
        "ON CONFLICT(scope) DO UPDATE SET fence = max(fence, excluded.fence)",
        (fence.key, fence.token),
    )
