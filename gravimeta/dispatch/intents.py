"""The steps of each journalled operation, driven by its typed record (intent_records.py) alone, so a
repair in another process can run them:

- engine:  the idempotent connector call(s), carrying the claim's fence;
- observe: what the engine really has -> APPLIED, NOT_APPLIED or UNCLEAR;
- apply:   the store change; returns (result, already). (The drop of an engine-only object finds nothing
           to delete in the store and answers True: the engine's object is gone.) `already` is None when this call made the change;
           otherwise it is the store's own error saying the change is already there (create: XAlreadyExists,
           rename: NoSuchTable for the old name), the transaction that would have ended the intent rolled
           back, and `result` is what the store has. Who made the change decides what that means
           (gravimeta/dispatch/journal.py): a repair of this very intent (the request's own change: answer
           `result`) or another operation (a live request answers `already`). A drop that finds the
           object gone deletes nothing and returns None ("dropped: false"), as the store's own drop does.
- undo:    the engine call that takes the change back (a create is dropped, a rename renamed back), for
           a change the store has proved it cannot hold (StoreRefused); None for drops: what an engine
           dropped cannot be brought back.
- direct:  for a process-local connector (Connector.process_local): the store change and the engine call
           in the caller's ONE write transaction, store first (its errors are the answer), then the
           engine (through engine_door.mirror), whose failure rolls the store change back. No intent is
           recorded: the engine is a mirror of the store that ends with the process, so there is nothing
           a repair could find.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from connectors.base import NO_FENCE, Connector, Fence
from gravimeta import errors
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.intent_records import (
    CreateSchema,
    CreateTable,
    DropSchema,
    DropTable,
    Record,
    RenameTable,
)
from gravimeta.dispatch.table_rules import table_mutation
from gravimeta.entities import Audit, Schema, Table
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test

APPLIED, NOT_APPLIED, UNCLEAR = "applied", "not applied", "unclear"
Applied = tuple[Any, errors.GravitinoError | None]


class Unclear(str):
    """UNCLEAR (equal to it), with what the engine shows instead: the note of the intent the repair
    leaves stuck names it for the operator."""

    why: str

    def __new__(cls, why: str) -> Unclear:
        seen = super().__new__(cls, UNCLEAR)
        seen.why = why
        return seen


def _tables(connector: Connector, schema: str) -> list[str]:
    try:
        return connector.list_tables(schema)
    except errors.NoSuchSchema:
        return []


@dataclass(frozen=True)
class Steps:
    describe: str
    engine: Callable[[Connector, Any, Fence], object]
    observe: Callable[[Connector, Any], str]
    apply: Callable[[EntityStore, Any], Applied]
    direct: Callable[[EntityStore, Session, Connector, Any], Any]
    undo: Callable[[Connector, Any, Fence], object] | None


def steps(record: Record) -> Steps:
    return STEPS[type(record)]


# ---------------------------------------------------------------- create schema

def _create_schema_apply(store: EntityStore, r: CreateSchema) -> Applied:
    w = r.where
    try:
        return store.create_schema(w.metalake, w.catalog, r.schema, w.user), None
    except errors.SchemaAlreadyExists as exists:
        return store.get_schema(w.metalake, w.catalog, r.schema.name), exists


def _create_schema_direct(store: EntityStore, s: Session, conn: Connector, r: CreateSchema) -> Schema:
    created = store.create_schema_in(s, r.where.metalake, r.where.catalog, r.schema, r.where.user)
    engine_door.mirror(lambda: conn.create_schema(r.schema))
    return created


# ---------------------------------------------------------------- drop schema

def _drop_schema_direct(store: EntityStore, s: Session, conn: Connector, r: DropSchema) -> bool | None:
    if not store.drop_schema_in(s, r.where.metalake, r.where.catalog, r.name, r.cascade):
        return None
    engine_door.mirror(lambda: conn.drop_schema(r.name, cascade=True))
    return True


# ---------------------------------------------------------------- create table

def _create_table_apply(store: EntityStore, r: CreateTable) -> Applied:
    w = r.where
    try:
        return store.create_table(w.metalake, w.catalog, r.schema, r.table, w.user), None
    except errors.TableAlreadyExists as exists:
        return store.get_table(w.metalake, w.catalog, r.schema, r.table.name), exists


def _create_table_observe(connector: Connector, r: CreateTable) -> str:
    """Whether the engine has this create's table: a table of its name whose columns are the journalled
    ones as the engine describes them (Connector.as_described), compared as an alter's are: names, then
    types as text. A table of that name with other columns is not this create's doing as journalled (made
    outside gravimeta, which is what the engine's refusal of the create then meant, or changed since):
    unclear, so the repair leaves the intent stuck with both shapes in its note, and never puts this
    definition into the store over the engine's other table. A connector that cannot describe its
    tables leaves only the name to go by."""
    name = r.table.name
    if name not in _tables(connector, r.schema):
        return NOT_APPLIED
    if disabled_for_test("create_shape"):  # TEST-ONLY: the name alone, whatever the engine's table holds
        return APPLIED
    try:
        found = _columns(connector.load_table(r.schema, name))
    except errors.NotFound:  # dropped since it was listed
        return NOT_APPLIED
    except errors.UnsupportedOperation:  # the connector cannot describe its tables: the name is all there is
        return APPLIED
    wanted = _columns(connector.as_described(r.table))
    if found == wanted:  # names and types (with no old shape to tell apart, one comparison covers both)
        return APPLIED
    return Unclear(f"the engine's table {r.schema}.{name} has columns {_shape(found)}, this create's would read "
                   f"{_shape(wanted)}")


def _create_table_direct(store: EntityStore, s: Session, conn: Connector, r: CreateTable) -> Table:
    created = store.create_table_in(s, r.where.metalake, r.where.catalog, r.schema, r.table, r.where.user)
    engine_door.mirror(lambda: conn.create_table(r.schema, r.table))
    return created


# ---------------------------------------------------------------- rename table

def _rename_engine(connector: Connector, r: RenameTable, fence: Fence) -> None:
    assert r.before is not None and r.after is not None
    _rename_in_engine(connector, r, r.before, r.after, fence)


def _rename_in_engine(connector: Connector, r: RenameTable, before: Table, after: Table, fence: Fence) -> None:
    """rename_table (skipped for a same-name alter), then alter_table. A refusal of the second call
    after the first was applied is not "nothing happened": it is reported as an unknown outcome."""
    moved = (r.target_schema, after.name) != (r.schema, before.name)
    if moved:
        connector.rename_table(r.schema, before.name, r.target_schema, after.name, fence=fence)
    try:
        connector.alter_table(r.target_schema, replace(before, name=after.name), after, fence=fence)
    except errors.GravitinoError as exc:
        if moved and exc.http_status < 500:
            raise errors.ConnectionFailed(
                f"the engine renamed the table but refused the rest of the change: {exc.message}") from exc
        raise


def _rename_observe(connector: Connector, r: RenameTable) -> str:
    assert r.after is not None
    old, new = (r.schema, r.name), (r.target_schema, r.after.name)
    if old == new:
        return _alter_observe(connector, r)
    has_old, has_new = old[1] in _tables(connector, old[0]), new[1] in _tables(connector, new[0])
    return {(False, True): APPLIED, (True, False): NOT_APPLIED}.get((has_old, has_new), UNCLEAR)


def _alter_observe(connector: Connector, r: RenameTable) -> str:
    """An alter that keeps the name: which columns the engine's table has. Names first, then types as
    text; a change of comment or properties alone leaves the columns as they were, and then the store's
    change is the safe side (the engine's copy of descriptive metadata holds no data)."""
    assert r.before is not None and r.after is not None
    before, after = _columns(r.before), _columns(r.after)
    if before == after:
        return APPLIED
    try:
        found = _columns(connector.load_table(r.schema, r.name))
    except errors.NotFound:
        return Unclear(f"the engine has no table {r.schema}.{r.name}")
    for pick in _NAMES_THEN_TYPES:
        if pick(before) != pick(after):
            if pick(found) == pick(after):
                return APPLIED
            if pick(found) == pick(before):
                return NOT_APPLIED
            break
    return Unclear(f"the engine's table {r.schema}.{r.name} has columns {_shape(found)}, before the alter "
                   f"{_shape(before)}, after it {_shape(after)}")


Columns = list[tuple[str, str]]
#: how two tables' columns are compared, in order: their names, then their names and types
_NAMES_THEN_TYPES: tuple[Callable[[Columns], object], ...] = (
    lambda cols: [name for name, _ in cols], lambda cols: cols)


def _columns(table: Table) -> Columns:
    """(name, type as text) of each column; an object type's text has its keys sorted, so that two
    spellings of one JSON type compare equal."""
    return [(column.name, column.type if isinstance(column.type, str) else json.dumps(column.type, sort_keys=True))
            for column in table.columns]


def _shape(columns: Columns) -> str:
    return "(" + ", ".join(f"{name} {kind}" for name, kind in columns) + ")"


def _rename_apply(store: EntityStore, r: RenameTable) -> Applied:
    m, c, target = r.where.metalake, r.where.catalog, r.target_schema
    assert r.after is not None
    try:
        mutate = table_mutation(r.changes)
        return store.update_table(m, c, r.schema, r.name, mutate, r.where.user, new_schema=r.new_schema)[1], None
    except errors.NoSuchTable as gone:
        renamed = store.get_table(m, c, target, r.after.name)  # NoSuchTable again if neither
        if not _same_definition(renamed, r.after):
            # renamed by an operation with other changes: the engine may hold either shape, so this
            # intent must not end as "already applied" (the repair marks it stuck)
            raise errors.NoSuchTable(f"{gone.message}; {m}.{c}.{target}.{renamed.name} exists, but not as this "
                                     "rename would have made it") from gone
        return renamed, gone


def _rename_undo(connector: Connector, r: RenameTable, fence: Fence) -> None:
    """Back to the old shape at the new name, then back to the old name."""
    assert r.before is not None and r.after is not None
    connector.alter_table(r.target_schema, r.after, replace(r.before, name=r.after.name), fence=fence)
    if (r.target_schema, r.after.name) != (r.schema, r.before.name):
        connector.rename_table(r.target_schema, r.after.name, r.schema, r.before.name, fence=fence)


def _rename_direct(store: EntityStore, s: Session, conn: Connector, r: RenameTable) -> Table:
    before, after = store.update_table_in(s, r.where.metalake, r.where.catalog, r.schema, r.name,
                                          table_mutation(r.changes), r.where.user, new_schema=r.new_schema)
    engine_door.mirror(lambda: _rename_in_engine(conn, r, before, after, NO_FENCE))
    return after


def _same_definition(a: Table, b: Table) -> bool:
    return replace(a, audit=Audit(), version=0) == replace(b, audit=Audit(), version=0)


# ---------------------------------------------------------------- drop table

def _drop_table_engine(conn: Connector, r: DropTable, fence: Fence) -> bool:
    return (conn.purge_table if r.purge else conn.drop_table)(r.schema, r.name, fence=fence)


def _drop_table_direct(store: EntityStore, s: Session, conn: Connector, r: DropTable) -> bool | None:
    if not store.drop_table_in(s, r.where.metalake, r.where.catalog, r.schema, r.name):
        return None
    engine_door.mirror(lambda: _drop_table_engine(conn, r, NO_FENCE))
    return True


def _drop(dropped: bool) -> Applied:
    return (True if dropped else None), None


STEPS: dict[type, Steps] = {
    CreateSchema: Steps(
        "schema creation",
        lambda conn, r, fence: conn.create_schema(r.schema, fence=fence),
        lambda conn, r: APPLIED if r.schema.name in conn.list_schemas() else NOT_APPLIED,
        _create_schema_apply,
        _create_schema_direct,
        lambda conn, r, fence: conn.drop_schema(r.schema.name, cascade=False, fence=fence),
    ),
    DropSchema: Steps(
        "schema drop",
        lambda conn, r, fence: conn.drop_schema(r.name, cascade=True, fence=fence),
        lambda conn, r: NOT_APPLIED if r.name in conn.list_schemas() else APPLIED,
        lambda store, r: _drop(store.drop_schema(r.where.metalake, r.where.catalog, r.name, cascade=True)
                               or r.engine_only),
        _drop_schema_direct,
        None,
    ),
    CreateTable: Steps(
        "table creation",
        lambda conn, r, fence: conn.create_table(r.schema, r.table, fence=fence),
        _create_table_observe,
        _create_table_apply,
        _create_table_direct,
        lambda conn, r, fence: conn.drop_table(r.schema, r.table.name, fence=fence),
    ),
    RenameTable: Steps("table rename", _rename_engine, _rename_observe, _rename_apply, _rename_direct, _rename_undo),
    DropTable: Steps(
        "table drop",
        _drop_table_engine,
        lambda conn, r: NOT_APPLIED if r.name in _tables(conn, r.schema) else APPLIED,
        lambda store, r: _drop(store.drop_table(r.where.metalake, r.where.catalog, r.schema, r.name) or r.engine_only),
        _drop_table_direct,
        None,
    ),
}
