"""Waiters queue for a claim in order: the table gm_claim_waiter, and gm_claim_scope taking tickets.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

gm_claim_waiter: one row per claim attempt that found its scope busy and is still waiting: its
ticket (`id`, increasing), holder, scope path and an expiry that each poll renews (a waiter that dies
stops blocking the ones behind it when its row expires). A claim is granted only when no live claim
AND no older live waiter exists on a related path, so related waiters are served first come, first
served, and a replica that just released a scope cannot take it again ahead of them
(gravimeta/concurrency/waiter_line.py, docs/ha.md).

On PostgreSQL the one-call claim function of revision 0004 is replaced by one that does the same and
also keeps the line: it takes one more argument, the ticket TTL (0 = no line: no ticket is
written), and answers status 'waiting' (in line, with `ahead` = how many older live related tickets
there are, 0 for the head of the line) besides 'granted', 'busy' (an advisory lock is taken) and
'no-anchor'. The function of 0004 is dropped first (its signature differs, so CREATE OR
REPLACE would add an overload instead of replacing it); a downgrade puts it back.
"""

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql, postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_CREATE = r"""
CREATE OR REPLACE FUNCTION gm_claim_scope(
    p_path text, p_anchor text, p_related text[], p_descendants text,
    p_holder text, p_ttl_ms bigint, p_wait_ttl_ms bigint, p_async boolean,
    p_advisory_shared bigint[], p_advisory_exclusive bigint,
    OUT status text, OUT fence bigint, OUT stolen text[], OUT ahead integer)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
    v_ticket bigint;
    v_claimed boolean;
BEGIN
    stolen := ARRAY[]::text[];
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- 1. the serializer rows: '/' FOR UPDATE for a root claim, else '/' FOR KEY SHARE and the
    --    metalake's anchor FOR UPDATE
    IF p_anchor = '/' THEN
        PERFORM 1 FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE;
    ELSE
        PERFORM 1 FROM gm_claim_anchor r, gm_claim_anchor m
        WHERE r.anchor = '/' AND m.anchor = p_anchor FOR KEY SHARE OF r FOR UPDATE OF m;
    END IF;
    IF NOT FOUND THEN
        status := 'no-anchor';
        RETURN;
    END IF;
    -- 2. the advisory locks of the scope, when advisory-path operations may run on this database
    IF p_advisory_exclusive IS NOT NULL THEN
        FOREACH v_key IN ARRAY coalesce(p_advisory_shared, ARRAY[]::bigint[]) LOOP
            IF NOT pg_try_advisory_xact_lock_shared(v_key) THEN
                status := 'busy';
                RETURN;
            END IF;
        END LOOP;
        IF NOT pg_try_advisory_xact_lock(p_advisory_exclusive) THEN
            status := 'busy';
            RETURN;
        END IF;
    END IF;
    -- 3. a live claim on the scope, an ancestor or a descendant, or an older live waiter on one of
    --    them: wait in line (take a ticket, or renew it) and say how many related waiters are ahead
    v_claimed := EXISTS (SELECT 1 FROM gm_scope_lease
                         WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                           AND lease_expires_at > clock_timestamp());
    SELECT id INTO v_ticket FROM gm_claim_waiter WHERE holder_id = p_holder;
    SELECT count(*) INTO ahead FROM gm_claim_waiter
                       WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                         AND expires_at > clock_timestamp() AND holder_id <> p_holder
                         AND (v_ticket IS NULL OR id < v_ticket);
    IF v_claimed OR ahead > 0 THEN
        status := 'waiting';
        IF p_wait_ttl_ms <= 0 THEN  -- the line is off: no ticket
            RETURN;
        ELSIF v_ticket IS NULL THEN
            INSERT INTO gm_claim_waiter (holder_id, scope_path, expires_at)
            VALUES (p_holder, p_path, clock_timestamp() + p_wait_ttl_ms * interval '1 millisecond');
        ELSE
            UPDATE gm_claim_waiter SET expires_at = clock_timestamp() + p_wait_ttl_ms * interval '1 millisecond'
            WHERE holder_id = p_holder;
        END IF;
        RETURN;
    END IF;
    -- 4. granted: leave the line, clear expired related waiters, steal expired related claims
    DELETE FROM gm_claim_waiter
    WHERE holder_id = p_holder
       OR ((scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
           AND expires_at <= clock_timestamp());
    WITH gone AS (
        DELETE FROM gm_scope_lease
        WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
          AND lease_expires_at <= clock_timestamp()
        RETURNING scope_path || ' ' || holder_id || ' ' || gm_scope_lease.fence AS what
    )
    SELECT coalesce(array_agg(what), ARRAY[]::text[]) INTO stolen FROM gone;
    -- 5. the next fence of the scope (rows of gm_scope_fence are never deleted)
    UPDATE gm_scope_fence SET fence = gm_scope_fence.fence + 1 WHERE scope_path = p_path
    RETURNING gm_scope_fence.fence INTO fence;
    IF NOT FOUND THEN
        fence := 1;
        INSERT INTO gm_scope_fence (scope_path, fence) VALUES (p_path, 1);
    END IF;
    -- 6. the claim row, expiring TTL later by the database clock
    INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, updated_at)
    VALUES (p_path, p_holder, fence, clock_timestamp() + p_ttl_ms * interval '1 millisecond',
            clock_timestamp(), clock_timestamp());
    status := 'granted';
END
$$
"""

_DROP = "DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, bigint, boolean, bigint[], bigint)"
_DROP_0004 = "DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, boolean, bigint[], bigint)"
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
        "gm_claim_waiter",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("holder_id", sa.String(200), nullable=False, unique=True),
        sa.Column("scope_path", _path(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
                  nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_claim_waiter_scope", "gm_claim_waiter", ["scope_path"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP_0004)
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
        op.execute(_previous_function())
    op.drop_index("ix_claim_waiter_scope", table_name="gm_claim_waiter")
    op.drop_table("gm_claim_waiter")


def _previous_function() -> str:
    """The CREATE FUNCTION of revision 0004, read from its script beside this one (frozen there)."""
    spec = importlib.util.spec_from_file_location("_gm_0004", Path(__file__).with_name("0004_pg_claim_function.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module._CREATE)
