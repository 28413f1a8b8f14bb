"""Altering a real SQLite table to a new definition: which columns were renamed (inferred from the two
table states the SPI passes), the in-place ALTER TABLE statements when SQLite can reach the target that
way, and otherwise a rebuild (create, copy, drop, rename) inside the caller's transaction."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from connectors.sqlite.ddl import FUNCTIONS, Shape, quote, table_ddl
from gravimeta import errors
from gravimeta.entities import Table

SQLITE_VERSION = tuple(int(p) for p in sqlite3.sqlite_version.split("."))
CAN_RENAME_COLUMN = SQLITE_VERSION >= (3, 25, 0)
CAN_DROP_COLUMN = SQLITE_VERSION >= (3, 35, 0)


def infer_renames(before: Table, after: Table) -> dict[str, str]:
    """Old name -> new name for columns renamed between `before` and `after`.

    The SPI passes the two table states, not the change list, so a rename is recognised as an
    unmatched old column and an unmatched new column in the same slot (after the same surviving
    column) with every attribute but the name equal. That is exactly what renameColumn produces. A
    rename combined with a move or a type change in the same request looks like drop+add (the column's
    data is lost), and a drop plus an add of an identical column in the same slot looks like a rename
    (the data is kept under the new name)."""
    old_names = [c.name for c in before.columns]
    new_names = [c.name for c in after.columns]
    kept = set(old_names) & set(new_names)

    def slots(names: list[str]) -> dict[str | None, list[str]]:
        result: dict[str | None, list[str]] = {}
        anchor: str | None = None
        for n in names:
            if n in kept:
                anchor = n
            else:
                result.setdefault(anchor, []).append(n)
        return result

    def attributes(table: Table, column_name: str) -> tuple[Any, ...]:
        c = table.column(column_name)
        assert c is not None
        return (c.type, c.nullable, c.auto_increment, c.default_value, c.comment)

    old_slots, new_slots = slots(old_names), slots(new_names)
    renames: dict[str, str] = {}
    for anchor, olds in old_slots.items():
        candidates = list(new_slots.get(anchor, []))
        for old in olds:
            match = next((n for n in candidates if attributes(after, n) == attributes(before, old)), None)
            if match is not None:
                renames[old] = match
                candidates = candidates[candidates.index(match) + 1:]
    return renames


def in_place_plan(table_sql: str, current: Shape, target: Shape, renames: dict[str, str]) -> list[str] | None:
    """The RENAME/DROP/ADD COLUMN statements that turn `current` into `target`, or None when SQLite
    cannot get there in place (type, nullability, default, key or order changes)."""
    if renames and not CAN_RENAME_COLUMN:
        return None
    statements = [
        f"ALTER TABLE {table_sql} RENAME COLUMN {quote(old)} TO {quote(new)}" for old, new in renames.items()
    ]
    columns = [(renames.get(c[0], c[0]), *c[1:]) for c in current[0]]
    unique = frozenset(tuple(renames.get(n, n) for n in cols) for cols in current[1])
    keyed = {c[0] for c in columns if c[4]} | {n for cols in unique for n in cols}
    target_names = {c[0] for c in target[0]}
    for column in [c for c in columns if c[0] not in target_names]:
        if not CAN_DROP_COLUMN or column[0] in keyed:
            return None
        statements.append(f"ALTER TABLE {table_sql} DROP COLUMN {quote(column[0])}")
        columns.remove(column)
    for column in target[0][len(columns):]:
        name, declared, notnull, default, pk = column
        if pk or (notnull and default in (None, "NULL")) or default in FUNCTIONS.values():
            return None  # SQLite's ADD COLUMN cannot add keys, NOT NULL without default, or non-constant defaults
        sql = f"ALTER TABLE {table_sql} ADD COLUMN {quote(name)} {declared}"
        sql += " NOT NULL" if notnull else ""
        sql += f" DEFAULT {default}" if default is not None else ""
        statements.append(sql)
        columns.append(column)
    if tuple(columns) != target[0] or unique != target[1]:
        return None
    return statements


@contextmanager
def integrity(table: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise errors.IllegalArgument(f"Cannot change table {table} with its existing rows: {exc}") from exc


def rebuild(conn: sqlite3.Connection, after: Table, real_names: list[str], renames: dict[str, str]) -> None:
    """Create the target table under a temporary name, copy the kept columns, drop the old, rename."""
    temporary = f"gravimeta_rebuild_{uuid.uuid4().hex}"
    conn.execute(table_ddl("s0", Table(temporary, after.columns, indexes=after.indexes)))
    source_of = {renames.get(n, n): n for n in real_names}
    pairs = [(c.name, source_of[c.name]) for c in after.columns if c.name in source_of]
    if pairs:
        conn.execute(
            f"INSERT INTO s0.{quote(temporary)} ({', '.join(quote(n) for n, _ in pairs)}) "
            f"SELECT {', '.join(quote(o) for _, o in pairs)} FROM s0.{quote(after.name)}"
        )
    conn.execute(f"DROP TABLE s0.{quote(after.name)}")
    conn.execute(f"ALTER TABLE s0.{quote(temporary)} RENAME TO {quote(after.name)}")
