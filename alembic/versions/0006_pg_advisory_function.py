"""An advisory claim's guard in one round trip on PostgreSQL: the function gm_advisory_claim.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

The guard of an advisory claim (gravimeta/concurrency/pg_advisory.py) sent two statements in the
store transaction it protects: one that tries the advisory locks (shared on every ancestor's key,
exclusive on the scope's key), then, once they were all granted, one that looks for a live lease on a
related path. The second must run after the first: a statement reads the snapshot taken when it
starts, so a lease claim that commits (and frees its own advisory locks) while the locks are being
tried would be invisible to a check in the same statement. This function runs both in that order in
one call. It is VOLATILE, so at READ COMMITTED its lease query takes a fresh snapshot after the locks
were granted, as the second statement did.

Arguments: the ancestors' keys, the scope's key, the scope and its ancestors, and the LIKE pattern
(escape '!') of its descendants. Result: 'granted', 'locked' (an advisory lock is taken; the locks it
did get stay with the transaction, as before) or 'leased' (a live lease on a related path).

Other databases have no advisory locks; nothing is created there.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_CREATE = r"""
CREATE OR REPLACE FUNCTION gm_advisory_claim(
    p_shared bigint[], p_exclusive bigint, p_related text[], p_descendants text)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
BEGIN
    FOREACH v_key IN ARRAY p_shared LOOP
        IF NOT pg_try_advisory_xact_lock_shared(v_key) THEN
            RETURN 'locked';
        END IF;
    END LOOP;
    IF NOT pg_try_advisory_xact_lock(p_exclusive) THEN
        RETURN 'locked';
    END IF;
    IF EXISTS (SELECT 1 FROM gm_scope_lease
               WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                 AND lease_expires_at > clock_timestamp()) THEN
        RETURN 'leased';
    END IF;
    RETURN 'granted';
END;
$$;
"""

_DROP = "DROP FUNCTION IF EXISTS gm_advisory_claim(bigint[], bigint, text[], text)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
