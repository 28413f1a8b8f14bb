"""Row <-> entity conversion, kept apart from the queries so both stay readable."""

from __future__ import annotations

from gravimeta.entities import Audit, Catalog, Column, Metalake, Schema, Table
from gravimeta.store.models import CatalogRow, ColumnRow, MetalakeRow, SchemaRow, TableRow


def audit_of(row: MetalakeRow | CatalogRow | SchemaRow | TableRow) -> Audit:
    return Audit(row.creator, row.create_time, row.last_modifier, row.last_modified_time)


def metalake_of(row: MetalakeRow) -> Metalake:
    return Metalake(row.name, row.comment, dict(row.properties or {}), row.in_use, audit_of(row), row.version)


def catalog_of(row: CatalogRow, metalake: str) -> Catalog:
    return Catalog(
        metalake, row.name, row.type, row.provider, row.comment, dict(row.properties or {}),
        row.in_use, audit_of(row), row.version,
    )


def schema_of(row: SchemaRow) -> Schema:
    return Schema(row.name, row.comment, dict(row.properties or {}), audit_of(row), row.version)


def column_of(row: ColumnRow) -> Column:
    return Column(row.name, row.type, row.comment, row.nullable, row.auto_increment, row.default_value)


def table_of(row: TableRow, columns: list[ColumnRow]) -> Table:
    return Table(
        name=row.name,
        columns=[column_of(c) for c in sorted(columns, key=lambda c: c.position)],
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
    return [
        ColumnRow(
            table_id=table_id, position=i, name=c.name, type=c.type, comment=c.comment,
            nullable=c.nullable, auto_increment=c.auto_increment, default_value=c.default_value,
        )
        for i, c in enumerate(columns)
    ]


def set_audit(row: MetalakeRow | CatalogRow | SchemaRow | TableRow, audit: Audit) -> None:
    row.creator, row.create_time = audit.creator, audit.create_time
    row.last_modifier, row.last_modified_time = audit.last_modifier, audit.last_modified_time
