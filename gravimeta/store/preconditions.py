"""The store-side preconditions of a structural connector operation, checked (with the same row locks
and errors as the EntityStore's own write methods) inside the transaction that records its intent,
so that a request the store would refuse never reaches the engine. Each returns the facts the intent
needs, or None when there is nothing to do (a drop of something that does not exist).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.entities import Table
from gravimeta.store import convert
from gravimeta.store.entity_store import EntityStore
from gravimeta.store.models import SchemaRow, TableRow


def schema_creatable(store: EntityStore, s: Session, m: str, c: str, name: str) -> dict[str, Any]:
    catalog = store.catalog_row(s, m, c, lock="share")
    if s.scalar(select(exists().where(SchemaRow.catalog_id == catalog.id, SchemaRow.name == name))):
        raise errors.SchemaAlreadyExists(f"Schema {m}.{c}.{name} already exists")
    return {}


def schema_droppable(store: EntityStore, s: Session, m: str, c: str, name: str, cascade: bool) -> dict[str, Any] | None:
    return None if store.schema_to_drop(s, m, c, name, cascade) is None else {}


def table_creatable(store: EntityStore, s: Session, m: str, c: str, sc: str, name: str) -> dict[str, Any]:
    schema = store.schema_row(s, m, c, sc, lock="share")
    if s.scalar(select(exists().where(TableRow.schema_id == schema.id, TableRow.name == name))):
        raise errors.TableAlreadyExists(f"Table {m}.{c}.{sc}.{name} already exists")
    return {}


def table_renamable(
    store: EntityStore, s: Session, m: str, c: str, sc: str, t: str, mutate: Callable[[Table], Table], new_schema: str | None
) -> tuple[Table, Table]:
    """(before, after) of a rename/move, refused as EntityStore.update_table would refuse it."""
    row = store.table_row(s, m, c, sc, t, lock="update")
    before = convert.table_of(row, store.columns_of(s, row.id))
    after = mutate(before.working_copy())
    target_schema = new_schema or sc
    target_id = row.schema_id if target_schema == sc else store.schema_row(s, m, c, target_schema, lock="share").id
    clash = select(exists().where(TableRow.schema_id == target_id, TableRow.name == after.name, TableRow.id != row.id))
    if s.scalar(clash):
        raise errors.TableAlreadyExists(f"Table {m}.{c}.{target_schema}.{after.name} already exists")
    return before, after


def table_droppable(store: EntityStore, s: Session, m: str, c: str, sc: str, t: str) -> dict[str, Any] | None:
    return None if store.table_to_drop(s, m, c, sc, t) is None else {}
