"""Row <-> entity conversion, kept apart from the queries so both stay readable.

The *_of functions take an ORM row or anything with its columns as attributes (a Core row, or the
values a Core INSERT wrote)."""

from __future__ import annotations

from typing import Any

from gravimeta.entities import Audit, Catalog, Column, Metalake, Schema, Table
from gravimeta.store.models import CatalogRow, ColumnRow, MetalakeRow, SchemaRow, TableRow, decode_json


def audit_of(row: Any) -> Audit:
    return Audit(row.creator, row.create_time, row.last_modifier, row.last_modified_time)


def metalake_of(row: Any) -> Metalake:
    return Metalake(row.name, row.comment, dict(row.properties or {}), row.in_use, audit_of(row), row.version)


def catalog_of(row: Any, metalake: str) -> Catalog:
    return Catalog(
        metalake, row.name, row.type, row.provider, row.comment, dict(row.properties or {}),
        row.in_use, audit_of(row), row.version, row.id,
    )


def schema_of(row: Any) -> Schema:
    return Schema(row.name, row.comment, dict(row.properties or {}), audit_of(row), row.version)


def column_of(row: Any) -> Column:
    return Column(row.name, row.type, row.comment, row.nullable, row.auto_increment, row.default_value, id=row.id)


#: the column fields of a raw row of the load-table statement, in this order
RAW_COLUMN_FIELDS = ("position", "name", "type", "comment", "nullable", "auto_increment", "default_value")


def raw_column_of(fields: tuple[Any, ...]) -> Column:
    """A column from the driver's values of RAW_COLUMN_FIELDS: JSON still as text, booleans maybe 0/1."""
    _position, name, type_, comment, nullable, auto_increment, default_value = fields
    return Column(name, decode_json(type_), comment, bool(nullable), bool(auto_increment), decode_json(default_value))


def table_of(row: Any, columns: list[Column]) -> Table:
    """A table from its row (an ORM row or a row of the load-table join) and its columns in order."""
    return Table(
        name=row.name,
        columns=columns,
        comment=row.comment,
        properties=dict(row.properties or {}),
        partitioning=list(row.partitioning or []),
        distribution=row.distribution,
        sort_orders=list(row.sort_orders or []),
        indexes=list(row.indexes or []),
        audit=audit_of(row),
        version=row.version,
    )


def column_rows(table_id: int, columns: list[Column]) -> list[ColumnRow]:
    """Rows for the table's columns; a column that was stored before keeps its id (what is attached to
    it, such as tags, refers to the id)."""
    return [
        ColumnRow(
            id=c.id, table_id=table_id, position=i, name=c.name, type=c.type, comment=c.comment,
            nullable=c.nullable, auto_increment=c.auto_increment, default_value=c.default_value,
        )
        for i, c in enumerate(columns)
    ]


def set_audit(row: MetalakeRow | CatalogRow | SchemaRow | TableRow, audit: Audit) -> None:
    row.creator, row.create_time = audit.creator, audit.create_time
    row.last_modifier, row.last_modified_time = audit.last_modifier, audit.last_modified_time
