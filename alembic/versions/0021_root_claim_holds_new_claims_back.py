'''A waiting root claim holds new claims back, for a bounded time, so it gets its moment.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-16

A root claim (a metalake create, rename or drop claims '/') is granted only when no claim is live
anywhere. Nothing held new claims back while it waited: with six threads churning schemas in one
metalake, some claim was live at every one of its attempts, and 7 of 8 metalake creates answered 503
ScopeBusy after their claim timeout (tests/ha/test_root_claim_fairness.py). Now:

  * gm_claim_anchor gets four columns, used on the '/' row only: root_waiter (the holder id of the waiting
    root claim), root_wait_since (its first busy attempt), root_wait_until (the record is live until
    then) and root_wait_ends (the latest it may live). All are written by the database clock.
  * A root claim attempt that finds the tree busy records itself as the waiting root claim, in its claim
    transaction, which holds '/' FOR UPDATE: it renews its own record (until = min(ends, now + poll));
    otherwise it starts one if no record is live and the last one has rested, since it ended, as long as
    it lasted (since = now, ends = now + hold); otherwise it records nothing. It answers 'waiting' when
    its record is live, else 'busy'. Granted, it ends its record (until = min(until, now)).
  * Every other claim attempt reads root_wait_until in the statement that locks '/' FOR KEY SHARE (LOCK
    IN SHARE MODE), which waits for a root attempt's transaction and then sees its commit; while the
    record is live it answers 'held' and writes nothing (the caller backs off and tries again).
  * gm_claim_scope (PostgreSQL) takes two more arguments, p_hold_ms and p_poll_ms (default 0: record
    nothing), and calls gm_root_wait, a new function, at each of a root claim's busy answers. Its
    signature changes, so the function of 0020 is dropped first (CREATE OR REPLACE would add an overload).
  * gm_claim_scope (MariaDB) takes the same two arguments last. A busy root attempt that has written
    nothing records itself in its own transaction; one whose steal had deleted rows before it met a live
    or locked one rolls back first and records itself in a transaction of its own.
  * gm_advisory_claim (PostgreSQL; PG_ADVISORY, AUTO), for a claim under a metalake, answers 'busy' before
    it takes any lock while the record is live, so that the advisory claims of a churn (memory catalogs)
    cannot starve a lease root claim either (under AUTO, the force drop of a metalake with sqlite or hive
    catalogs), whose pg_try_advisory_xact_lock on '/' fails while any of them holds it shared. The
    advisory root claim (metalake operations) records nothing: it waits in PostgreSQL's lock queue.
  * SQLite sends the statements one by one (gravimeta/concurrency/root_wait.py); only the columns here.
The node sends durations only (hold: a quarter of the root claim's timeout, at most its time left; poll:
500 ms); every instant is the database's. The downgrade restores 0020's functions and procedure, drops
gm_root_wait and the columns.
'''

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_COLUMNS = ("root_waiter", "root_wait_since", "root_wait_until", "root_wait_ends")

_DROP_0020 = ("DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, boolean, bigint[], "
              "bigint)")
_DROP = ("DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, boolean, bigint[], "
         "bigint, bigint, bigint)")
_DROP_ROOT_WAIT = "DROP FUNCTION IF EXISTS gm_root_wait(text, bigint, bigint)"

_ROOT_WAIT_PG = r"""
CREATE OR REPLACE FUNCTION gm_root_wait(p_holder text, p_hold_ms bigint, p_poll_ms bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_waiter text;
    v_since timestamptz;
    v_until timestamptz;
    v_ends timestamptz;
BEGIN
    -- called by a root claim's busy attempt, which holds '/' FOR UPDATE: no other claim runs meanwhile
    IF coalesce(p_hold_ms, 0) <= 0 THEN
        RETURN 'busy';
    END IF;
    SELECT root_waiter, root_wait_since, root_wait_until, root_wait_ends INTO v_waiter, v_since, v_until, v_ends
    FROM gm_claim_anchor WHERE anchor = '/';
    IF v_waiter = p_holder AND v_now < v_ends THEN
        NULL;  -- this claim's record: renew it
    ELSIF v_until IS NULL OR v_now >= v_until + (v_until - v_since) THEN
        v_since := v_now;  -- none live, and the last one has rested as long as it lasted: start one
        v_ends := v_now + p_hold_ms * interval '1 millisecond';
    ELSE
        RETURN 'busy';  -- another root claim's record is live, or the last one is resting
    END IF;
    UPDATE gm_claim_anchor SET root_waiter = p_holder, root_wait_since = v_since, root_wait_ends = v_ends,
        root_wait_until = least(v_ends, v_now + greatest(p_poll_ms, 1) * interval '1 millisecond')
    WHERE anchor = '/';
    RETURN 'waiting';
END
$$
"""

_CLAIM_SCOPE_PG = r"""
CREATE FUNCTION gm_claim_scope(
    p_path text, p_anchor text, p_related text[], p_descendants text,
    p_holder text, p_ttl_ms bigint, p_async boolean,
    p_advisory_shared bigint[], p_advisory_exclusive bigint,
    p_hold_ms bigint DEFAULT 0, p_poll_ms bigint DEFAULT 0,
    OUT status text, OUT fence bigint, OUT stolen text[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key bigint;
    v_fence bigint;
    v_found boolean;
    v_held boolean;
BEGIN
    stolen := ARRAY[]::text[];
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- 1. the serializer rows: '/' FOR UPDATE for a root claim, else '/' FOR KEY SHARE and the
    --    metalake's anchor FOR UPDATE; a live record of a waiting root claim holds this claim back
    --    (the locking read waits for a root attempt's transaction and returns the row it committed)
    IF p_anchor = '/' THEN
        PERFORM 1 FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE;
    ELSE
        SELECT coalesce(r.root_wait_until > clock_timestamp(), false) INTO v_held
        FROM gm_claim_anchor r, gm_claim_anchor m
        WHERE r.anchor = '/' AND m.anchor = p_anchor FOR KEY SHARE OF r FOR UPDATE OF m;
    END IF;
    IF NOT FOUND THEN
        status := 'no-anchor';
        RETURN;
    END IF;
    IF v_held THEN
        status := 'held';
        RETURN;
    END IF;
    -- 2. the advisory locks of the scope, when advisory-path operations may run on this database
    IF p_advisory_exclusive IS NOT NULL THEN
        FOREACH v_key IN ARRAY coalesce(p_advisory_shared, ARRAY[]::bigint[]) LOOP
            IF NOT pg_try_advisory_xact_lock_shared(v_key) THEN
                status := CASE WHEN p_anchor = '/' THEN gm_root_wait(p_holder, p_hold_ms, p_poll_ms) ELSE 'busy' END;
                RETURN;
            END IF;
        END LOOP;
        IF NOT pg_try_advisory_xact_lock(p_advisory_exclusive) THEN
            status := CASE WHEN p_anchor = '/' THEN gm_root_wait(p_holder, p_hold_ms, p_poll_ms) ELSE 'busy' END;
            RETURN;
        END IF;
    END IF;
    -- 3. a live claim on the scope, an ancestor or a descendant (as committed) means busy at once
    IF EXISTS (SELECT 1 FROM gm_scope_lease
               WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                 AND lease_expires_at > clock_timestamp()) THEN
        status := CASE WHEN p_anchor = '/' THEN gm_root_wait(p_holder, p_hold_ms, p_poll_ms) ELSE 'busy' END;
        RETURN;
    END IF;
    -- 4. related claims found, all expired: lock them (waits for any transaction holding one of those
    --    rows, e.g. a renewal, to end), then judge them again as those transactions committed them.
    --    A root claim never waits here (revision 0020): a row locked by another transaction answers busy
    IF p_anchor = '/' THEN
        BEGIN
            PERFORM 1 FROM gm_scope_lease
            WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
            FOR UPDATE NOWAIT;
            v_found := FOUND;
        EXCEPTION WHEN lock_not_available THEN
            status := gm_root_wait(p_holder, p_hold_ms, p_poll_ms);
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
        status := CASE WHEN p_anchor = '/' THEN gm_root_wait(p_holder, p_hold_ms, p_poll_ms) ELSE 'busy' END;
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
    -- ... stored in this claim's anchor row; a granted root claim also ends its record as the waiting one
    UPDATE gm_claim_anchor SET fence = v_fence,
        root_wait_until = CASE WHEN root_waiter = p_holder THEN least(root_wait_until, clock_timestamp())
                               ELSE root_wait_until END
    WHERE anchor = p_anchor;
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
    -- a claim under a metalake is held back while a waiting lease root claim's record is live (0021): it
    -- answers 'busy' before it takes any lock, and the caller sleeps with backoff and calls again
    IF NOT v_root AND EXISTS (SELECT 1 FROM gm_claim_anchor WHERE anchor = '/'
                              AND root_wait_until > clock_timestamp()) THEN
        RETURN 'busy';
    END IF;
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
    IN p_ttl_ms BIGINT,
    IN p_hold_ms BIGINT,
    IN p_poll_ms BIGINT)
claim: BEGIN
    DECLARE v_root VARCHAR(600) DEFAULT NULL;
    DECLARE v_mine VARCHAR(600) DEFAULT NULL;
    DECLARE v_held BOOLEAN DEFAULT FALSE;
    DECLARE v_found BIGINT DEFAULT 0;
    DECLARE v_live BIGINT DEFAULT 0;
    DECLARE v_taken BOOLEAN DEFAULT FALSE;
    DECLARE v_fence BIGINT;
    DECLARE v_stolen TEXT DEFAULT '';
    DECLARE v_status VARCHAR(16) DEFAULT 'busy';
    DECLARE v_waiter VARCHAR(200) DEFAULT NULL;
    DECLARE v_now DATETIME(6);
    DECLARE v_since DATETIME(6);
    DECLARE v_until DATETIME(6);
    DECLARE v_ends DATETIME(6);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;
    attempt: BEGIN
        -- 1. the serializer rows; a live record of a waiting root claim holds any other claim back (the
        --    locking read returns the latest committed version of '/')
        IF p_anchor = '/' THEN
            SELECT anchor INTO v_root FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE;
            SET v_mine = v_root;
        ELSE
            SELECT anchor, coalesce(root_wait_until > UTC_TIMESTAMP(6), FALSE) INTO v_root, v_held
            FROM gm_claim_anchor WHERE anchor = '/' LOCK IN SHARE MODE;
            IF v_held THEN
                ROLLBACK;
                SELECT 'held' AS status, NULL AS fence, '' AS stolen;
                LEAVE claim;
            END IF;
            SELECT anchor INTO v_mine FROM gm_claim_anchor WHERE anchor = p_anchor FOR UPDATE;
        END IF;
        IF v_root IS NULL OR v_mine IS NULL THEN
            ROLLBACK;
            SELECT 'no-anchor' AS status, NULL AS fence, '' AS stolen;
            LEAVE claim;
        END IF;
        -- 2. a live related claim (as committed) means busy at once (nothing written yet)
        SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0) INTO v_found, v_live
        FROM gm_scope_lease
        WHERE scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!';
        IF v_live > 0 THEN
            LEAVE attempt;
        END IF;
        IF v_found > 0 THEN
            -- 3 and 4. all expired: lock each one found by its key, judge it as committed, steal it. A root
            -- claim never waits for a row lock here (a lock wait timeout of 0; revision 0020)
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
                -- busy: undo what the steal deleted; a root claim records its wait in a new transaction
                ROLLBACK;
                START TRANSACTION;
                LEAVE attempt;
            END IF;
        END IF;
        -- 5. the next fence, stored in this claim's anchor row; a granted root claim ends its record
        IF p_anchor = '/' THEN
            SELECT coalesce(max(fence), 0) + 1 INTO v_fence FROM gm_claim_anchor;
        ELSE
            SELECT greatest(r.fence, m.fence) + 1 INTO v_fence FROM gm_claim_anchor r, gm_claim_anchor m
            WHERE r.anchor = '/' AND m.anchor = p_anchor;
        END IF;
        UPDATE gm_claim_anchor SET fence = v_fence,
            root_wait_until = IF(root_waiter <=> p_holder, LEAST(root_wait_until, UTC_TIMESTAMP(6)), root_wait_until)
        WHERE anchor = p_anchor;
        -- 6. the claim row
        INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, updated_at)
        VALUES (p_path, p_holder, v_fence, UTC_TIMESTAMP(6) + INTERVAL p_ttl_ms * 1000 MICROSECOND,
                UTC_TIMESTAMP(6), UTC_TIMESTAMP(6));
        COMMIT;
        SELECT 'granted' AS status, v_fence AS fence, v_stolen AS stolen;
        LEAVE claim;
    END attempt;
    -- busy. A root claim records itself as the waiting root claim: it renews its own record before its
    -- end, or starts one if none is live and the last one has rested as long as it lasted (0021)
    IF p_anchor = '/' AND coalesce(p_hold_ms, 0) > 0 THEN
        SELECT root_waiter, root_wait_since, root_wait_until, root_wait_ends
        INTO v_waiter, v_since, v_until, v_ends
        FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE;
        SET v_now = UTC_TIMESTAMP(6);
        IF v_waiter <=> p_holder AND v_now < v_ends THEN
            SET v_status = 'waiting';
        ELSEIF v_until IS NULL
               OR v_now >= v_until + INTERVAL TIMESTAMPDIFF(MICROSECOND, v_since, v_until) MICROSECOND THEN
            SET v_since = v_now, v_ends = v_now + INTERVAL p_hold_ms * 1000 MICROSECOND, v_status = 'waiting';
        END IF;
        IF v_status = 'waiting' THEN
            UPDATE gm_claim_anchor SET root_waiter = p_holder, root_wait_since = v_since, root_wait_ends = v_ends,
                root_wait_until = LEAST(v_ends, v_now + INTERVAL GREATEST(p_poll_ms, 1) * 1000 MICROSECOND)
            WHERE anchor = '/';
        END IF;
        COMMIT;
    ELSE
        ROLLBACK;
    END IF;
    SELECT v_status AS status, NULL AS fence, '' AS stolen;
END
"""


def _time() -> sa.types.TypeEngine:
    # written only by the database clock, like the lease columns (0002)
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    with op.batch_alter_table("gm_claim_anchor") as batch:
        batch.add_column(sa.Column("root_waiter", sa.String(200), nullable=True))
        for column in _COLUMNS[1:]:
            batch.add_column(sa.Column(column, _time(), nullable=True))
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(_ROOT_WAIT_PG)
        op.execute(_DROP_0020)  # another signature: CREATE OR REPLACE would add an overload
        op.execute(_CLAIM_SCOPE_PG)
        op.execute(_ADVISORY_CLAIM_PG)  # same signature
    elif dialect in ("mysql", "mariadb"):
        _revision("0015_mariadb_claim_locks_found_keys.py")._replace(_CLAIM_SCOPE_MARIADB)


def downgrade() -> None:
    revision_0020 = _revision("0020_root_claim_gives_up_on_a_locked_claim_row.py")
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(_DROP)
        op.execute(revision_0020._CLAIM_SCOPE_PG)
        op.execute(revision_0020._ADVISORY_CLAIM_PG)
        op.execute(_DROP_ROOT_WAIT)
    elif dialect in ("mysql", "mariadb"):
        _revision("0015_mariadb_claim_locks_found_keys.py")._replace(revision_0020._CLAIM_SCOPE_MARIADB)
    with op.batch_alter_table("gm_claim_anchor") as batch:
        for column in _COLUMNS:
            batch.drop_column(column)


def _revision(script: str):  # type: ignore[no-untyped-def]
    """The module of an earlier revision's script beside this one (its frozen statements)."""
    spec = importlib.util.spec_from_file_location(f"_gm_{script[:4]}", Path(__file__).with_name(script))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
