"""What a PostgreSQL database holds, as Gravitino's PostgreSQL catalog describes it (through pgjdbc's
metadata, read here from pg_catalog directly): schemas, their tables, and each table's columns, comment,
primary and unique keys.

Schemas: every schema but pg_catalog, information_schema, pg_toast, the temporary ones and gravimeta's
fence schema. Tables: ordinary and partitioned tables (not views). A column: its type (pgtypes.py; an
int column with a nextval() default is pgjdbc's `serial`, `bigserial`, `smallserial`, so external), NOT
NULL, its default (defaults.py), comment, and auto-increment for an identity column or a nextval()
default. Keys: the primary key and the unique constraints by their names, and unique indexes over plain
columns that back no constraint. Comments lose the id Gravitino writes into them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connectors.jdbc import defaults, pgtypes
from connectors.jdbc.pgfences import SCHEMA as FENCE_SCHEMA
from connectors.jdbc.sqltext import without_gravitino_id
from gravimeta.entities import Column, Schema, Table

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
_SERIALS = {"int2": "smallserial", "int4": "serial", "int8": "bigserial"}


@dataclass
class Described:
    """A table as the engine has it, with what the DDL needs beyond the Gravitino view."""

    table: Table
    oid: int
    #: index key name -> whether it is a constraint (dropped with DROP CONSTRAINT) or a unique index
    constraints: dict[str, bool] = field(default_factory=dict)


def list_schemas(cur: Any) -> list[str]:
    cur.execute("SELECT nspname FROM pg_namespace WHERE nspname <> ALL(%s) AND nspname !~ '^pg_(toast_)?temp_' "
                "ORDER BY nspname", ([*SYSTEM_SCHEMAS, FENCE_SCHEMA],))
    return [row[0] for row in cur.fetchall()]


def schema_oid(cur: Any, name: str) -> int | None:
    """The schema's oid; None when there is none (or it is gravimeta's own)."""
    if name == FENCE_SCHEMA:
        return None
    cur.execute("SELECT oid FROM pg_namespace WHERE nspname = %s", (name,))
    row = cur.fetchone()
    return int(row[0]) if row else None


def load_schema(cur: Any, oid: int, name: str) -> Schema:
    cur.execute("SELECT obj_description(%s::oid, 'pg_namespace')", (oid,))
    return Schema(name, comment=without_gravitino_id(cur.fetchone()[0]))


def list_tables(cur: Any, schema: int) -> list[str]:
    cur.execute("SELECT relname FROM pg_class WHERE relnamespace = %s AND relkind IN ('r', 'p') ORDER BY relname",
                (schema,))
    return [row[0] for row in cur.fetchall()]


def table_oid(cur: Any, schema: int, name: str) -> int | None:
    cur.execute("SELECT oid FROM pg_class WHERE relnamespace = %s AND relname = %s AND relkind IN ('r', 'p')",
                (schema, name))
    row = cur.fetchone()
    return int(row[0]) if row else None


def describe(cur: Any, oid: int, name: str) -> Described:
    """The table with oid `oid` (it exists)."""
    cur.execute("SELECT obj_description(%s::oid, 'pg_class')", (oid,))
    comment = without_gravitino_id(cur.fetchone()[0])
    cur.execute(
        "SELECT a.attnum, a.attname, t.typname, a.atttypmod, a.attnotnull, pg_get_expr(d.adbin, d.adrelid), "
        "a.attidentity, a.attgenerated, col_description(a.attrelid, a.attnum) "
        "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (oid,))
    columns, names = [], {}
    for number, column, typname, typmod, notnull, default, identity, generated, column_comment in cur.fetchall():
        names[number] = column
        serial = default is not None and default.startswith("nextval(") and typname in _SERIALS
        kind = {"type": "external", "catalogString": _SERIALS[typname]} if serial \
            else pgtypes.from_postgresql(typname, typmod)
        nullable = not notnull
        columns.append(Column(
            column, kind, without_gravitino_id(column_comment), nullable,
            auto_increment=bool(identity) or (default is not None and default.startswith("nextval(")),
            default_value=None if identity else defaults.from_postgresql(default, kind, bool(generated), nullable),
        ))
    described = Described(Table(name, columns, comment=comment), oid)
    cur.execute("SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = %s AND contype IN ('p', 'u') "
                "ORDER BY contype, conname", (oid,))
    for constraint, kind_code, keys in cur.fetchall():
        _index(described, "PRIMARY_KEY" if kind_code == "p" else "UNIQUE_KEY", constraint, keys, names, True)
    cur.execute(
        "SELECT i.relname, ix.indkey::int2[] FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid "
        "WHERE ix.indrelid = %s AND ix.indisunique AND NOT ix.indisprimary AND ix.indexprs IS NULL "
        "AND ix.indpred IS NULL AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid) "
        "ORDER BY i.relname", (oid,))
    for index, keys in cur.fetchall():
        _index(described, "UNIQUE_KEY", index, keys, names, False)
    return described


def _index(described: Described, kind: str, name: str, keys: list[int], names: dict[int, str], constraint: bool) -> None:
    if any(k not in names for k in keys):
        return  # over an expression or a system column: no Gravitino index describes it
    described.table.indexes.append({"indexType": kind, "name": name, "fieldNames": [[names[k]] for k in keys]})
    described.constraints[name] = constraint
