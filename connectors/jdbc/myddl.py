"""MySQL DDL for gravimeta's tables, as Gravitino 1.3's MysqlTableOperations writes it: each column with its
type, NULL or NOT NULL, default, AUTO_INCREMENT and COMMENT; the primary key (named PRIMARY or unnamed)
and unique keys as constraints; the table's comment, and its `engine` and `auto-increment-offset`
properties as ENGINE= and AUTO_INCREMENT=.

MySQL commits each DDL statement on its own, so every call is ONE statement: a refused statement
changed nothing, and there is no half-done call. An alter (plan.py) is one ALTER TABLE whose clauses
are, in order: index drops, column drops, renames (RENAME COLUMN), changed columns (CHANGE COLUMN, with
the whole definition), adds, index adds, the comment. When the columns' order changes, every column is
given its place (FIRST, AFTER ...) in the new order, which MySQL applies clause by clause. A column
written again keeps what the engine has where the alter does not change it (its declared type,
default, ON UPDATE, character set and collation: mydescribe.EngineColumn).
"""

from __future__ import annotations

from typing import Any

from connectors.jdbc import defaults, mytypes, pgtypes
from connectors.jdbc.mydescribe import Described, EngineColumn
from connectors.jdbc.plan import AlterPlan
from connectors.jdbc.sqltext import Quoting, my_ident
from gravimeta import errors
from gravimeta.entities import Column, Table

#: Gravitino's MysqlTablePropertiesMetadata: the table properties MySQL keeps, and its names for them
ENGINE_KEY, OFFSET_KEY, COMMENT_KEY = "engine", "auto-increment-offset", "comment"
ENGINES = ("ndbcluster", "FEDERATED", "MEMORY", "InnoDB", "PERFORMANCE_SCHEMA", "MyISAM", "ndbinfo", "MRG_MYISAM",
           "BLACKHOLE", "CSV", "ARCHIVE")


def qualified(schema: str, name: str) -> str:
    return f"{my_ident(schema)}.{my_ident(name)}"


def check_properties(properties: dict[str, str]) -> None:
    if COMMENT_KEY in properties:
        raise errors.IllegalArgument(f"Properties are reserved and cannot be set: [{COMMENT_KEY}]")
    engine = properties.get(ENGINE_KEY)
    if engine is not None and engine.upper() not in {e.upper() for e in ENGINES}:
        raise errors.IllegalArgument(f"Invalid value: '{engine}' for property: '{ENGINE_KEY}' (Invalid value [{engine}]. "
                                     f"Valid values: [{', '.join(e.lower() for e in ENGINES)}])")
    offset = properties.get(OFFSET_KEY)
    if offset is not None and not (offset.isascii() and offset.isdigit()):
        raise errors.IllegalArgument(f"Invalid value: '{offset}' for property: '{OFFSET_KEY}' (not an integer)")


def column_sql(column: Column, q: Quoting, kept: EngineColumn | None = None, name: str | None = None) -> str:
    """The definition of `column`; `kept`: the engine's column it replaces, whose declared type, default,
    ON UPDATE and character set stay where `column` has what the engine describes."""
    same_type = kept is not None and kept.described.type == column.type
    kind = kept.column_type if same_type and kept is not None else mytypes.to_mysql(column.type)
    sql = f"{my_ident(name or column.name)} {kind}"
    if same_type and kept is not None and kept.charset:
        sql += f" CHARACTER SET {kept.charset} COLLATE {kept.collation}"
    sql += " NULL" if column.nullable else " NOT NULL"
    if kept is not None and kept.described.default_value == column.default_value:
        default = kept.default_sql
    else:
        default = defaults.to_sql(column.default_value, q)
    if default is not None:
        sql += f" DEFAULT {default}"
    if kept is not None and kept.on_update and kept.described.default_value == column.default_value:
        sql += f" {kept.on_update}"
    if column.auto_increment:
        if not pgtypes.auto_increment_allowed(column.type):
            raise errors.IllegalArgument(f"Auto increment is not allowed, type: {pgtypes.simple_string(column.type)}")
        sql += " AUTO_INCREMENT"
    if column.comment:
        sql += f" COMMENT {q.literal(column.comment)}"
    return sql


def index_sql(index: dict[str, Any]) -> str:
    kind = str(index.get("indexType", "")).upper()
    paths = index.get("fieldNames") or []
    if any(len(path) != 1 for path in paths):
        raise errors.IllegalArgument("Index does not support complex fields in this Catalog")
    fields = "(" + ", ".join(my_ident(path[0]) for path in paths) + ")"
    name = index.get("name")
    if kind == "PRIMARY_KEY":
        if name is not None and name.upper() != "PRIMARY":
            raise errors.IllegalArgument("Primary key name must be PRIMARY in MySQL")
        return "PRIMARY KEY " + fields
    if kind == "UNIQUE_KEY":
        return "UNIQUE " + (my_ident(name) + " " if name else "") + fields
    raise errors.IllegalArgument(f"MySQL doesn't support index : {kind}")


def check_table(table: Table) -> None:
    """MysqlTableOperations' validateIncrementCol and validateIndexes, and the table properties."""
    check_properties(table.properties)
    automatic = [c.name for c in table.columns if c.auto_increment]
    if len(automatic) > 1:
        raise errors.IllegalArgument("Only one column can be auto-incremented. There are multiple auto-increment "
                                     f"columns in your table: [{','.join(automatic)}]")
    keyed = [i for i in table.indexes if str(i.get("indexType", "")).upper() in ("PRIMARY_KEY", "UNIQUE_KEY")]
    if automatic and not any(automatic[0].lower() == path[0].lower() for i in keyed for path in i.get("fieldNames", [])):
        raise errors.IllegalArgument("Incorrect table definition; there can be only one auto column and it must be "
                                     "defined as a key")
    by_name = {c.name: c for c in table.columns}
    for index in table.indexes:
        kind = str(index.get("indexType", "")).upper()
        for path in index.get("fieldNames", []):
            column = by_name.get(path[0]) if path else None
            if column is None:
                raise errors.IllegalArgument(f"Column {path} in the index {index.get('name')} does not exist in the table")
            if kind == "PRIMARY_KEY" and column.nullable:
                raise errors.IllegalArgument(f"Column {column.name} in the primary key must be a not null column")
            if kind == "UNIQUE_KEY" and column.auto_increment and column.nullable:
                raise errors.IllegalArgument(f"Auto increment column {column.name} in the unique index "
                                             f"{index.get('name')} must be a not null column")


def create_table(schema: str, table: Table, q: Quoting) -> str:
    check_table(table)
    parts = [column_sql(c, q) for c in table.columns] + ["CONSTRAINT " + index_sql(i) for i in table.indexes]
    sql = f"CREATE TABLE {qualified(schema, table.name)} (\n  " + ",\n  ".join(parts) + "\n)"
    if table.comment:
        sql += f" COMMENT={q.literal(table.comment)}"
    engine = table.properties.get(ENGINE_KEY)
    if engine:
        sql += " ENGINE=" + next(e for e in ENGINES if e.upper() == engine.upper())
    if table.properties.get(OFFSET_KEY):
        sql += f" AUTO_INCREMENT={int(table.properties[OFFSET_KEY])}"
    return sql


def check_property_changes(before: Table, after: Table) -> None:
    """`engine` and `auto-increment-offset` are immutable (Gravitino: set at create only)."""
    for key in (ENGINE_KEY, OFFSET_KEY):
        if before.properties.get(key) != after.properties.get(key):
            verb = "set" if key in after.properties else "deleted"
            raise errors.IllegalArgument(f"Property {key} is immutable or reserved, cannot be {verb}")


def alter_table(schema: str, name: str, steps: AlterPlan, current: Described, q: Quoting) -> str | None:
    """The one ALTER TABLE of a plan, or None when there is nothing to do."""
    clauses: list[str] = []
    for key in steps.index_drops:
        clauses.append("DROP PRIMARY KEY" if key[0] == "PRIMARY_KEY" else f"DROP INDEX {my_ident(key[1] or '')}")
    clauses += [f"DROP COLUMN {my_ident(column)}" for column in steps.drops]
    changes = {c.after.name: c for c in steps.changes}
    added = {c.name: c for c in steps.adds}
    if steps.order is None:
        for old, new in steps.renames:
            if not changes[new].attributes_changed:
                clauses.append(f"RENAME COLUMN {my_ident(old)} TO {my_ident(new)}")
        for change in steps.changes:
            if change.attributes_changed:
                clauses.append(_rewrite(change.engine_name, change.after, current, q))
        clauses += ["ADD COLUMN " + column_sql(c, q) for c in steps.adds]
    else:
        for i, column_name in enumerate(steps.order):
            place = " FIRST" if i == 0 else f" AFTER {my_ident(steps.order[i - 1])}"
            if column_name in added:
                clauses.append("ADD COLUMN " + column_sql(added[column_name], q) + place)
            else:
                change = changes[column_name]
                clauses.append(_rewrite(change.engine_name, change.after, current, q) + place)
    clauses += ["ADD " + index_sql(index) for index in steps.index_adds]
    if steps.comment[0]:
        clauses.append(f"COMMENT = {q.literal(steps.comment[1] or '')}")
    if not clauses:
        return None
    return f"ALTER TABLE {qualified(schema, name)}\n  " + ",\n  ".join(clauses)


def _rewrite(engine_name: str, after: Column, current: Described, q: Quoting) -> str:
    kept = current.columns.get(engine_name)
    if kept is not None and kept.generated:
        raise errors.IllegalArgument(f"Column {engine_name} is a generated column, which gravimeta cannot write again")
    return f"CHANGE COLUMN {my_ident(engine_name)} " + column_sql(after, q, kept)
