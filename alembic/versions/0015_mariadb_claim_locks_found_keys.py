'''MariaDB's claim procedure locks only the related claims it found, each by its primary key.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-12

Revision 0013's gm_claim_scope, about to steal, re-read the related claims with one locking read:
`SELECT ... WHERE scope_path IN (..) OR scope_path LIKE 'P/%' ESCAPE '!' FOR UPDATE`. InnoDB locks
every row that read visits, not only the rows that match: on a small table the plan is a full scan
(every claim row of every metalake), on a larger one a range scan that also visits the first row past
the LIKE range. Either way the claim waited on the row lock of an unrelated holder, e.g. a replica frozen
after its fence guard in metalake m4 made steals in m1 run out of their acquire timeout (503 ScopeBusy)
while they held m1's anchor FOR UPDATE, so every other claim under m1 queued behind them. PostgreSQL's
function (revision 0012) locks only the rows that match; this revision makes MariaDB's do the same.

Steps 3 and 4 of the procedure (0013's docstring has the rest) are now:
  3. related claims found, all expired: a plain read of their keys (a cursor over the same IN/LIKE
     test, which reads committed versions and waits for nobody), then, key by key, a locking read of
     `WHERE scope_path = <key>` (a primary-key lookup: InnoDB locks that one row, and at READ COMMITTED
     nothing when the row is gone). It waits for a renewal in flight and judges the row as committed: a
     live one answers 'busy' (the steal racing a renewal, revision 0012's fix, still holds).
     No related claim can appear between the plain read and the locks: every related claim takes the
     anchor row this transaction holds FOR UPDATE, and a renewal only updates an existing row. A row
     can disappear (a release, the reclaimer): its locking read then finds nothing, and nothing is
     stolen. The key itself is the path, so a row found by it is related by construction.
  4. the steal deletes each expired row it locked, again by its key (a DELETE whose WHERE is the IN/LIKE
     test would visit, and wait for, the same unrelated rows as the old locking read).
The downgrade restores revision 0013's procedure.
'''

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
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
    IF v_live > 0 THEN
        ROLLBACK;
        SELECT 'busy' AS status, NULL AS fence, '' AS stolen;
        LEAVE claim;
    END IF;
    IF v_found > 0 THEN
        -- 3 and 4. all expired: lock each one found by its key, judge it as committed, steal it
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
                SELECT count(*), coalesce(sum(lease_expires_at > UTC_TIMESTAMP(6)), 0),
                       max(concat(scope_path, ' ', holder_id, ' ', fence))
                INTO v_here, v_live, v_what
                FROM gm_scope_lease WHERE scope_path = v_key FOR UPDATE;
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
        IF v_live > 0 THEN
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

_DROP = "DROP PROCEDURE IF EXISTS gm_claim_scope"


def upgrade() -> None:
    _replace(_CREATE)


def downgrade() -> None:
    _replace(_revision("0013_mariadb_claim_procedure.py")._CREATE)


def _replace(create: str) -> None:
    """MySQL/MariaDB: drop gm_claim_scope and create it from `create`, with the path column's collation
    (other databases have no procedure)."""
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    collation = bind.execute(sa.text(
        "SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() "
        "AND table_name = 'gm_scope_lease' AND column_name = 'scope_path'")).scalar_one()
    op.execute(_DROP)
    op.execute(create.format(collation=collation))


def _revision(script: str):  # type: ignore[no-untyped-def]
    """The module of an earlier revision's script beside this one (its frozen statements)."""
    spec = importlib.util.spec_from_file_location(f"_gm_{script[:4]}", Path(__file__).with_name(script))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
