"""Core table descriptions of the claim layer (created only by the Alembic migrations, from alembic/versions/0002_scope_lease.py on)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Integer, MetaData, String, Table

PATH_LENGTH = 600
metadata = MetaData()

scope_lease = Table(
    "gm_scope_lease", metadata,
    Column("scope_path", String(PATH_LENGTH), primary_key=True),
    Column("holder_id", String(200), nullable=False),
    Column("fence", BigInteger, nullable=False),
    Column("lease_expires_at", DateTime(timezone=True), nullable=False),
    Column("acquired_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# the per-path fence counter before alembic 0012 (now gm_claim_anchor.fence); kept, unwritten, for a downgrade
scope_fence = Table(
    "gm_scope_fence", metadata,
    Column("scope_path", String(PATH_LENGTH), primary_key=True),
    Column("fence", BigInteger, nullable=False),
)

claim_anchor = Table(
    "gm_claim_anchor", metadata,
    Column("anchor", String(PATH_LENGTH), primary_key=True),
    # the highest fence granted under this anchor (alembic 0012; lease_grant.py)
    Column("fence", BigInteger, nullable=False, server_default="0"),
    # the '/' row only: the waiting root claim that holds new claims back (alembic 0021; root_wait.py)
    Column("root_waiter", String(200), nullable=True),
    Column("root_wait_since", DateTime(timezone=True), nullable=True),
    Column("root_wait_until", DateTime(timezone=True), nullable=True),
    Column("root_wait_ends", DateTime(timezone=True), nullable=True),
)

node = Table(
    "gm_node", metadata,
    Column("node_id", String(200), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("lock_enabled", Boolean, nullable=False),
    Column("backend", String(32), nullable=False),
    Column("heartbeat_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    # the Alembic head of the worker's code (alembic 0018); NULL: a worker of code before 0018
    Column("schema_revision", String(32), nullable=True),
)
