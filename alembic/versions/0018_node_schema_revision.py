"""Each replica's schema revision in the node registry.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-14

gm_node.schema_revision: the Alembic head of the code a worker process runs (written when it registers),
so that `gravimeta locks`, /api/admin/locks and the console's cluster page show which replicas run which
gravimeta during a rolling upgrade, and warn while live replicas differ. Nullable, with no default:
workers of code before this revision keep writing their rows without it (NULL reads as "before 0018"),
and adding a nullable column does not rewrite the table on PostgreSQL or MariaDB.
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("gm_node", sa.Column("schema_revision", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gm_node") as batch:  # SQLite rebuilds the table to drop a column
        batch.drop_column("schema_revision")
