"""The intents of journalled operations as small typed records, and their one serialization.

Each record says what one structural operation will do, with everything a repair in another process
needs to finish or undo it. `where` names the catalog by its id (the identity every repair decision
is keyed by: a catalog dropped and re-created under the same name is another catalog), by the
metalake and catalog names it had when the intent was recorded (the store's API is by name; a repair
first checks that the id still carries them, docs/consistency.md §4), and by the identity key its
engine calls are fenced by (engine_keys.py: the object the operation's claim covered, by id).

`engine_only` marks the drop of an object only the engine had (made outside gravimeta and never
imported): journalled like any drop, so that an import racing it meets its intent and its barrier; its
store step finds nothing to delete.

`encode` / `decode` are the only place a record becomes text and back (gm_operation_journal.payload;
the catalog id travels in its own column, gm_operation_journal.catalog_id). JSON with ASCII escapes,
so any name or comment (NUL, lone surrogates) fits the column even where the store refuses the value.
Payloads of rows written before records existed ({"m", "c", "user", ...}) decode as well.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gravimeta.entities import Audit, Column, Schema, Table


@dataclass(frozen=True)
class Where:
    catalog_id: int
    metalake: str
    catalog: str
    user: str = ""
    key: str = ""  # the identity key its engine calls are fenced by ('' in intents recorded before keys)


@dataclass(frozen=True)
class CreateSchema:
    where: Where
    schema: Schema


@dataclass(frozen=True)
class DropSchema:
    where: Where
    name: str
    cascade: bool
    engine_only: bool = False


@dataclass(frozen=True)
class CreateTable:
    where: Where
    schema: str
    table: Table


@dataclass(frozen=True)
class RenameTable:
    """A rename or move of a table (with the other changes of the same request). `before` and `after`
    are filled by the store's precondition check inside the intent's transaction."""

    where: Where
    schema: str
    name: str
    new_schema: str | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    before: Table | None = None
    after: Table | None = None

    @property
    def target_schema(self) -> str:
        return self.new_schema or self.schema


@dataclass(frozen=True)
class DropTable:
    where: Where
    schema: str
    name: str
    purge: bool
    engine_only: bool = False


Record = CreateSchema | DropSchema | CreateTable | RenameTable | DropTable
OPERATION_OF: dict[type, str] = {CreateSchema: "create_schema", DropSchema: "drop_schema", CreateTable: "create_table",
                                 RenameTable: "rename_table", DropTable: "drop_table"}


def placed(record: Record, catalog_id: int, key: str) -> Record:
    """The record with its catalog's id and its identity key (known once the intent's transaction has
    read the catalog under the claim)."""
    return replace(record, where=replace(record.where, catalog_id=catalog_id, key=key))


def encode(record: Record) -> tuple[str, int, str]:
    """(operation, catalog id, payload text) of a record."""
    data = asdict(record)
    data["where"].pop("catalog_id")
    return OPERATION_OF[type(record)], record.where.catalog_id, json.dumps(data)


def decode(operation: str, catalog_id: int | None, text: str) -> Record:
    """The record of a journal row; catalog id None (a row the migration could not place) becomes -1,
    which names no catalog, so the repair discards it."""
    data = json.loads(text)
    place = data.pop("where", None) or {"metalake": data.pop("m"), "catalog": data.pop("c"), "user": data.pop("user", "")}
    where = Where(-1 if catalog_id is None else catalog_id, place["metalake"], place["catalog"], place.get("user", ""),
                  place.get("key", ""))
    if operation == "create_schema":
        return CreateSchema(where, schema_of(data["schema"]))
    if operation == "drop_schema":
        return DropSchema(where, data["name"], bool(data["cascade"]), bool(data.get("engine_only", False)))
    if operation == "create_table":
        return CreateTable(where, data["schema"], table_of(data["table"]))
    if operation == "rename_table":
        return RenameTable(where, data["schema"], data["name"], data["new_schema"], list(data["changes"]),
                           table_of(data["before"]), table_of(data["after"]))
    if operation == "drop_table":
        return DropTable(where, data["schema"], data["name"], bool(data["purge"]), bool(data.get("engine_only", False)))
    raise ValueError(f"unknown journalled operation {operation!r}")


def schema_of(data: dict[str, Any]) -> Schema:
    return Schema(**{**data, "audit": Audit(**data["audit"])})


def table_of(data: dict[str, Any]) -> Table:
    return Table(**{**data, "columns": [Column(**c) for c in data["columns"]], "audit": Audit(**data["audit"])})
