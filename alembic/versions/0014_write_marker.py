"""Write markers: one row per committed store write transaction, to look up a commit whose reply was lost.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-12

- gm_write_marker: every store write transaction on PostgreSQL and MariaDB inserts its operation id here
  just before its COMMIT (gravimeta/store/commit_check.py). When the connection fails during COMMIT, the
  server looks for the row from a new connection: present, the transaction committed; absent once the
  old session is gone, it did not. `created_at` is written by the database clock and indexed for the
  garbage collection that deletes markers older than the retention. SQLite has the table too (one schema
  everywhere) but never writes it: its commits cannot lose their reply.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gm_write_marker",
        sa.Column("op_id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
                  nullable=False),
    )
    op.create_index("ix_gm_write_marker_created_at", "gm_write_marker", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_gm_write_marker_created_at", table_name="gm_write_marker")
    op.drop_table("gm_write_marker")
