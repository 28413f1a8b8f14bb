"""The registry of a `sqlite` catalog, kept in the catalog file: which file holds each schema, and which
files are on their way in or out.

    gravimeta_schemas(name TEXT PRIMARY KEY, file TEXT NOT NULL UNIQUE)
    gravimeta_schema_files(incarnation INTEGER PRIMARY KEY AUTOINCREMENT, file TEXT NOT NULL UNIQUE,
                           state TEXT NOT NULL, since REAL NOT NULL)

Incarnations. Every create of a schema makes a new file, `<slug>-<hash>.<incarnation>.sqlite`, whose
incarnation number the catalog never hands out twice: it is the AUTOINCREMENT key of a
`gravimeta_schema_files` row, committed before the file exists (SQLite never reuses an AUTOINCREMENT key,
even after its row is deleted). So a file name is one incarnation of one schema, forever: a call that
pauses and comes back late can only touch the incarnation it saw, never the schema re-created since
under the same name. Files of the first layout (`<slug>-<hash>.sqlite`, named by the schema name alone)
keep their names: the registry names every schema's file, so they open as they are.

The life of a file, each step one transaction on the catalog file:

1. allocate: a `creating` row (the incarnation) is committed; then the file is made.
2. register (the create's fenced transaction): the `creating` row is deleted and the registry row
   inserted. A `creating` row that is gone means the sweep reclaimed the file of a create that took
   longer than STALE_CREATE_S: the create is refused and registers nothing.
3. unregister (the drop's fenced transaction): the registry row is deleted and a `dropped` row (the
   tombstone) inserted, in the same commit. Nothing is deleted in the transaction, so there is nothing
   to undo when it rolls back, and once it commits the tombstone says which file is to go.
4. sweep (right after each drop, and before each create): under the catalog's write lock, delete the
   files of the tombstones and of stale `creating` rows (never a file the registry names), then their rows.

A process that stops anywhere leaves a state the next sweep finishes: before a commit nothing happened;
after 1, a `creating` row whose file is reclaimed once stale; after 3, a tombstone; during 4, rows whose
files may already be gone (deleting a missing file is not an error).
"""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from pathlib import Path

from connectors.sqlite.paths import JOURNAL_SUFFIXES, schema_file_name
from gravimeta import errors

log = logging.getLogger(__name__)

REGISTRY = "gravimeta_schemas"
FILES = "gravimeta_schema_files"
CREATE = (
    f"CREATE TABLE IF NOT EXISTS {REGISTRY} (name TEXT PRIMARY KEY, file TEXT NOT NULL UNIQUE)",
    f"CREATE TABLE IF NOT EXISTS {FILES} (incarnation INTEGER PRIMARY KEY AUTOINCREMENT, file TEXT NOT NULL UNIQUE, "
    "state TEXT NOT NULL CHECK (state IN ('creating', 'dropped')), since REAL NOT NULL)",
)
#: a create whose file is older than this without its registry row is taken as dead, and its file swept
STALE_CREATE_S = 3600.0


def file_of(conn: sqlite3.Connection, schema: str) -> str | None:
    """The file the registry names for `schema`, or None when it is not registered."""
    row = conn.execute(f"SELECT file FROM main.{REGISTRY} WHERE name = ?", (schema,)).fetchone()
    return row[0] if row else None


def schema_file(catalog_file: Path, schema: str) -> Path | None:
    """The file of `schema` as the registry of `catalog_file` names it (read-only, as any SQLite tool
    would read it): for tools and tests, which can no longer compute a schema's file from its name."""
    conn = sqlite3.connect(f"{catalog_file.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute(f"SELECT file FROM {REGISTRY} WHERE name = ?", (schema,)).fetchone()
    finally:
        conn.close()
    return catalog_file.with_name(catalog_file.name + ".schemas") / row[0] if row else None


def allocate(conn: sqlite3.Connection, schema: str) -> str:
    """A new incarnation of `schema`, committed (its own transaction): the name of the file to make."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        placeholder = f"allocating-{uuid.uuid4().hex}"  # the name depends on the key the insert chooses
        incarnation = conn.execute(f"INSERT INTO main.{FILES} (file, state, since) VALUES (?, 'creating', ?)",
                                   (placeholder, time.time())).lastrowid
        assert incarnation is not None
        file_name = schema_file_name(schema, incarnation)
        conn.execute(f"UPDATE main.{FILES} SET file = ? WHERE incarnation = ?", (file_name, incarnation))
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:
            conn.rollback()
    return file_name


def register(conn: sqlite3.Connection, schema: str, file_name: str) -> None:
    """Inside the create's fenced transaction: `file_name` becomes the schema's file."""
    claimed = conn.execute(f"DELETE FROM main.{FILES} WHERE file = ? AND state = 'creating'", (file_name,)).rowcount
    if claimed != 1:
        raise errors.ConnectionFailed(
            f"Creating schema {schema} took longer than {STALE_CREATE_S:.0f} s; its new file was reclaimed, "
            "so nothing was created (try again)"
        )
    conn.execute(f"INSERT INTO main.{REGISTRY} (name, file) VALUES (?, ?)", (schema, file_name))


def unregister(conn: sqlite3.Connection, schema: str, file_name: str) -> None:
    """Inside the drop's fenced transaction: the schema is gone, and its file is a tombstone."""
    conn.execute(f"DELETE FROM main.{REGISTRY} WHERE name = ?", (schema,))
    conn.execute(
        f"INSERT INTO main.{FILES} (file, state, since) VALUES (?, 'dropped', ?) "
        "ON CONFLICT(file) DO UPDATE SET state = 'dropped', since = excluded.since",
        (file_name, time.time()),
    )


def abandon(conn: sqlite3.Connection, schema_dir: Path, file_name: str) -> None:
    """A create that did not register its file (refused, or the schema existed already) deletes it: the
    file is its own incarnation, which nothing else can have registered. Best effort: what is left is
    a `creating` row, which the sweep reclaims once stale."""
    try:
        remove(schema_dir, file_name)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"DELETE FROM main.{FILES} WHERE file = ? AND state = 'creating'", (file_name,))
        conn.execute("COMMIT")
    except (OSError, sqlite3.OperationalError) as exc:
        log.warning("sqlite schema file %s of an unfinished create is left to the sweep: %s", file_name, exc)
    finally:
        if conn.in_transaction:
            conn.rollback()


def sweep(conn: sqlite3.Connection, schema_dir: Path) -> int:
    """Delete the files of tombstones and of stale creates, then their rows; how many rows went. Runs
    under the catalog's write lock (BEGIN IMMEDIATE), so no create can register a file meanwhile, and
    keeps every file the registry names. Best effort: a busy catalog leaves the work to the next sweep."""
    query = (f"SELECT incarnation, file FROM main.{FILES} WHERE state = 'dropped' OR since < ? "
             f"ORDER BY incarnation")
    try:
        if not conn.execute(query, (time.time() - STALE_CREATE_S,)).fetchone():
            return 0  # the common case: nothing to do, and no write lock taken
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(query, (time.time() - STALE_CREATE_S,)).fetchall()
        registered = {r[0] for r in conn.execute(f"SELECT file FROM main.{REGISTRY}")}
        for _, file_name in rows:
            if file_name not in registered:
                remove(schema_dir, file_name)
        conn.executemany(f"DELETE FROM main.{FILES} WHERE incarnation = ?", [(r[0],) for r in rows])
        conn.execute("COMMIT")
        return len(rows)
    except (OSError, sqlite3.OperationalError) as exc:
        log.warning("sqlite schema files not swept (left to the next sweep): %s", exc)
        return 0
    finally:
        if conn.in_transaction:
            conn.rollback()


def remove(schema_dir: Path, file_name: str) -> None:
    """Delete a schema file and SQLite's files next to it; a missing one is not an error."""
    if Path(file_name).name != file_name or file_name in ("", ".", ".."):
        raise ValueError(f"not a schema file name: {file_name!r}")
    for suffix in ("", *JOURNAL_SUFFIXES):
        (schema_dir / (file_name + suffix)).unlink(missing_ok=True)
