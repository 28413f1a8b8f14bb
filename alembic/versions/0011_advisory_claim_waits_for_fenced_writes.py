"""gm_advisory_claim orders an advisory claim behind every in-flight fenced lease write.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

Revision 0006's function looked for a live related lease with a plain read (`EXISTS ... lease_expires_at
> now`). A lease holder whose lease has just expired may still be inside its fenced store transaction:
its guard passed while the lease was live and holds its claim row FOR UPDATE (or has deleted it, in the
operation's last write) until its commit. The lease side is safe against that because a stealer must
DELETE the row, which waits for the holder's transaction; an advisory claimant never touches the row, so
it read the committed, expired version and was granted while the holder could still commit.

This version reads the related lease rows with a locking read, `SELECT ... FOR SHARE`, after taking the
advisory locks and under the same lock_timeout (what is left of the claim timeout). FOR SHARE conflicts
with the FOR UPDATE of a fence guard, the row lock of a DELETE (the last write's check-and-release, a
release, a steal, the reclaimer) and of an UPDATE (a renewal), so the read waits until any transaction
that holds one ends, and then, at READ COMMITTED, judges the row as that transaction left it: gone
(released), renewed (live: 'leased'), or expired. An expired row stays locked FOR SHARE until the claim's
transaction ends: its holder's next fence check (FOR UPDATE, or the DELETE of its last write) waits for
the advisory operation, then fails (expired rows are never renewed). A row found live means 'leased':
the caller waits for that lease to end, so the row locks taken by this read are given back first (they
are taken in a PL/pgSQL block, a subtransaction, which is rolled back), while the advisory locks stay.
A lease granted later cannot appear meanwhile: gm_claim_scope takes the same advisory locks (no wait)
before it looks, steals or inserts.

Arguments and results as in 0006: 'granted', 'waited', 'timeout' (an advisory lock or a lease row was
still locked when the time was up) or 'leased'. The signature is unchanged (CREATE OR REPLACE); the
downgrade puts 0006's body back. Other databases have no advisory locks; nothing is created there.
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_CREATE = r"""
CREATE OR REPLACE FUNCTION gm_advisory_claim(
    p_shared bigint[], p_exclusive bigint, p_related text[], p_descendants text, p_wait_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
    v_waited boolean := false;
    v_expires timestamptz;
    v_lock_timeout text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', greatest(p_wait_ms, 1) || 'ms', true);
    -- 1. the advisory locks: shared on every ancestor's key, root first, then exclusive on the scope's
    BEGIN
        FOREACH v_key IN ARRAY p_shared LOOP
            IF NOT pg_try_advisory_xact_lock_shared(v_key) THEN
                v_waited := true;
                PERFORM pg_advisory_xact_lock_shared(v_key);
            END IF;
        END LOOP;
        IF NOT pg_try_advisory_xact_lock(p_exclusive) THEN
            v_waited := true;
            PERFORM pg_advisory_xact_lock(p_exclusive);
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
        RETURN 'timeout';
    END;
    -- 2. the related lease rows, locked FOR SHARE: waits for every transaction that holds one (a fenced
    --    store write, a renewal, a release, a steal), then judges each as it was left
    BEGIN
        FOR v_expires IN
            SELECT lease_expires_at FROM gm_scope_lease
            WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
            ORDER BY scope_path
            FOR SHARE
        LOOP
            IF v_expires > clock_timestamp() THEN
                RAISE EXCEPTION 'live lease' USING ERRCODE = 'GMLSD';  -- rolls back this block's row locks
            END IF;
        END LOOP;
    EXCEPTION
        WHEN lock_not_available THEN
            PERFORM set_config('lock_timeout', v_lock_timeout, true);
            RETURN 'timeout';
        WHEN SQLSTATE 'GMLSD' THEN
            PERFORM set_config('lock_timeout', v_lock_timeout, true);
            RETURN 'leased';
    END;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
    RETURN CASE WHEN v_waited THEN 'waited' ELSE 'granted' END;
END;
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_previous_function())


def _previous_function() -> str:
    """The CREATE FUNCTION of revision 0006, read from its script beside this one (frozen there)."""
    spec = importlib.util.spec_from_file_location("_gm_0006", Path(__file__).with_name("0006_pg_advisory_function.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module._CREATE)
