"""Gravitino tables as SQLite DDL: quoting, column types (SQLite affinities), representable defaults,
PRIMARY KEY / UNIQUE from the table's indexes, and a table's *shape* (what SQLite reports about it), by
which the connector recognises a table it already made."""

from __future__ import annotations

import functools
import re
import sqlite3
from typing import Any

from gravimeta import errors
from gravimeta.entities import Column, Table


def quote(identifier: str) -> str:
    """An SQL identifier for any string: double quotes, inner quotes doubled."""
    if "\x00" in identifier:
        raise errors.IllegalArgument("Names must not contain NUL characters")
    return '"' + identifier.replace('"', '""') + '"'


def literal(value: str) -> str:
    if "\x00" in value:
        raise errors.IllegalArgument("Default values must not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


# ------------------------------------------------------------------ types: one fixed table
# Every declared type in gravimeta's DDL comes from these tables, never from request text, so a type
# cannot smuggle a constraint, a key or a generated column into a CREATE TABLE (an unparsed type
# "TEXT CHECK (0)", "INTEGER PRIMARY KEY", "TEXT REFERENCES x" or "TEXT AS (1)" is refused).

#: Gravitino type (its normalised wire form, without parameters) -> SQLite declared type (an affinity)
GRAVITINO_TYPES = {
    **{t: "INTEGER" for t in ("byte", "short", "integer", "long")},
    **{f"{t} unsigned": "INTEGER" for t in ("byte", "short", "integer", "long")},
    "float": "REAL", "double": "REAL",
    "boolean": "NUMERIC", "decimal": "NUMERIC",
    "binary": "BLOB", "fixed": "BLOB", "null": "BLOB",
    **{t: "TEXT" for t in ("string", "varchar", "char", "date", "time", "timestamp", "timestamp_tz", "interval_year",
                           "interval_day", "uuid", "variant", "geometry", "geography")},
    # complex types are stored as JSON text
    **{t: "TEXT" for t in ("list", "map", "struct", "union", "external")},
}
#: unparsed type names -> their affinity: the examples of SQLite's documentation ("Datatypes In SQLite",
#: 3.1.1), each optionally with one or two numeric parameters, e.g. VARCHAR(20) or DECIMAL(10,5)
UNPARSED_TYPES = {
    **{t: "INTEGER" for t in ("INT", "INTEGER", "TINYINT", "SMALLINT", "MEDIUMINT", "BIGINT", "UNSIGNED BIG INT",
                              "INT2", "INT8")},
    **{t: "TEXT" for t in ("CHARACTER", "VARCHAR", "VARYING CHARACTER", "NCHAR", "NATIVE CHARACTER", "NVARCHAR",
                           "TEXT", "CLOB")},
    "BLOB": "BLOB",
    **{t: "REAL" for t in ("REAL", "DOUBLE", "DOUBLE PRECISION", "FLOAT")},
    **{t: "NUMERIC" for t in ("NUMERIC", "DECIMAL", "BOOLEAN", "DATE", "DATETIME")},
}
_UNPARSED = re.compile(r"^([A-Za-z][A-Za-z0-9 ]*?)\s*(\(\s*\d{1,9}\s*(,\s*\d{1,9}\s*)?\))?$")


def affinity(gravitino_type: Any) -> str:
    """The SQLite declared type for a Gravitino type, from the fixed tables above (IllegalArgument when
    neither has it)."""
    if isinstance(gravitino_type, dict):
        kind = gravitino_type.get("type")
        if kind == "unparsed":
            raw = str(gravitino_type.get("unparsedType", ""))
            match = _UNPARSED.match(raw.strip())
            declared = UNPARSED_TYPES.get(" ".join(match.group(1).upper().split())) if match else None
            if declared is None:
                raise errors.IllegalArgument(
                    f"Unparsed type {raw[:60]!r} is not an SQLite type name; use one of "
                    f"{', '.join(sorted(UNPARSED_TYPES))} (optionally with numeric parameters), or a Gravitino type"
                )
            return declared
        name = kind
    else:
        name = str(gravitino_type).split("(", 1)[0]
    declared = GRAVITINO_TYPES.get(str(name))
    if declared is None:
        raise errors.IllegalArgument(f"Type {str(gravitino_type)[:60]!r} has no SQLite counterpart")
    return declared


_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$")
FUNCTIONS = {"current_timestamp": "CURRENT_TIMESTAMP", "now": "CURRENT_TIMESTAMP",
              "current_date": "CURRENT_DATE", "current_time": "CURRENT_TIME"}


def default_sql(column: Column) -> str | None:
    """The DEFAULT clause body, or None when the default is not representable in SQLite (it stays in
    the EntityStore only)."""
    value = column.default_value
    if not isinstance(value, dict):
        return None
    if value.get("type") == "literal":
        text = value.get("value")
        if text is None:
            return "NULL"
        kind = affinity(column.type)
        if column.type == "boolean" and text.lower() in ("true", "false"):
            return "1" if text.lower() == "true" else "0"
        if kind in ("INTEGER", "REAL", "NUMERIC") and _NUMBER.match(text):
            return text
        return literal(text)
    if value.get("type") == "function" and not value.get("funcArgs"):
        return FUNCTIONS.get(str(value.get("funcName", "")).lower())
    return None


def _index_columns(index: dict[str, Any]) -> list[str]:
    return [path[0] for path in index.get("fieldNames", [])]


def keys(table: Table) -> tuple[list[str], list[tuple[str | None, list[str]]]]:
    primary = [i for i in table.indexes if str(i.get("indexType", "")).upper() == "PRIMARY_KEY"]
    if len(primary) > 1:
        raise errors.IllegalArgument(f"Table {table.name} declares more than one primary key")
    unique = [(i.get("name"), _index_columns(i)) for i in table.indexes
              if str(i.get("indexType", "")).upper() == "UNIQUE_KEY"]
    return (_index_columns(primary[0]) if primary else []), unique


def table_ddl(alias: str, table: Table) -> str:
    """CREATE TABLE for `table` in attached database `alias`; IllegalArgument for anything SQLite cannot
    hold (check_table)."""
    check_names(table)
    pk, unique = keys(table)
    primary = next((i for i in table.indexes if str(i.get("indexType", "")).upper() == "PRIMARY_KEY"), None)
    inline_pk = None
    for column in table.columns:
        if column.auto_increment:
            if pk != [column.name] or affinity(column.type) != "INTEGER":
                raise errors.IllegalArgument(
                    f"Column {column.name}: SQLite supports auto-increment only on a single-column integer primary key"
                )
            inline_pk = column.name
    parts = []
    for column in table.columns:
        sql = f"{quote(column.name)} {affinity(column.type)}"
        if column.name == inline_pk:
            sql += " PRIMARY KEY AUTOINCREMENT"
        if not column.nullable:
            sql += " NOT NULL"
        default = default_sql(column)
        if default is not None:
            sql += f" DEFAULT {default}"
        parts.append(sql)
    if pk and inline_pk is None:
        name = f"CONSTRAINT {quote(primary['name'])} " if primary and primary.get("name") else ""
        parts.append(f"{name}PRIMARY KEY ({', '.join(quote(c) for c in pk)})")
    for index_name, columns in unique:
        name = f"CONSTRAINT {quote(index_name)} " if index_name else ""
        parts.append(f"{name}UNIQUE ({', '.join(quote(c) for c in columns)})")
    ddl = f"CREATE TABLE {alias}.{quote(table.name)} ({', '.join(parts)})"
    if len(ddl.encode()) > _limit(sqlite3.SQLITE_LIMIT_SQL_LENGTH):
        raise errors.IllegalArgument(f"Table {table.name}: its CREATE TABLE statement is longer than SQLite accepts")
    return ddl


def check_table(table: Table) -> None:
    """IllegalArgument when SQLite cannot hold `table` as gravimeta would create it: reserved or
    case-insensitively duplicate names, too many columns, types outside the fixed tables, more than one
    primary key, auto-increment anywhere but a single-column integer primary key, an over-long statement.
    Runs before any engine call or store change (the dispatchers call it through Connector.check_table)."""
    table_ddl("s0", table)


def check_names(table: Table) -> None:
    if table.name.lower().startswith("sqlite_"):
        raise errors.IllegalArgument(f"Table name {table.name!r}: SQLite reserves names starting with sqlite_")
    limit = _limit(sqlite3.SQLITE_LIMIT_COLUMN)
    if len(table.columns) > limit:
        raise errors.IllegalArgument(
            f"Table {table.name} has {len(table.columns)} columns; an SQLite table holds at most {limit}"
        )
    seen: dict[str, str] = {}
    for column in table.columns:
        folded = fold(column.name)
        if folded in seen:
            raise errors.IllegalArgument(
                f"Table {table.name}: columns {seen[folded]!r} and {column.name!r} differ only in case, and SQLite "
                "compares column names case-insensitively"
            )
        seen[folded] = column.name


_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(name: str) -> str:
    """A name as SQLite compares identifiers: ASCII letters without case, every other character as is."""
    return name.translate(_ASCII_UPPER)


@functools.cache
def _limit(which: int) -> int:
    """A limit of this SQLite library (e.g. SQLITE_LIMIT_COLUMN, 2000 unless compiled otherwise)."""
    conn = sqlite3.connect(":memory:")
    try:
        return conn.getlimit(which)
    finally:
        conn.close()


# A table's shape as SQLite reports it: columns (name, declared type, notnull, default, pk ordinal)
# and its UNIQUE column sets. Two tables with the same shape are the same table for gravimeta.
Shape = tuple[tuple[tuple[str, str, int, str | None, int], ...], frozenset[tuple[str, ...]]]


def desired_shape(table: Table) -> Shape:
    pk, unique = keys(table)
    columns = tuple(
        (c.name, affinity(c.type), int(not c.nullable), default_sql(c), pk.index(c.name) + 1 if c.name in pk else 0)
        for c in table.columns
    )
    return columns, frozenset(tuple(cols) for _, cols in unique)


def real_shape(conn: sqlite3.Connection, alias: str, name: str) -> Shape:
    columns = tuple(
        (row[1], row[2], row[3], row[4], row[5])
        for row in conn.execute(f"PRAGMA {alias}.table_xinfo({quote(name)})")
        if row[6] == 0
    )
    unique = set()
    for row in conn.execute(f"PRAGMA {alias}.index_list({quote(name)})"):
        if row[2] and row[3] == "u":
            info = conn.execute(f"PRAGMA {alias}.index_info({quote(row[1])})").fetchall()
            unique.add(tuple(r[2] for r in sorted(info)))
    return columns, frozenset(unique)


def sqlite_affinity(declared: str) -> str:
    """The affinity SQLite gives a declared type (its rules, "Datatypes In SQLite" 3.1)."""
    text = declared.upper()
    if "INT" in text:
        return "INTEGER"
    if any(k in text for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in text or not text.strip():
        return "BLOB"
    if any(k in text for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def same_by_affinity(a: Shape, b: Shape) -> bool:
    """Whether two shapes differ at most in declared type names of one affinity (VARCHAR(20) and TEXT): a
    table made outside gravimeta, imported with its own type names, already holds what gravimeta would
    write, so an alter that changes nothing else must leave it alone."""
    def normal(shape: Shape) -> Shape:
        columns, unique = shape
        return tuple((n, sqlite_affinity(t), nn, d, pk) for n, t, nn, d, pk in columns), unique

    return normal(a) == normal(b)
