"""The structural hot path's statements, built once and run with SQLAlchemy Core on the connection of
the caller's store transaction (docs/benchmarks.md, round 7, "What phase 2 should change", item 1).

Each sends the SQL that the ORM sent for the same step, statement for statement, with the same row
locks: only the Python around it is cheaper (no expression tree built per call, no unit of work, no
ORM bulk-DML synchronisation, no ORM entities for rows that are only read). That is why the inserts
follow the ORM's own choices (sqlalchemy/orm/persistence.py, _emit_insert_statements): a plain INSERT
for one row (RETURNING id on PostgreSQL, the driver's lastrowid on SQLite and MariaDB), one ordered
multi-row INSERT ... RETURNING for several rows where the dialect supports it, and None for a
column with a Python default means "the default", as the ORM reads it.

Nothing here flushes the ORM session: callers run these where no ORM change is pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, delete, insert, select, update
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.sql import Select

from gravimeta.entities import Column
from gravimeta.store.database import disabled_for_test
from gravimeta.store.models import CatalogRow, ColumnRow, MetalakeRow, SchemaRow, TableRow

METALAKE: Any = MetalakeRow.__table__
CATALOG: Any = CatalogRow.__table__
SCHEMA: Any = SchemaRow.__table__
TABLE: Any = TableRow.__table__
COLUMN: Any = ColumnRow.__table__

# The parent chain, nested scalar subqueries on the unique (parent, name) keys, bound by name:
# m (metalake), c (catalog), s (schema).
METALAKE_ID = select(METALAKE.c.id).where(METALAKE.c.name == bindparam("m")).scalar_subquery()
CATALOG_ID = (select(CATALOG.c.id).where(CATALOG.c.metalake_id == METALAKE_ID, CATALOG.c.name == bindparam("c"))
              .scalar_subquery())
SCHEMA_ID = (select(SCHEMA.c.id).where(SCHEMA.c.catalog_id == CATALOG_ID, SCHEMA.c.name == bindparam("s"))
             .scalar_subquery())


def _lock_variants(query: Select[Any]) -> dict[str | None, Select[Any]]:
    return {None: query, "share": query.with_for_update(read=True), "update": query.with_for_update()}


class Level:
    """Reads of one level of the tree by its parent chain and its own name (bound as `name`), in each
    row-lock variant: `entity` is the ORM model (rows as ORM objects) or its Table (Core rows), `parent`
    and `own_name` its columns."""

    def __init__(self, entity: Any, parent: Any, own_name: Any, parent_id: Any):
        name = own_name == bindparam("name")
        self.by_chain = _lock_variants(select(entity).where(parent == parent_id, name))
        self.by_parent = _lock_variants(select(entity).where(parent == bindparam("parent_id"), name))
        #: the parent's id alone, for a locked read on MariaDB/MySQL (EntityStore's note on lookups)
        self.parent_id: Select[Any] = select(parent_id)

    def statement(self, lock: str | None) -> Select[Any]:
        return self.by_chain[_lock_kind(lock)]

    def by_parent_id(self, lock: str | None) -> Select[Any]:
        return self.by_parent[_lock_kind(lock)]


def _lock_kind(lock: str | None) -> str | None:
    if lock == "update" and disabled_for_test("no_row_lock"):  # TEST-ONLY: updates read without FOR UPDATE
        return None
    return lock


#: lookups returning ORM rows (callers that change the row) and Core rows (callers that only read it)
CATALOG_ROWS = Level(CatalogRow, CatalogRow.metalake_id, CatalogRow.name, METALAKE_ID)
SCHEMA_ROWS = Level(SchemaRow, SchemaRow.catalog_id, SchemaRow.name, CATALOG_ID)
TABLE_ROWS = Level(TableRow, TableRow.schema_id, TableRow.name, SCHEMA_ID)
CATALOG_CORE = Level(CATALOG, CATALOG.c.metalake_id, CATALOG.c.name, METALAKE_ID)
SCHEMA_CORE = Level(SCHEMA, SCHEMA.c.catalog_id, SCHEMA.c.name, CATALOG_ID)
TABLE_CORE = Level(TABLE, TABLE.c.schema_id, TABLE.c.name, SCHEMA_ID)
COLUMNS_OF = select(COLUMN).where(COLUMN.c.table_id == bindparam("table_id")).order_by(COLUMN.c.position)


def locked_row(conn: Connection, level: Level, chain: Mapping[str, str], name: str, lock: str | None) -> Row[Any] | None:
    """The Core row `name` under the parent that `chain` names, read with `lock`, or None."""
    if lock is not None and conn.dialect.name in ("mysql", "mariadb"):
        parent_id = conn.execute(level.parent_id, chain).scalar()
        if parent_id is None:
            return None
        return conn.execute(level.by_parent_id(lock), {"parent_id": parent_id, "name": name}).first()
    return conn.execute(level.statement(lock), {**chain, "name": name}).first()


# The in-use check: the metalake and its catalog `c` (all None when there is none), one row.
METALAKE_AND_CATALOG = (
    select(METALAKE, CATALOG)
    .outerjoin(CATALOG, and_(CATALOG.c.metalake_id == METALAKE.c.id, CATALOG.c.name == bindparam("c")))
    .where(METALAKE.c.name == bindparam("m"))
)
METALAKE_FIELDS = tuple(col.key for col in METALAKE.c)
CATALOG_FIELDS = tuple(col.key for col in CATALOG.c)

# The drop of a table: its row FOR UPDATE under its schema's id, then its columns and the row.
TABLE_FOR_UPDATE = (select(TABLE).where(TABLE.c.schema_id == bindparam("schema_id"), TABLE.c.name == bindparam("name"))
                    .with_for_update())
_IDS: Any = bindparam("ids", expanding=True)
DELETE_COLUMNS_OF_TABLES = delete(COLUMN).where(COLUMN.c.table_id.in_(_IDS))
DELETE_TABLES = delete(TABLE).where(TABLE.c.id.in_(_IDS))

_INSERTS: dict[Any, Any] = {table: insert(table) for table in (METALAKE, CATALOG, SCHEMA, TABLE, COLUMN)}
_INSERT_COLUMNS_RETURNING_IDS = insert(COLUMN).return_defaults(COLUMN.c.id, sort_by_parameter_order=True)
#: columns where None means "not given" to the ORM: the primary key (the database assigns it) and
#: columns with a Python default
_DEFAULTED: dict[Any, frozenset[str]] = {
    table: frozenset(col.key for col in table.c if col.primary_key or col.default is not None) for table in _INSERTS
}


def insert_values(table: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters the ORM would send for a new row with these attribute values: None stands for
    a new id (the key is left out) and for the column's Python default where it has one (the INSERT
    then carries the default, as the ORM's does), else for NULL."""
    defaulted = _DEFAULTED[table]
    return {key: value for key, value in values.items() if value is not None or key not in defaulted}


def insert_row(conn: Connection, table: Any, values: Mapping[str, Any]) -> int:
    """Insert one row (no id given) and return its new id, as the ORM's flush of one new object does."""
    result = conn.execute(_INSERTS[table], insert_values(table, values))
    primary_key = result.inserted_primary_key
    assert primary_key is not None and primary_key[0] is not None, "a single-row INSERT returns its id"
    return int(primary_key[0])


def insert_columns(conn: Connection, table_id: int, columns: list[Column]) -> list[Column]:
    """Insert the table's columns, as `add_all` + flush did, and return them with their ids. Columns
    that keep their id go first (SQLite gives a new row the highest rowid + 1, which must not be one of
    theirs); within each part, consecutive rows with the same parameter keys go in one statement."""
    params = [insert_values(COLUMN, {
        "id": c.id, "table_id": table_id, "position": i, "name": c.name, "type": c.type, "comment": c.comment,
        "nullable": c.nullable, "auto_increment": c.auto_increment, "default_value": c.default_value,
    }) for i, c in enumerate(columns)]
    ids: list[int | None] = [c.id for c in columns]
    kept = [i for i, c in enumerate(columns) if c.id is not None]
    new = [i for i, c in enumerate(columns) if c.id is None]
    for part in (kept, new):
        for _keys, grouped in groupby(part, key=lambda i: frozenset(params[i])):
            group = list(grouped)
            if ids[group[0]] is not None:  # every id is known: nothing to read back
                conn.execute(_INSERTS[COLUMN], [params[i] for i in group])
            elif len(group) > 1 and conn.dialect.insert_executemany_returning_sort_by_parameter_order:
                result = conn.execute(_INSERT_COLUMNS_RETURNING_IDS, [params[i] for i in group])
                for i, key in zip(group, result.inserted_primary_key_rows, strict=True):
                    assert key is not None, "an ordered multi-row INSERT returns every id"
                    ids[i] = key[0]
            else:
                for i in group:
                    ids[i] = insert_row(conn, COLUMN, params[i])
    return [Column(c.name, c.type, c.comment, c.nullable, c.auto_increment, c.default_value, id=column_id)
            for c, column_id in zip(columns, ids, strict=True)]


# The ORM names the primary key's parameter of its UPDATE after the column's label (gm_table_id).
_UPDATES: dict[Any, Any] = {
    table: update(table).where(table.c.id == bindparam(f"{table.name}_id")) for table in (TABLE,)
}


def update_changed(conn: Connection, table: Any, current: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """UPDATE the row `current` (all its columns, as read) to `values`, as the ORM's flush of the
    changed object did: only the columns whose value differs (the column type's comparison, `==`
    for these), in the table's column order, and the same check that it updated exactly one row."""
    changed = {key: value for key, value in values.items()
               if not table.c[key].type.compare_values(value, current[key])}
    if not changed:
        return
    result = conn.execute(_UPDATES[table], {**changed, f"{table.name}_id": current["id"]})
    if conn.dialect.supports_sane_rowcount and result.rowcount != 1:
        raise StaleDataError(f"UPDATE statement on table '{table.name}' expected to update 1 row(s); "
                             f"{result.rowcount} were matched.")
