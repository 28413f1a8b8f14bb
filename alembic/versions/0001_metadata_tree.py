"""The metadata tree: metalake, catalog, schema, table, column.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _name_collation() -> str:
    """A binary, NO PAD collation on MySQL/MariaDB, so names compare byte for byte as on the other
    backends: "Sales" != "sales", and "x" != "x " (utf8mb4_bin is PAD SPACE: it ignores trailing
    spaces in comparisons and unique keys)."""
    dialect = op.get_bind().dialect
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"  # MariaDB 10.2+
    if dialect.name == "mysql" and (dialect.server_version_info or (0,)) >= (8, 0):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"  # MySQL 5.7 has no NO PAD binary collation: trailing spaces are ignored there


def _name() -> sa.types.TypeEngine:
    return sa.String(128).with_variant(mysql.VARCHAR(128, collation=_name_collation()), "mysql", "mariadb")


def _json() -> sa.types.TypeEngine:
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def _audit() -> list[sa.Column]:
    return [
        sa.Column("creator", sa.String(256)),
        sa.Column("create_time", sa.String(40)),
        sa.Column("last_modifier", sa.String(256)),
        sa.Column("last_modified_time", sa.String(40)),
        sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    ]


def upgrade() -> None:
    op.create_table(
        "gm_metalake",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", _name(), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("properties", _json()),
        sa.Column("in_use", sa.Boolean, nullable=False, server_default=sa.true()),
        *_audit(),
        sa.UniqueConstraint("name", name="uq_metalake_name"),
    )
    op.create_table(
        "gm_catalog",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("metalake_id", sa.Integer, sa.ForeignKey("gm_metalake.id"), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("properties", _json()),
        sa.Column("in_use", sa.Boolean, nullable=False, server_default=sa.true()),
        *_audit(),
        sa.UniqueConstraint("metalake_id", "name", name="uq_catalog_metalake_name"),
    )
    op.create_table(
        "gm_schema",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("catalog_id", sa.Integer, sa.ForeignKey("gm_catalog.id"), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("properties", _json()),
        *_audit(),
        sa.UniqueConstraint("catalog_id", "name", name="uq_schema_catalog_name"),
    )
    op.create_table(
        "gm_table",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("schema_id", sa.Integer, sa.ForeignKey("gm_schema.id"), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("properties", _json()),
        sa.Column("partitioning", _json()),
        sa.Column("distribution", _json()),
        sa.Column("sort_orders", _json()),
        sa.Column("indexes", _json()),
        *_audit(),
        sa.UniqueConstraint("schema_id", "name", name="uq_table_schema_name"),
    )
    op.create_table(
        "gm_column",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("gm_table.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("type", _json(), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("nullable", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("auto_increment", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("default_value", _json()),
        sa.UniqueConstraint("table_id", "name", name="uq_column_table_name"),
    )


def downgrade() -> None:
    for table in ("gm_column", "gm_table", "gm_schema", "gm_catalog", "gm_metalake"):
        op.drop_table(table)
