"""SQLAlchemy models of what hangs off the metadata tree: tags and their associations, table and
partition statistics, and the partitions of catalogs whose partitions the store keeps (`memory`).
Created by Alembic revision 0010; these classes only describe the tables for queries.

Everything here refers to tree rows by id, never by name, so a rename of a catalog, schema, table or
column changes nothing here, and a drop deletes what hangs off the dropped rows in its own transaction
(gravimeta/store/attachments.py, called by the EntityStore's cascades).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.orm import Mapped, mapped_column

from gravimeta.entities import Audit
from gravimeta.store.models import NEVER_REUSED, AuditColumns, Base, JSONText, name_type

#: partition names ("dt=2025-12-03/country=us") are longer than entity names; 512 keeps the MySQL
#: unique keys that include one under InnoDB's 3072-byte limit (4 bytes per utf8mb4 character)
PARTITION_NAME_LENGTH = 512
#: the metadata object kinds a tag can be associated with (Gravitino: catalog, schema, table, column,
#: fileset, topic, model; gravimeta serves the first four)
TAGGABLE = ("catalog", "schema", "table", "column")


def partition_name_type() -> Any:
    """Byte-order comparison on every backend (partition statistics are listed by name ranges)."""
    return (String(PARTITION_NAME_LENGTH)
            .with_variant(mysql.VARCHAR(PARTITION_NAME_LENGTH, collation="utf8mb4_bin"), "mysql", "mariadb")
            .with_variant(postgresql.VARCHAR(PARTITION_NAME_LENGTH, collation="C"), "postgresql"))


class TagRow(AuditColumns, Base):
    __tablename__ = "gm_tag"
    __table_args__ = (UniqueConstraint("metalake_id", "name", name="uq_tag_metalake_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)


class TagRelationRow(Base):
    """One tag on one metadata object, named by its kind and its row id (gm_catalog.id, gm_schema.id,
    gm_table.id or gm_column.id): no foreign key can point at four tables, so the EntityStore's drops
    delete these rows in the same transaction as the objects (attachments.py)."""

    __tablename__ = "gm_tag_relation"
    __table_args__ = (
        UniqueConstraint("tag_id", "object_type", "object_id", name="uq_tag_relation"),
        Index("ix_tag_relation_object", "object_type", "object_id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tag_id: Mapped[int] = mapped_column(ForeignKey("gm_tag.id"), nullable=False)
    object_type: Mapped[str] = mapped_column(String(16), nullable=False)
    object_id: Mapped[int] = mapped_column(Integer, nullable=False)


class TableStatisticRow(AuditColumns, Base):
    __tablename__ = "gm_table_statistic"
    __table_args__ = (UniqueConstraint("table_id", "name", name="uq_table_statistic"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    value: Mapped[Any] = mapped_column(JSONText, nullable=False)


class PartitionStatisticRow(AuditColumns, Base):
    __tablename__ = "gm_partition_statistic"
    __table_args__ = (UniqueConstraint("table_id", "partition_name", "name", name="uq_partition_statistic"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False)
    partition_name: Mapped[str] = mapped_column(partition_name_type(), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    value: Mapped[Any] = mapped_column(JSONText, nullable=False)


class PartitionRow(AuditColumns, Base):
    """A partition of a table whose catalog keeps its partitions in the store (Connector.partitions ==
    "store"): the partition's Gravitino JSON as added."""

    __tablename__ = "gm_partition"
    __table_args__ = (UniqueConstraint("table_id", "name", name="uq_partition_table_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(partition_name_type(), nullable=False)
    definition: Mapped[dict[str, Any]] = mapped_column(JSONText, nullable=False)


# ---------------------------------------------------------------------- audit columns of these rows


def audit_of(row: AuditColumns) -> Audit:
    return Audit(row.creator, row.create_time, row.last_modifier, row.last_modified_time)


def stamp(row: AuditColumns, user: str, when: str) -> None:
    """A new row: created (and, like Gravitino's statistics, last modified) by `user` at `when`."""
    row.creator, row.create_time = user, when
    row.last_modifier, row.last_modified_time = user, when


def touch(row: AuditColumns, user: str, when: str) -> None:
    """A changed row: last modified by `user`, version bumped (the compare-and-set token)."""
    row.last_modifier, row.last_modified_time = user, when
    row.version = row.version + 1
