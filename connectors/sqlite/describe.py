"""What a schema file's tables look like to Gravitino: a table made outside gravimeta (or by it) read back
from SQLite's own description (PRAGMA table_xinfo, index_list), for the import of engine objects.

Types. SQLite keeps each column's declared type as written. The five names gravimeta itself declares
(ddl.GRAVITINO_TYPES' affinities) map back to one Gravitino type each: INTEGER -> long, REAL -> double,
TEXT -> string, BLOB -> binary (and a column without a declared type, which SQLite stores as BLOB, ->
binary). Any other declared type (VARCHAR(20), NUMERIC, DATETIME, ...) is reported as Gravitino's
`unparsed` type with the text SQLite has, as Gravitino's JDBC catalogs report a type they do not map.
Nullability is SQLite's NOT NULL; the primary key and the UNIQUE constraints become Gravitino indexes.
Defaults are not read back (SQLite keeps them as SQL text); comments and properties do not exist in SQLite.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from connectors.sqlite.ddl import affinity, quote
from gravimeta import errors
from gravimeta.entities import Column, Table

#: declared types that are exactly one of gravimeta's affinities, and the Gravitino type each reads as
DECLARED_TYPES = {"INTEGER": "long", "REAL": "double", "TEXT": "string", "BLOB": "binary", "": "binary"}


def gravitino_type(declared: str) -> Any:
    """The Gravitino type JSON for an SQLite declared type."""
    known = DECLARED_TYPES.get(" ".join(declared.upper().split()))
    return known if known is not None else {"type": "unparsed", "unparsedType": declared}


def described_type(gravitino: Any) -> Any:
    """How describe_table reports a column gravimeta declared with Gravitino type `gravitino`: the
    affinity it declares, read back (integer -> INTEGER -> long, boolean -> NUMERIC -> unparsed NUMERIC).
    A type SQLite cannot hold (never declared by gravimeta) is returned as it is."""
    try:
        return gravitino_type(affinity(gravitino))
    except errors.IllegalArgument:
        return gravitino


def describe_table(conn: sqlite3.Connection, alias: str, name: str) -> Table:
    """The table `name` of attached database `alias` (it must exist)."""
    columns, primary = [], []
    for row in conn.execute(f"PRAGMA {alias}.table_xinfo({quote(name)})"):
        _, column, declared, notnull, _, pk, hidden = row[:7]
        if hidden:  # a generated or virtual table's hidden column: not part of the table's definition
            continue
        columns.append(Column(column, gravitino_type(declared or ""), nullable=not notnull))
        if pk:
            primary.append((pk, column))
    indexes: list[dict[str, Any]] = []
    if primary:
        indexes.append({"indexType": "PRIMARY_KEY", "name": "PRIMARY",
                        "fieldNames": [[column] for _, column in sorted(primary)]})
    for row in conn.execute(f"PRAGMA {alias}.index_list({quote(name)})"):
        index_name, unique, origin = row[1], row[2], row[3]
        if unique and origin == "u":
            info = sorted(conn.execute(f"PRAGMA {alias}.index_info({quote(index_name)})").fetchall())
            indexes.append({"indexType": "UNIQUE_KEY", "name": None if index_name.startswith("sqlite_") else index_name,
                            "fieldNames": [[r[2]] for r in info]})
    return Table(name, columns, indexes=indexes)
