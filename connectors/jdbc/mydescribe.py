"""What a MySQL/MariaDB server holds, as Gravitino's MySQL catalog describes it (through Connector/J's
metadata, read here from information_schema): databases as schemas, their base tables, and each table's
columns, comment, primary and unique keys and properties (`engine`, and `auto-increment-offset`, the
next auto-increment value, for a table that has one).

Schemas: every database but information_schema, mysql, sys, performance_schema and gravimeta's fence
databases. information_schema compares names without regard to case; names here are matched exactly.
Besides the Gravitino view, a description keeps what a MODIFY COLUMN must write again to keep a column
as it is (its type as declared, default, ON UPDATE, character set and collation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connectors.jdbc import defaults, mytypes
from connectors.jdbc.myfences import DEFAULT_DATABASE
from connectors.jdbc.sqltext import without_gravitino_id
from gravimeta.entities import Column, Schema, Table

SYSTEM_SCHEMAS = frozenset({"information_schema", "mysql", "sys", "performance_schema"})


@dataclass
class EngineColumn:
    """A column as the engine declares it: what MODIFY COLUMN needs to keep it."""

    column_type: str
    default_sql: str | None  # None: no DEFAULT clause
    on_update: str | None
    charset: str | None
    collation: str | None
    generated: bool
    described: Column


@dataclass
class Described:
    table: Table
    columns: dict[str, EngineColumn] = field(default_factory=dict)


def _mariadb(cur: Any) -> bool:
    cur.execute("SELECT VERSION()")
    return "mariadb" in str(cur.fetchone()[0]).lower()


def hidden(name: str, fence_database: str) -> bool:
    return name.lower() in SYSTEM_SCHEMAS or name in (fence_database, DEFAULT_DATABASE)


def list_schemas(cur: Any, fence_database: str) -> list[str]:
    cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
    return sorted(str(row[0]) for row in cur.fetchall() if not hidden(str(row[0]), fence_database))


def schema_exists(cur: Any, name: str, fence_database: str) -> bool:
    if hidden(name, fence_database):
        return False
    cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (name,))
    return any(str(row[0]) == name for row in cur.fetchall())


def list_tables(cur: Any, schema: str) -> list[str]:
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                "AND TABLE_TYPE = 'BASE TABLE'", (schema,))
    return sorted(str(name) for found, name in cur.fetchall() if str(found) == schema)


def table_row(cur: Any, schema: str, name: str) -> tuple[Any, ...] | None:
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COMMENT, ENGINE, AUTO_INCREMENT FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND TABLE_TYPE = 'BASE TABLE'", (schema, name))
    return next((row for row in cur.fetchall() if (str(row[0]), str(row[1])) == (schema, name)), None)


def load_schema(name: str) -> Schema:
    """A MySQL database keeps no comment Gravitino reads, and no properties."""
    return Schema(name)


def describe(cur: Any, schema: str, name: str, row: tuple[Any, ...]) -> Described:
    """The table `schema`.`name`, whose information_schema.TABLES row is `row`."""
    mariadb = _mariadb(cur)
    _, _, comment, engine, auto_increment = row
    properties = {"engine": str(engine)} if engine else {}
    if auto_increment is not None:
        properties["auto-increment-offset"] = str(auto_increment)
    table = Table(name, [], comment=without_gravitino_id(comment), properties=properties)
    described = Described(table)
    cur.execute(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, "
        "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT, "
        "CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (schema, name))
    for (found_schema, found_table, column, data_type, column_type, length, precision, scale, dt_precision, nullable,
         default, extra, column_comment, charset, collation) in cur.fetchall():
        if (str(found_schema), str(found_table)) != (schema, name):
            continue
        extra = str(extra or "")
        generated = "GENERATED" in extra.upper() and "DEFAULT_GENERATED" not in extra.upper() or \
            extra.upper() in ("VIRTUAL", "PERSISTENT", "STORED")
        kind = mytypes.from_mysql(str(data_type), str(column_type), length, precision, scale, dt_precision)
        is_nullable = str(nullable).upper() == "YES"
        text = None if default is None else str(default)
        value = None if generated else defaults.from_mysql(
            text, kind, "DEFAULT_GENERATED" in extra.upper(), is_nullable, mariadb)
        gravitino = Column(str(column), kind, without_gravitino_id(column_comment), is_nullable,
                           auto_increment="auto_increment" in extra.lower(), default_value=value)
        table.columns.append(gravitino)
        on_update = extra[extra.lower().index("on update"):] if "on update" in extra.lower() else None
        described.columns[gravitino.name] = EngineColumn(
            str(column_type), _default_sql(text, extra, mariadb), on_update, charset, collation, generated, gravitino)
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME "
                "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                "ORDER BY INDEX_NAME, SEQ_IN_INDEX", (schema, name))
    keys: dict[str, list[str | None]] = {}
    for found_schema, found_table, index, non_unique, _, column in cur.fetchall():
        if (str(found_schema), str(found_table)) == (schema, name) and int(non_unique) == 0:
            keys.setdefault(str(index), []).append(None if column is None else str(column))
    for index, columns in sorted(keys.items(), key=lambda item: (item[0] != "PRIMARY", item[0])):
        if None in columns:
            continue  # over an expression: no Gravitino index describes it
        table.indexes.append({"indexType": "PRIMARY_KEY" if index == "PRIMARY" else "UNIQUE_KEY", "name": index,
                              "fieldNames": [[c] for c in columns]})
    return described


def _default_sql(text: str | None, extra: str, mariadb: bool) -> str | None:
    """The DEFAULT clause's SQL that keeps a column's default as it is."""
    if text is None:
        return None
    if mariadb or text.upper() == "NULL":
        return text  # MariaDB writes literals quoted and expressions as they are: SQL already
    if "DEFAULT_GENERATED" in extra.upper():
        return text if text.upper().startswith("CURRENT_TIMESTAMP") else f"({text})"
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
