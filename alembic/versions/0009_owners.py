"""Owners of metalakes, catalogs, schemas and tables, and the users and groups of a metalake.

Revision ID: 0009
Revises: 0006
Create Date: 2026-12-10

- gm_principal: the users and groups added to a metalake (Gravitino's UserOperations/GroupOperations);
  deleted with their metalake (ON DELETE CASCADE).
- gm_owner: an object's owner when it is not its creator (gravimeta/ownership/store.py): set by
  PUT .../owners, or "no owner" (owner_type NULL) once the owning user or group was removed. Keyed by
  the object's id (object_kind, object_id), so it follows renames; the object's own foreign key
  (metalake_id for every row, catalog_id, schema_id or table_id for the others) deletes it with the
  object, also when a cascade deletes the object, whoever deletes it. Indexes on each foreign key keep
  those cascades (PostgreSQL runs one lookup per deleted row) from scanning the table.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _name_collation() -> str:
    """Binary, NO PAD, as for every name column (0001): names compare byte for byte."""
    dialect = op.get_bind().dialect
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    if dialect.name == "mysql" and (dialect.server_version_info or (0,)) >= (8, 0):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"


def _name_type() -> sa.types.TypeEngine:
    return sa.String(128).with_variant(mysql.VARCHAR(128, collation=_name_collation()), "mysql", "mariadb")


def _audit() -> list[sa.Column]:
    return [
        sa.Column("creator", sa.String(256)),
        sa.Column("create_time", sa.String(40)),
        sa.Column("last_modifier", sa.String(256)),
        sa.Column("last_modified_time", sa.String(40)),
        sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    ]


def _cascade(table: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete="CASCADE")


def upgrade() -> None:
    name_type = _name_type()
    op.create_table(
        "gm_principal",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("metalake_id", sa.Integer, _cascade("gm_metalake"), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("name", name_type, nullable=False),
        *_audit(),
        sa.UniqueConstraint("metalake_id", "kind", "name", name="uq_principal_metalake_kind_name"),
    )
    op.create_table(
        "gm_owner",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("object_kind", sa.String(16), nullable=False),
        sa.Column("object_id", sa.Integer, nullable=False),
        sa.Column("metalake_id", sa.Integer, _cascade("gm_metalake"), nullable=False),
        sa.Column("catalog_id", sa.Integer, _cascade("gm_catalog")),
        sa.Column("schema_id", sa.Integer, _cascade("gm_schema")),
        sa.Column("table_id", sa.Integer, _cascade("gm_table")),
        sa.Column("owner_type", sa.String(8)),
        sa.Column("owner_name", name_type),
        *_audit(),
        sa.UniqueConstraint("object_kind", "object_id", name="uq_owner_object"),
    )
    if op.get_bind().dialect.name not in ("mysql", "mariadb"):  # InnoDB indexes every foreign key itself
        for column in ("metalake_id", "catalog_id", "schema_id", "table_id"):
            op.create_index(f"ix_owner_{column}", "gm_owner", [column])


def downgrade() -> None:
    op.drop_table("gm_owner")
    op.drop_table("gm_principal")
