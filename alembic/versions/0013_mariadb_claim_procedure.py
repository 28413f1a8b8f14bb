'''The lease claim on MySQL/MariaDB in one call: the stored procedure gm_claim_scope.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

On PostgreSQL the claim transaction is one call of a function (revisions 0004 and 0012). MySQL/MariaDB
sent its statements one by one: the two anchor locks, the related read, the locking re-read before a
steal, the steal, the fence read and update, the insert and the commit, eight round trips or more, with
the metalake's anchor row held FOR UPDATE across all of them, so every claim under that metalake waited
for the round trips of the one before it (bench/claim_overhead.py on MariaDB: LEASE_TABLE p50 1.8-1.9 x
lock off). This procedure runs the same statements in the same order inside the server:

  1. '/' FOR UPDATE for a root claim, else '/' LOCK IN SHARE MODE and the metalake's anchor FOR UPDATE;
     a missing row answers 'no-anchor' (the caller creates it and retries);
  2. a plain read of the related claims (the scope, its ancestors p_r1..p_r5, its descendants by the
     escaped LIKE pattern): a live one answers 'busy';
  3. if there were related claims, all expired: the locking re-read, which waits for a renewal in flight
     and judges each row as it was committed (InnoDB's locking read reads the newest committed version):
     a live one answers 'busy' (revision 0012's fix of the steal racing a renewal);
  4. the steal of the expired related claims, locked by this transaction since step 3;
  5. the next fence, above every earlier grant on a related path, stored in the claim's anchor row;
  6. the claim row, expiring TTL later by the database clock (UTC_TIMESTAMP(6) is evaluated per
     statement inside a procedure), then COMMIT and one result row: status, fence, stolen claims.

Every failure rolls the transaction back before it is raised again (an EXIT handler), so no lock outlives
the call. The caller bounds the call's lock waits as it bounds any statement (gravimeta/store/lock_waits.py:
`SET STATEMENT max_statement_time=.., innodb_lock_wait_timeout=.. FOR CALL ...`). Paths compare with the
column's own binary NO PAD collation, read from the catalog at upgrade time, so '/m/C' is not '/m/c' and
'/m/c ' is not '/m/c'. The downgrade drops the procedure; the statements then run one by one again.
'''

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_CREATE = r"""
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
    IF v_live = 0 AND v_found > 0 THEN
        -- 3. all expired: lock them (waits for a renewal in flight) and judge them as committed
        SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0) INTO v_found, v_live
        FROM gm_scope_lease
        WHERE scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!'
        FOR UPDATE;
    END IF;
    IF v_live > 0 THEN
        ROLLBACK;
        SELECT 'busy' AS status, NULL AS fence, '' AS stolen;
        LEAVE claim;
    END IF;
    -- 4. steal the expired related claims (locked by this transaction since step 3)
    IF v_found > 0 THEN
        SELECT coalesce(group_concat(concat(scope_path, ' ', holder_id, ' ', fence) SEPARATOR '\n'), '')
        INTO v_stolen FROM gm_scope_lease
        WHERE (scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!')
          AND lease_expires_at <= UTC_TIMESTAMP(6);
        DELETE FROM gm_scope_lease
        WHERE (scope_path IN (p_r1, p_r2, p_r3, p_r4, p_r5) OR scope_path LIKE p_descendants ESCAPE '!')
          AND lease_expires_at <= UTC_TIMESTAMP(6);
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

_DROP = "DROP PROCEDURE IF EXISTS gm_claim_scope"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    collation = bind.execute(sa.text(
        "SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() "
        "AND table_name = 'gm_scope_lease' AND column_name = 'scope_path'")).scalar_one()
    op.execute(_DROP)
    op.execute(_CREATE.format(collation=collation))


def downgrade() -> None:
    if op.get_bind().dialect.name in ("mysql", "mariadb"):
        op.execute(_DROP)
