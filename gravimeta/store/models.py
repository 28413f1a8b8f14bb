"""SQLAlchemy models of the metadata tree. The tables themselves are created only by Alembic
(alembic/versions); these classes describe them for queries.

Names are case-sensitive on every backend: SQLite and PostgreSQL compare bytes by default, and on
MySQL/MariaDB the name columns use a binary NO PAD collation, so trailing spaces count too (the
migration picks it per server; the collation below only matters for create_all, which gravimeta never
uses). Unique (parent, name) keys and foreign keys make duplicate names and orphans impossible at the
database level, whatever the lock layers do.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAME_LENGTH = 128
#: On SQLite an id is never handed out again after its row is deleted (AUTOINCREMENT; alembic/versions/0019):
#: intents, owners, tags and privileges name objects by id, and a new object must inherit nothing of a
#: dropped one. PostgreSQL and MariaDB never reuse an id anyway.
NEVER_REUSED = {"sqlite_autoincrement": True}


def name_type(length: int = NAME_LENGTH) -> Any:
    """A VARCHAR that compares case-sensitively on every backend."""
    return String(length).with_variant(mysql.VARCHAR(length, collation="utf8mb4_bin"), "mysql", "mariadb")


class JSONText(TypeDecorator[Any]):
    """JSON kept as TEXT (MEDIUMTEXT on MySQL, whose TEXT stops at 64 KiB): portable, read back exactly."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.MEDIUMTEXT())
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: Any, dialect: Any) -> str | None:
        return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return decode_json(value)


def decode_json(value: str | None) -> Any:
    """What a JSONText column holds, from its text (for a column read as plain text)."""
    return None if value is None else json.loads(value)


class Base(DeclarativeBase):
    pass


class AuditColumns:
    creator: Mapped[str | None] = mapped_column(String(256))
    create_time: Mapped[str | None] = mapped_column(String(40))
    last_modifier: Mapped[str | None] = mapped_column(String(256))
    last_modified_time: Mapped[str | None] = mapped_column(String(40))
    # Incremented by every committed change: the compare-and-set token for cross-node updates.
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)


class MetalakeRow(AuditColumns, Base):
    __tablename__ = "gm_metalake"
    __table_args__ = NEVER_REUSED
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(name_type(), nullable=False, unique=True)
    comment: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)
    in_use: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class CatalogRow(AuditColumns, Base):
    __tablename__ = "gm_catalog"
    __table_args__ = (UniqueConstraint("metalake_id", "name", name="uq_catalog_metalake_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    provider: Mapped[str] = mapped_column(String(64), nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)
    in_use: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class SchemaRow(AuditColumns, Base):
    __tablename__ = "gm_schema"
    __table_args__ = (UniqueConstraint("catalog_id", "name", name="uq_schema_catalog_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    catalog_id: Mapped[int] = mapped_column(ForeignKey("gm_catalog.id"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)


class TableRow(AuditColumns, Base):
    __tablename__ = "gm_table"
    __table_args__ = (UniqueConstraint("schema_id", "name", name="uq_table_schema_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    schema_id: Mapped[int] = mapped_column(ForeignKey("gm_schema.id"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)
    partitioning: Mapped[list[Any]] = mapped_column(JSONText, default=list)
    distribution: Mapped[dict[str, Any] | None] = mapped_column(JSONText)
    sort_orders: Mapped[list[Any]] = mapped_column(JSONText, default=list)
    indexes: Mapped[list[Any]] = mapped_column(JSONText, default=list)


class ColumnRow(Base):
    __tablename__ = "gm_column"
    __table_args__ = (UniqueConstraint("table_id", "name", name="uq_column_table_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("gm_table.id"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    type: Mapped[Any] = mapped_column(JSONText, nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
    nullable: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    auto_increment: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    default_value: Mapped[Any] = mapped_column(JSONText)
