"""Metadata objects <-> rows of the tree, inside the caller's transaction.

`resolve` finds the row ids of an object and of the parents it inherits from, with Gravitino's errors
(MetadataObjectUtil.checkMetadataObject and the dispatchers behind it): NoSuchMetalake, a disabled
metalake (MetalakeNotInUse) or, below a catalog, a disabled catalog (CatalogNotInUse), the missing
parent level's own NoSuch error (NoSuchCatalog, NoSuchSchema), and NoSuchMetadataObject for the object
itself (for a column, also when its table is missing). `lock` locks the object's row ("share": FOR
SHARE; for a column, its table's row, which every column change locks FOR UPDATE first), so that a
drop cannot delete the object between this read and the caller's write.

`full_names` goes the other way, for the objects a tag is associated with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.metadata_objects import MetadataObject
from gravimeta.store.entity_store import EntityStore
from gravimeta.store.models import CatalogRow, ColumnRow, MetalakeRow, SchemaRow, TableRow


@dataclass(frozen=True)
class Resolved:
    """An object's row ids: `chain` is (kind, id) of the object, then of each parent, nearest first."""

    metalake_id: int
    chain: tuple[tuple[str, int], ...]

    @property
    def kind(self) -> str:
        return self.chain[0][0]

    @property
    def id(self) -> int:
        return self.chain[0][1]


def missing(obj: MetadataObject) -> errors.NoSuchMetadataObject:
    return errors.NoSuchMetadataObject(f"Metadata object {obj.full_name} type {obj.type.upper()} doesn't exist")


def resolve(store: EntityStore, s: Session, m: str, obj: MetadataObject, lock: str | None = None) -> Resolved:
    """The object's row and its parents' (see the module docstring)."""
    found, catalog = EntityStore.metalake_and_catalog_in(s, m, obj.names[0] if obj.type != "metalake" else "")
    if not found.in_use:
        raise errors.MetalakeNotInUse(f"Metalake {m} is not in use; enable it first")
    metalake_id = s.scalar(select(MetalakeRow.id).where(MetalakeRow.name == m))
    assert metalake_id is not None
    if obj.type == "metalake":
        if obj.name != m:
            raise errors.IllegalArgument(f"The metalake object name must be {m}")
        return Resolved(metalake_id, (("metalake", metalake_id),))
    if obj.type not in ("catalog", "schema", "table", "column"):
        raise missing(obj)  # a fileset, topic, model, ...: gravimeta's catalogs hold none
    if catalog is None:
        if obj.type == "catalog":
            raise missing(obj)
        raise errors.NoSuchCatalog(f"Catalog {m}.{obj.names[0]} does not exist")
    c = obj.names[0]
    if obj.type == "catalog":
        try:
            row = store.catalog_row(s, m, c, lock=lock)
        except errors.NoSuchCatalog:  # dropped since the look above
            raise missing(obj) from None
        return Resolved(metalake_id, (("catalog", row.id),))
    if not catalog.in_use:
        raise errors.CatalogNotInUse(f"Catalog {m}.{c} is not in use; enable it first")
    if obj.type == "schema":
        try:
            schema = store.schema_row(s, m, c, obj.names[1], lock=lock)
        except errors.NoSuchSchema:
            raise missing(obj) from None
        return Resolved(metalake_id, (("schema", schema.id), ("catalog", schema.catalog_id)))
    try:
        table = store.table_row(s, m, c, obj.names[1], obj.names[2], lock=lock)
    except errors.NoSuchTable:
        raise missing(obj) from None
    except errors.NoSuchSchema:
        if obj.type == "column":
            raise missing(obj) from None
        raise
    catalog_id = s.scalar(select(SchemaRow.catalog_id).where(SchemaRow.id == table.schema_id))
    assert catalog_id is not None
    chain: tuple[tuple[str, int], ...] = (("table", table.id), ("schema", table.schema_id), ("catalog", catalog_id))
    if obj.type == "table":
        return Resolved(metalake_id, chain)
    column_id = s.scalar(select(ColumnRow.id).where(ColumnRow.table_id == table.id, ColumnRow.name == obj.names[3]))
    if column_id is None:
        raise missing(obj)
    return Resolved(metalake_id, (("column", column_id), *chain))


def full_names(s: Session, metalake_id: int, kind: str, ids: Iterable[int]) -> dict[int, str]:
    """id -> dotted full name for objects of one kind in the metalake (ids of other metalakes, or of
    rows that are gone, are left out)."""
    wanted = list(ids)
    if not wanted:
        return {}
    levels = _LEVELS[: _LEVELS.index(kind) + 1]
    models = [_MODELS[k] for k in levels]
    query = select(models[-1].id, *(model.name for model in models)).select_from(CatalogRow)
    for parent, child in zip(models, models[1:], strict=False):
        query = query.join(child, _PARENT[child] == parent.id)
    query = query.where(CatalogRow.metalake_id == metalake_id, models[-1].id.in_(wanted))
    return {row[0]: ".".join(row[1:]) for row in s.execute(query)}


_LEVELS = ("catalog", "schema", "table", "column")
_MODELS: dict[str, Any] = {"catalog": CatalogRow, "schema": SchemaRow, "table": TableRow, "column": ColumnRow}
_PARENT: dict[Any, Any] = {SchemaRow: SchemaRow.catalog_id, TableRow: TableRow.schema_id, ColumnRow: ColumnRow.table_id}
