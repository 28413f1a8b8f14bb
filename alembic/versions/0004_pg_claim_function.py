"""A lease claim in one round trip on PostgreSQL: the function gm_claim_scope (docs/ha.md).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

The claim transaction of the lease backend (gravimeta/concurrency/scope_lease.py) was seven round
trips on PostgreSQL: BEGIN, SET LOCAL, the anchor locks, the related-lease select, the fence bump, the
insert, COMMIT. This function runs the same statements, in the same order, with the same locks, inside
one call that the backend sends in autocommit mode. It is VOLATILE, so at READ COMMITTED every
statement in it takes a fresh snapshot, as the statements sent one by one did: the related-lease
select, run after the anchor locks were granted, sees every claim committed before them.

Arguments: the scope path; its anchor ('/' for a root claim); the scope and its ancestors; the LIKE
pattern (escape '!') of its descendants; holder, TTL and whether to commit asynchronously; and, for
a lease claim that must also exclude advisory-path operations, the advisory keys to take shared (the
ancestors) and exclusive (the scope), or NULL.
Result: status 'granted' (fence set, `stolen` lists the expired claims it deleted as
'path holder fence'), 'busy' (a live related claim or a taken advisory lock) or 'no-anchor'.

Other databases keep the statement-by-statement transaction; nothing is created there.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_CREATE = r"""
CREATE OR REPLACE FUNCTION gm_claim_scope(
    p_path text, p_anchor text, p_related text[], p_descendants text,
    p_holder text, p_ttl_ms bigint, p_async boolean,
    p_advisory_shared bigint[], p_advisory_exclusive bigint,
    OUT status text, OUT fence bigint, OUT stolen text[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
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
    -- 3. any live claim on the scope, an ancestor or a descendant: busy; expired ones are stolen
    IF EXISTS (SELECT 1 FROM gm_scope_lease
               WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                 AND lease_expires_at > clock_timestamp()) THEN
        status := 'busy';
        RETURN;
    END IF;
    WITH gone AS (
        DELETE FROM gm_scope_lease
        WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
          AND lease_expires_at <= clock_timestamp()
        RETURNING scope_path || ' ' || holder_id || ' ' || gm_scope_lease.fence AS what
    )
    SELECT coalesce(array_agg(what), ARRAY[]::text[]) INTO stolen FROM gone;
    -- 4. the next fence of the scope (rows of gm_scope_fence are never deleted)
    UPDATE gm_scope_fence SET fence = gm_scope_fence.fence + 1 WHERE scope_path = p_path
    RETURNING gm_scope_fence.fence INTO fence;
    IF NOT FOUND THEN
        fence := 1;
        INSERT INTO gm_scope_fence (scope_path, fence) VALUES (p_path, 1);
    END IF;
    -- 5. the claim row, expiring TTL later by the database clock
    INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, updated_at)
    VALUES (p_path, p_holder, fence, clock_timestamp() + p_ttl_ms * interval '1 millisecond',
            clock_timestamp(), clock_timestamp());
    status := 'granted';
END
$$
"""

_DROP = "DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, boolean, bigint[], bigint)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
