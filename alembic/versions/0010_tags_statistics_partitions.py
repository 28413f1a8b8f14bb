"""Tags and their associations, table and partition statistics, store-kept partitions.

Revision ID: 0010
Revises: 0006
Create Date: 2026-12-04

Everything refers to the metadata tree by row id (gravimeta/store/attached_models.py): a tag
association names its object by kind and id, so renames leave it alone and drops delete it in their
own transaction. Names compare byte for byte on every backend (binary NO PAD collation on
MySQL/MariaDB, as in 0001; partition names also use the "C" collation on PostgreSQL, because partition
statistics are listed by ranges of partition names). Statistics and store-kept partitions go with their
table through ON DELETE CASCADE (SQLite: the store turns foreign keys on for every connection); tag
associations, which name objects of four kinds, are deleted by the drops themselves.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql, postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

PARTITION_NAME_LENGTH = 512


def _binary_collation() -> str:
    dialect = op.get_bind().dialect
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    if dialect.name == "mysql" and (dialect.server_version_info or (0,)) >= (8, 0):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"


def _name() -> sa.types.TypeEngine:
    return sa.String(128).with_variant(mysql.VARCHAR(128, collation=_binary_collation()), "mysql", "mariadb")


def _partition_name() -> sa.types.TypeEngine:
    return (sa.String(PARTITION_NAME_LENGTH)
            .with_variant(mysql.VARCHAR(PARTITION_NAME_LENGTH, collation=_binary_collation()), "mysql", "mariadb")
            .with_variant(postgresql.VARCHAR(PARTITION_NAME_LENGTH, collation="C"), "postgresql"))


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
        "gm_tag",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("metalake_id", sa.Integer, sa.ForeignKey("gm_metalake.id"), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("properties", _json()),
        *_audit(),
        sa.UniqueConstraint("metalake_id", "name", name="uq_tag_metalake_name"),
    )
    op.create_table(
        "gm_tag_relation",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tag_id", sa.Integer, sa.ForeignKey("gm_tag.id"), nullable=False),
        sa.Column("object_type", sa.String(16), nullable=False),
        sa.Column("object_id", sa.Integer, nullable=False),
        sa.UniqueConstraint("tag_id", "object_type", "object_id", name="uq_tag_relation"),
    )
    op.create_index("ix_tag_relation_object", "gm_tag_relation", ["object_type", "object_id"])
    op.create_table(
        "gm_table_statistic",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("value", _json(), nullable=False),
        *_audit(),
        sa.UniqueConstraint("table_id", "name", name="uq_table_statistic"),
    )
    op.create_table(
        "gm_partition_statistic",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False),
        sa.Column("partition_name", _partition_name(), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("value", _json(), nullable=False),
        *_audit(),
        sa.UniqueConstraint("table_id", "partition_name", "name", name="uq_partition_statistic"),
    )
    op.create_table(
        "gm_partition",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("gm_table.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", _partition_name(), nullable=False),
        sa.Column("definition", _json(), nullable=False),
        *_audit(),
        sa.UniqueConstraint("table_id", "name", name="uq_partition_table_name"),
    )


def downgrade() -> None:
    op.drop_index("ix_tag_relation_object", table_name="gm_tag_relation")
    for table in ("gm_partition", "gm_partition_statistic", "gm_table_statistic", "gm_tag_relation", "gm_tag"):
        op.drop_table(table)
