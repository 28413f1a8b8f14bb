"""The structural connector operations the journal knows, each as three steps driven by its journalled
payload alone (so a repair in another process can run them):

- engine:  the idempotent connector call;
- observe: what the engine really has -> APPLIED, NOT_APPLIED or UNCLEAR;
- apply:   the store change; returns (result, already). `already` is None when this call made the change;
           otherwise it is the store's own error saying the change is already there (create: XAlreadyExists,
           rename: NoSuchTable for the old name), the transaction that would have ended the intent rolled
           back, and `result` is what the store has. Who made the change decides what that means
           (gravimeta/dispatch/journal.py): a repair of this very intent (the request's own change: answer
           `result`) or another operation (a live request answers `already`). A drop that finds the
           object gone deletes nothing and returns None ("dropped: false"), as the store's own drop does.

- direct:  for a process-local connector (Connector.process_local): the store change and the engine call
           in the caller's ONE write transaction, store first (its errors are the answer), then the
           engine, whose failure rolls the store change back. No intent is recorded: the engine is a
           mirror of the store that ends with the process, so there is nothing a repair could find.

Every payload carries the metalake `m`, catalog `c` and `user` besides the operation's own fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors
from gravimeta.dispatch.table_rules import table_mutation
from gravimeta.entities import Audit, Column, Schema, Table
from gravimeta.store import EntityStore

APPLIED, NOT_APPLIED, UNCLEAR = "applied", "not applied", "unclear"
Payload = dict[str, Any]
Applied = tuple[Any, errors.GravitinoError | None]


def to_json(entity: Schema | Table) -> dict[str, Any]:
    return asdict(entity)


def schema_of(data: dict[str, Any]) -> Schema:
    return Schema(**{**data, "audit": Audit(**data["audit"])})


def table_of(data: dict[str, Any]) -> Table:
    return Table(**{**data, "columns": [Column(**c) for c in data["columns"]], "audit": Audit(**data["audit"])})


def _tables(connector: Connector, schema: str) -> list[str]:
    try:
        return connector.list_tables(schema)
    except errors.NoSuchSchema:
        return []


@dataclass(frozen=True)
class Operation:
    describe: str
    engine: Callable[[Connector, Payload], object]
    observe: Callable[[Connector, Payload], str]
    apply: Callable[[EntityStore, Payload], Applied]
    direct: Callable[[EntityStore, Session, Connector, Payload], Any]


def _create_schema(store: EntityStore, p: Payload) -> Applied:
    try:
        return store.create_schema(p["m"], p["c"], schema_of(p["schema"]), p["user"]), None
    except errors.SchemaAlreadyExists as exists:
        return store.get_schema(p["m"], p["c"], p["schema"]["name"]), exists


def _create_table(store: EntityStore, p: Payload) -> Applied:
    table = table_of(p["table"])
    try:
        return store.create_table(p["m"], p["c"], p["schema"], table, p["user"]), None
    except errors.TableAlreadyExists as exists:
        return store.get_table(p["m"], p["c"], p["schema"], table.name), exists


def _rename_engine(connector: Connector, p: Payload) -> None:
    _rename_in_engine(connector, p, table_of(p["before"]), table_of(p["after"]))


def _rename_in_engine(connector: Connector, p: Payload, before: Table, after: Table) -> None:
    target = p["new_schema"] or p["schema"]
    if (target, after.name) != (p["schema"], before.name):
        connector.rename_table(p["schema"], before.name, target, after.name)
    connector.alter_table(target, replace(before, name=after.name), after)


def _rename_observe(connector: Connector, p: Payload) -> str:
    old, new = (p["schema"], p["name"]), (p["new_schema"] or p["schema"], p["after"]["name"])
    if old == new:
        return APPLIED  # an alter without a real rename: the store change is the safe side
    has_old, has_new = old[1] in _tables(connector, old[0]), new[1] in _tables(connector, new[0])
    return {(False, True): APPLIED, (True, False): NOT_APPLIED}.get((has_old, has_new), UNCLEAR)


def _rename_apply(store: EntityStore, p: Payload) -> Applied:
    m, c, target = p["m"], p["c"], p["new_schema"] or p["schema"]
    try:
        mutate = table_mutation(p["changes"])
        return store.update_table(m, c, p["schema"], p["name"], mutate, p["user"], new_schema=p["new_schema"])[1], None
    except errors.NoSuchTable as gone:
        renamed = store.get_table(m, c, target, p["after"]["name"])  # NoSuchTable again if neither
        if not _same_definition(renamed, table_of(p["after"])):
            # renamed by an operation with other changes: the engine may hold either shape, so this
            # intent must not end as "already applied" (the repair marks it stuck)
            raise errors.NoSuchTable(f"{gone.message}; {m}.{c}.{target}.{renamed.name} exists, but not as this "
                                     "rename would have made it") from gone
        return renamed, gone


def _same_definition(a: Table, b: Table) -> bool:
    return replace(a, audit=Audit(), version=0) == replace(b, audit=Audit(), version=0)


def _drop(dropped: bool) -> Applied:
    return (True if dropped else None), None


# ---------------------------------------------------------------- direct steps (process-local engines)

def _create_schema_direct(store: EntityStore, s: Session, conn: Connector, p: Payload) -> Schema:
    schema = schema_of(p["schema"])
    created = store.create_schema_in(s, p["m"], p["c"], schema, p["user"])
    conn.create_schema(schema)
    return created


def _drop_schema_direct(store: EntityStore, s: Session, conn: Connector, p: Payload) -> bool | None:
    if not store.drop_schema_in(s, p["m"], p["c"], p["name"], p["cascade"]):
        return None
    conn.drop_schema(p["name"], cascade=True)
    return True


def _create_table_direct(store: EntityStore, s: Session, conn: Connector, p: Payload) -> Table:
    table = table_of(p["table"])
    created = store.create_table_in(s, p["m"], p["c"], p["schema"], table, p["user"])
    conn.create_table(p["schema"], table)
    return created


def _rename_direct(store: EntityStore, s: Session, conn: Connector, p: Payload) -> Table:
    before, after = store.update_table_in(s, p["m"], p["c"], p["schema"], p["name"], table_mutation(p["changes"]),
                                          p["user"], new_schema=p["new_schema"])
    _rename_in_engine(conn, p, before, after)
    return after


def _drop_table_direct(store: EntityStore, s: Session, conn: Connector, p: Payload) -> bool | None:
    if not store.drop_table_in(s, p["m"], p["c"], p["schema"], p["name"]):
        return None
    (conn.purge_table if p["purge"] else conn.drop_table)(p["schema"], p["name"])
    return True


OPERATIONS: dict[str, Operation] = {
    "create_schema": Operation(
        "schema creation",
        lambda conn, p: conn.create_schema(schema_of(p["schema"])),
        lambda conn, p: APPLIED if p["schema"]["name"] in conn.list_schemas() else NOT_APPLIED,
        _create_schema,
        _create_schema_direct,
    ),
    "drop_schema": Operation(
        "schema drop",
        lambda conn, p: conn.drop_schema(p["name"], cascade=True),
        lambda conn, p: NOT_APPLIED if p["name"] in conn.list_schemas() else APPLIED,
        lambda store, p: _drop(store.drop_schema(p["m"], p["c"], p["name"], cascade=True)),
        _drop_schema_direct,
    ),
    "create_table": Operation(
        "table creation",
        lambda conn, p: conn.create_table(p["schema"], table_of(p["table"])),
        lambda conn, p: APPLIED if p["table"]["name"] in _tables(conn, p["schema"]) else NOT_APPLIED,
        _create_table,
        _create_table_direct,
    ),
    "rename_table": Operation("table rename", _rename_engine, _rename_observe, _rename_apply, _rename_direct),
    "drop_table": Operation(
        "table drop",
        lambda conn, p: (conn.purge_table if p["purge"] else conn.drop_table)(p["schema"], p["name"]),
        lambda conn, p: NOT_APPLIED if p["name"] in _tables(conn, p["schema"]) else APPLIED,
        lambda store, p: _drop(store.drop_table(p["m"], p["c"], p["schema"], p["name"])),
        _drop_table_direct,
    ),
}
