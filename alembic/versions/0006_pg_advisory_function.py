"""An advisory claim's guard in one round trip, waiting in line: the PostgreSQL function gm_advisory_claim.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

The guard of an advisory claim (gravimeta/concurrency/pg_advisory.py) sent two statements in the
store transaction it protects, each time it tried: one that tries the advisory locks (shared on every
ancestor's key, exclusive on the scope's key) and, once they were all granted, one that looks for a
live lease on a related path. A lock that was taken made it sleep with backoff and try again, so
under contention whoever tried first after a release won, and a waiter could be overtaken many times
(bench/hot_parent.py: p99 / p50 of 11 with 32 clients on one schema).

This function does both in one call, and it waits for a taken lock in PostgreSQL's lock queue, which
grants in arrival order, instead of polling: each lock is tried first (so a free one costs no wait),
then, if taken, waited for with `lock_timeout` set to what is left of the claim timeout (restored
before it returns, so the rest of the transaction keeps its own setting). Locks are taken root first
and the scope's last, so two claims cannot wait for each other in a cycle. The lease query runs after
the locks: the function is VOLATILE, so at READ COMMITTED that query takes a fresh snapshot and sees
a lease claim that committed while this one waited (one SQL statement would read a snapshot taken
before its locks).

Arguments: the ancestors' keys, root first; the scope's key; the scope and its ancestors; the LIKE
pattern (escape '!') of its descendants; how long it may wait, in ms. Result: 'granted' (no wait),
'waited' (granted after waiting for a lock), 'timeout' (a lock was still taken when the time was up:
the locks it did get stay with the transaction, which the caller rolls back) or 'leased' (a live lease
on a related path: the caller waits for it to end, holding the locks).

Other databases have no advisory locks; nothing is created there.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
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
    v_lock_timeout text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', greatest(p_wait_ms, 1) || 'ms', true);
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
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
    IF EXISTS (SELECT 1 FROM gm_scope_lease
               WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                 AND lease_expires_at > clock_timestamp()) THEN
        RETURN 'leased';
    END IF;
    RETURN CASE WHEN v_waited THEN 'waited' ELSE 'granted' END;
END;
$$;
"""

_DROP = "DROP FUNCTION IF EXISTS gm_advisory_claim(bigint[], bigint, text[], text, bigint)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
