"""The operation journal: one row per structural connector operation that has started and not yet
been applied to the store (docs/consistency.md).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04

- gm_operation_journal: written in the store transaction that checks the operation's preconditions
  (behind the claim's fence), deleted in the transaction that applies the store change. A row that
  outlives its request (unknown engine outcome, store step failed, process died) is finished or undone
  by the repair (gravimeta/dispatch/journal.py), which asks the engine what it really has.
  `scope_path` is the coordinator scope of the operation ('/m/c' or '/m/c/s', as in gm_scope_lease),
  `created_at` is written by the database clock only.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql, postgresql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

PATH_LENGTH = 600


def _binary_collation() -> str:
    dialect = op.get_bind().dialect
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    if dialect.name == "mysql" and (dialect.server_version_info or (0,)) >= (8, 0):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"


def _path() -> sa.types.TypeEngine:
    return (
        sa.String(PATH_LENGTH)
        .with_variant(mysql.VARCHAR(PATH_LENGTH, collation=_binary_collation()), "mysql", "mariadb")
        .with_variant(postgresql.VARCHAR(PATH_LENGTH, collation="C"), "postgresql")
    )


def upgrade() -> None:
    op.create_table(
        "gm_operation_journal",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("scope_path", _path(), nullable=False),
        sa.Column("operation", sa.String(40), nullable=False),
        sa.Column("payload", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb"), nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("detail", sa.Text),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
            nullable=False,
        ),
    )
    op.create_index("ix_operation_journal_scope", "gm_operation_journal", ["scope_path"])


def downgrade() -> None:
    op.drop_index("ix_operation_journal_scope", table_name="gm_operation_journal")
    op.drop_table("gm_operation_journal")
