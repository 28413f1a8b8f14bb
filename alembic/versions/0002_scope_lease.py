"""Cross-node claims: the scope lease, its never-reset fence counter, the claim anchors, the node registry.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03

- gm_scope_lease: one row per live claim (docs/ha.md). The path is compared byte-wise on every
  backend: COLLATE "C" on PostgreSQL (which also lets the primary key serve `LIKE 'prefix%'`),
  a binary NO PAD collation on MySQL/MariaDB, SQLite's default BINARY. 600 characters hold four 128-character
  names and their separators; at 4 bytes per character that is 2400 bytes, under InnoDB's 3072-byte
  key limit.
- gm_scope_fence: the last fence granted per path. Rows are never deleted, so a fence never resets.
- gm_claim_anchor: one serializer row per top-level scope ('/' and '/<metalake>'); every claim
  transaction locks its anchors FOR UPDATE/SHARE before it checks for conflicts.
- gm_node: every worker process of every replica (flag, backend, heartbeat) for the mixed-rollout check.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql, postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

PATH_LENGTH = 600


def _binary_collation() -> str:
    """Byte-wise and NO PAD on MySQL/MariaDB (as for the names in 0001): '/m/c' != '/m/c '."""
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


def _time() -> sa.types.TypeEngine:
    # Written only by the database clock (now()/UTC_TIMESTAMP(6)/strftime), see scope_lease.py.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "gm_scope_lease",
        sa.Column("scope_path", _path(), primary_key=True),
        sa.Column("holder_id", sa.String(200), nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=False),
        sa.Column("lease_expires_at", _time(), nullable=False),
        sa.Column("acquired_at", _time(), nullable=False),
        sa.Column("updated_at", _time(), nullable=False),
    )
    op.create_index("ix_scope_lease_expires", "gm_scope_lease", ["lease_expires_at"])
    op.create_table(
        "gm_scope_fence",
        sa.Column("scope_path", _path(), primary_key=True),
        sa.Column("fence", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "gm_claim_anchor",
        sa.Column("anchor", _path(), primary_key=True),
    )
    op.create_table(
        "gm_node",
        sa.Column("node_id", sa.String(200), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("lock_enabled", sa.Boolean, nullable=False),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("heartbeat_at", _time(), nullable=False),
        sa.Column("started_at", _time(), nullable=False),
    )
    op.create_index("ix_node_heartbeat", "gm_node", ["heartbeat_at"])


def downgrade() -> None:
    op.drop_index("ix_node_heartbeat", table_name="gm_node")
    op.drop_table("gm_node")
    op.drop_table("gm_claim_anchor")
    op.drop_table("gm_scope_fence")
    op.drop_index("ix_scope_lease_expires", table_name="gm_scope_lease")
    op.drop_table("gm_scope_lease")
