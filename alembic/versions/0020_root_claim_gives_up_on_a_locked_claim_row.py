'''A root claim never waits for a related claim row's lock: it answers busy and lets '/' go.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-15

A root claim (a metalake create, rename or drop claims '/') excludes every other claim: in the lease
claim it holds the anchor row '/' FOR UPDATE, which every other claim takes FOR KEY SHARE (LOCK IN
SHARE MODE) first; in the advisory claim it holds the exclusive advisory lock on '/', on which every
other claim takes a shared lock first. Its related claims are all claims. When it found some and all
expired, revisions 0011, 0012 and 0015 made it lock them, waiting for any transaction that held one,
up to its claim timeout, while it held '/'. A holder frozen inside its fenced store transaction (its
guard holds its claim row FOR UPDATE) past its lease in metalake m4 therefore stalled the claims of
every metalake for as long: a create in m1 with nothing to steal answered 503 ScopeBusy
(tests/ha/test_root_claim_behind_a_frozen_holder.py).

Now a root claim locks the related rows without waiting (NOWAIT): one taken by another transaction
makes the attempt answer 'busy' at once, its transaction (or, for the advisory claim, the block that
took its advisory locks) ends, '/' is free again, and the caller retries with backoff within its claim
timeout, as after any busy answer. 'busy' grants nothing, so no safety argument changes; the root claim
only gives up where it used to wait. Claims on any other scope wait as before: they hold only their own
metalake's anchor (or their own advisory locks), so their waits hold up only claims related to the
row they wait for.
  * PostgreSQL gm_claim_scope (0012's body): step 4 locks the related rows FOR UPDATE NOWAIT for a root
    claim, in a block whose lock_not_available handler answers 'busy' (the call's transaction then
    commits having written nothing).
  * PostgreSQL gm_advisory_claim (0011's body): a root claim's advisory locks and its related rows, read
    FOR SHARE NOWAIT, are taken in one block; a taken row rolls that block back, which gives back the
    advisory locks it took, and the function answers 'busy' (the caller sleeps with backoff and calls
    again). Other claims, and a root claim's 'timeout' and 'leased' answers, are as before.
  * MariaDB gm_claim_scope (0015's body): a root claim's locking read by key runs with a lock wait
    timeout of 0 (`SET STATEMENT innodb_lock_wait_timeout = 0 FOR SELECT ... FOR UPDATE`: MariaDB does
    not allow NOWAIT in a stored procedure); its error (1205) is handled in the procedure: ROLLBACK,
    'busy'.
Signatures are unchanged (CREATE OR REPLACE on PostgreSQL; the procedure is dropped and created). The
downgrade restores 0012's and 0011's functions and 0015's procedure.
'''

import importlib.util
from pathlib import Path

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_CLAIM_SCOPE_PG = r"""
CREATE OR REPLACE FUNCTION gm_claim_scope(
    p_path text, p_anchor text, p_related text[], p_descendants text,
    p_holder text, p_ttl_ms bigint, p_async boolean,
    p_advisory_shared bigint[], p_advisory_exclusive bigint,
    OUT status text, OUT fence bigint, OUT stolen text[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
    v_fence bigint;
    v_found boolean;
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
    -- 3. a live claim on the scope, an ancestor or a descendant (as committed) means busy at once
    IF EXISTS (SELECT 1 FROM gm_scope_lease
               WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                 AND lease_expires_at > clock_timestamp()) THEN
        status := 'busy';
        RETURN;
    END IF;
    -- 4. related claims found, all expired: lock them (waits for any transaction holding one of those
    --    rows, e.g. a renewal, to end), then judge them again as those transactions committed them.
    --    A root claim, which holds '/' FOR UPDATE and so excludes every other claim, never waits here:
    --    a row locked by another transaction (a holder inside its fenced store transaction, a renewal)
    --    answers busy, and the caller retries after '/' is free again (revision 0020)
    IF p_anchor = '/' THEN
        BEGIN
            PERFORM 1 FROM gm_scope_lease
            WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
            FOR UPDATE NOWAIT;
            v_found := FOUND;
        EXCEPTION WHEN lock_not_available THEN
            status := 'busy';
            RETURN;
        END;
    ELSE
        PERFORM 1 FROM gm_scope_lease
        WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
        FOR UPDATE;
        v_found := FOUND;
    END IF;
    IF v_found AND EXISTS (SELECT 1 FROM gm_scope_lease
                           WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                             AND lease_expires_at > clock_timestamp()) THEN
        status := 'busy';
        RETURN;
    END IF;
    -- 5. steal the expired related claims (locked by this transaction since step 4)
    WITH gone AS (
        DELETE FROM gm_scope_lease
        WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
          AND lease_expires_at <= clock_timestamp()
        RETURNING scope_path || ' ' || holder_id || ' ' || gm_scope_lease.fence AS what
    )
    SELECT coalesce(array_agg(what), ARRAY[]::text[]) INTO stolen FROM gone;
    -- 6. the next fence: above every earlier grant on a related path (they all wrote it to an anchor
    --    row this claim has locked, or, for a root claim, to some anchor row)
    IF p_anchor = '/' THEN
        SELECT max(a.fence) + 1 INTO v_fence FROM gm_claim_anchor a;
    ELSE
        SELECT greatest(r.fence, m.fence) + 1 INTO v_fence FROM gm_claim_anchor r, gm_claim_anchor m
        WHERE r.anchor = '/' AND m.anchor = p_anchor;
    END IF;
    UPDATE gm_claim_anchor SET fence = v_fence WHERE anchor = p_anchor;
    -- 7. the claim row, expiring TTL later by the database clock
    INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, updated_at)
    VALUES (p_path, p_holder, v_fence, clock_timestamp() + p_ttl_ms * interval '1 millisecond',
            clock_timestamp(), clock_timestamp());
    fence := v_fence;
    status := 'granted';
END
$$
"""

_ADVISORY_CLAIM_PG = r"""
CREATE OR REPLACE FUNCTION gm_advisory_claim(
    p_shared bigint[], p_exclusive bigint, p_related text[], p_descendants text, p_wait_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
    v_waited boolean := false;
    v_expires timestamptz;
    v_lock_timeout text := current_setting('lock_timeout');
    -- a root claim (no ancestors) holds the exclusive lock on '/', which every other claim needs shared
    v_root boolean := coalesce(cardinality(p_shared), 0) = 0;
BEGIN
    PERFORM set_config('lock_timeout', greatest(p_wait_ms, 1) || 'ms', true);
    -- 0. a block around steps 1 and 2: when a root claim meets a related lease row locked by another
    --    transaction, it raises GMBSY, which rolls this block back (giving back the advisory locks of
    --    step 1) and answers 'busy': the caller sleeps with backoff and calls again
    BEGIN
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
        --    store write, a renewal, a release, a steal), then judges each as it was left. A root claim
        --    does not wait (NOWAIT): it would hold '/' exclusively meanwhile, and every claim in every
        --    metalake would queue behind a holder stalled in one of them
        BEGIN
            IF v_root THEN
                FOR v_expires IN
                    SELECT lease_expires_at FROM gm_scope_lease
                    WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
                    ORDER BY scope_path
                    FOR SHARE NOWAIT
                LOOP
                    IF v_expires > clock_timestamp() THEN
                        RAISE EXCEPTION 'live lease' USING ERRCODE = 'GMLSD';  -- rolls back this block's row locks
                    END IF;
                END LOOP;
            ELSE
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
            END IF;
        EXCEPTION
            WHEN lock_not_available THEN
                IF v_root THEN
                    RAISE EXCEPTION 'a related lease row is locked' USING ERRCODE = 'GMBSY';
                END IF;
                PERFORM set_config('lock_timeout', v_lock_timeout, true);
                RETURN 'timeout';
            WHEN SQLSTATE 'GMLSD' THEN
                PERFORM set_config('lock_timeout', v_lock_timeout, true);
                RETURN 'leased';
        END;
    EXCEPTION WHEN SQLSTATE 'GMBSY' THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
        RETURN 'busy';
    END;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
    RETURN CASE WHEN v_waited THEN 'waited' ELSE 'granted' END;
END;
$$;
"""

_CLAIM_SCOPE_MARIADB = r"""
CREATE PROCEDURE gm_claim_scope(
    IN p_path VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_anchor VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_r1 VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_r2 VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_r3 VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_r4 VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_r5 VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_descendants VARCHAR(1300) CHARACTER SET utf8mb4 COLLATE {collation},
    IN p_holder VARCHAR(200),
    IN p_ttl_ms BIGINT)
claim: BEGIN
    DECLARE v_root VARCHAR(600) DEFAULT NULL;
    DECLARE v_mine VARCHAR(600) DEFAULT NULL;
    DECLARE v_found BIGINT DEFAULT 0;
    DECLARE v_live BIGINT DEFAULT 0;
    DECLARE v_taken BOOLEAN DEFAULT FALSE;
    DECLARE v_fence BIGINT;
    DECLARE v_stolen TEXT DEFAULT '';
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;
    -- 1. the serializer rows
    IF p_anchor = '/' THEN
        SELECT anchor INTO v_root FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE;
        SET v_mine = v_root;
    ELSE
        SELECT anchor INTO v_root FROM gm_claim_anchor WHERE anchor = '/' LOCK IN SHARE MODE;
        SELECT anchor INTO v_mine FROM gm_claim_anchor WHERE anchor = p_anchor FOR UPDATE;
    END IF;
    IF v_root IS NULL OR v_mine IS NULL THEN
        ROLLBACK;
        SELECT 'no-anchor' AS status, NULL AS fence, '' AS stolen;
        LEAVE claim;
    END IF;
    -- 2. a live related claim (as committed) means busy at once
    SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0) INTO v_found, v_live
    FROM gm_scope_lease
    WHERE scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!';
    IF v_live > 0 THEN
        ROLLBACK;
        SELECT 'busy' AS status, NULL AS fence, '' AS stolen;
        LEAVE claim;
    END IF;
    IF v_found > 0 THEN
        -- 3 and 4. all expired: lock each one found by its key, judge it as committed, steal it. A root
        -- claim, which holds '/' FOR UPDATE and so excludes every other claim, never waits for a row
        -- lock here (a lock wait timeout of 0): a row another transaction holds answers busy (0020)
        steal: BEGIN
            DECLARE v_key VARCHAR(600) CHARACTER SET utf8mb4 COLLATE {collation};
            DECLARE v_here BIGINT;
            DECLARE v_what TEXT;
            DECLARE v_done BOOLEAN DEFAULT FALSE;
            DECLARE related CURSOR FOR
                SELECT scope_path FROM gm_scope_lease
                WHERE scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!';
            DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = TRUE;
            OPEN related;
            found_keys: LOOP
                FETCH related INTO v_key;
                IF v_done THEN
                    LEAVE found_keys;
                END IF;
                -- an aggregate answers one row even when the claim is gone (no NOT FOUND)
                IF p_anchor = '/' THEN
                    lock_now: BEGIN
                        -- the row is locked by another transaction (NOWAIT is not allowed in a procedure:
                        -- a lock wait timeout of 0 is the same, and fails with the same error)
                        DECLARE EXIT HANDLER FOR 1205 SET v_taken = TRUE;
                        SET STATEMENT innodb_lock_wait_timeout = 0 FOR
                        SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0),
                               max(concat(scope_path, ' ', holder_id, ' ', fence))
                        INTO v_here, v_live, v_what
                        FROM gm_scope_lease WHERE scope_path = v_key FOR UPDATE;
                    END lock_now;
                    IF v_taken THEN
                        LEAVE found_keys;
                    END IF;
                ELSE
                    SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0),
                           max(concat(scope_path, ' ', holder_id, ' ', fence))
                    INTO v_here, v_live, v_what
                    FROM gm_scope_lease WHERE scope_path = v_key FOR UPDATE;
                END IF;
                IF v_live > 0 THEN
                    LEAVE found_keys;
                END IF;
                IF v_here > 0 THEN
                    DELETE FROM gm_scope_lease WHERE scope_path = v_key;
                    SET v_stolen = IF(v_stolen = '', v_what, concat(v_stolen, '\n', v_what));
                END IF;
            END LOOP;
            CLOSE related;
        END steal;
        IF v_live > 0 OR v_taken THEN
            ROLLBACK;
            SELECT 'busy' AS status, NULL AS fence, '' AS stolen;
            LEAVE claim;
        END IF;
    END IF;
    -- 5. the next fence, stored in this claim's anchor row
    IF p_anchor = '/' THEN
        SELECT coalesce(max(fence), 0) + 1 INTO v_fence FROM gm_claim_anchor;
    ELSE
        SELECT greatest(r.fence, m.fence) + 1 INTO v_fence FROM gm_claim_anchor r, gm_claim_anchor m
        WHERE r.anchor = '/' AND m.anchor = p_anchor;
    END IF;
    UPDATE gm_claim_anchor SET fence = v_fence WHERE anchor = p_anchor;
    -- 6. the claim row
    INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, updated_at)
    VALUES (p_path, p_holder, v_fence, UTC_TIMESTAMP(6) + INTERVAL p_ttl_ms * 1000 MICROSECOND,
            UTC_TIMESTAMP(6), UTC_TIMESTAMP(6));
    COMMIT;
    SELECT 'granted' AS status, v_fence AS fence, v_stolen AS stolen;
END
"""


def upgrade() -> None:
    _install(_CLAIM_SCOPE_PG, _ADVISORY_CLAIM_PG, _CLAIM_SCOPE_MARIADB)


def downgrade() -> None:
    _install(_revision("0012_claim_locks_related_leases.py")._CREATE,
             _revision("0011_advisory_claim_waits_for_fenced_writes.py")._CREATE,
             _revision("0015_mariadb_claim_locks_found_keys.py")._CREATE)


def _install(claim_scope_pg: str, advisory_claim_pg: str, claim_scope_mariadb: str) -> None:
    """PostgreSQL: replace both functions (same signatures); MySQL/MariaDB: the procedure, by 0015's
    _replace (which gives it the path column's collation). SQLite has neither."""
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(claim_scope_pg)
        op.execute(advisory_claim_pg)
    elif dialect in ("mysql", "mariadb"):
        _revision("0015_mariadb_claim_locks_found_keys.py")._replace(claim_scope_mariadb)


def _revision(script: str):  # type: ignore[no-untyped-def]
    """The module of an earlier revision's script beside this one (its frozen statements)."""
    spec = importlib.util.spec_from_file_location(f"_gm_{script[:4]}", Path(__file__).with_name(script))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
