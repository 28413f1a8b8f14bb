'''The lease claim locks the related leases, numbers fences per metalake anchor, and has no waiter line
(a steal never races a renewal, fence ordering, and the knobs nobody should turn).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04

1. Liveness by a locking read. Revision 0005's gm_claim_scope read the related claims with a plain read
   and then stole the expired ones with `DELETE ... WHERE lease_expires_at <= now`. A holder's renewal
   (`UPDATE ... SET lease_expires_at = now+TTL WHERE ... AND lease_expires_at > now`) that ran just
   before its lease expired and committed just after raced it: the read saw the committed, expired row;
   the DELETE waited for the renewal's row lock, then re-checked the renewed row (EvalPlanQual), found it
   live and deleted nothing; the claim was granted anyway, and both claims were live with both fence
   guards passing. Now, when the plain read finds related claims and all of them expired, the function
   locks them (`SELECT ... FOR UPDATE`), which waits for any transaction holding one of them, and reads
   their liveness again in the next statement, which at READ COMMITTED sees each row as that transaction
   committed it (a renewal in flight: live, busy); a row found expired stays locked until the steal
   deletes it. A claim committed live still answers busy at the plain read, without waiting.
2. Fences ordered across related paths. gm_scope_fence numbered each path on its own, so a grant on
   /m/c could get a smaller fence than an earlier grant on /m/c/s. The counter is now the column
   gm_claim_anchor.fence: a claim under metalake anchor A takes max(fence of '/', fence of A) + 1 and
   stores it in A (it holds A FOR UPDATE and '/' FOR KEY SHARE, so neither changes meanwhile); a root
   claim (which holds '/' FOR UPDATE, excluding every other claim) takes the max over all anchors + 1
   and stores it in '/'. Every two related claims lock a common anchor row, so the later one reads the
   earlier one's fence. The upgrade seeds every anchor with the highest fence gm_scope_fence holds, so
   no fence ever goes back. gm_scope_fence stays (unwritten) for the downgrade.
3. No waiter line: gm_claim_waiter is dropped and the function loses its ticket argument and its
   `ahead` result (the line was off by default and lowered throughput, docs/benchmarks.md). The status is
   'granted', 'busy' (a live related claim or a taken advisory lock) or 'no-anchor'.

The downgrade restores 0005 (its function, an empty gm_claim_waiter) and brings every gm_scope_fence row
up to the highest fence issued, so per-path counters continue above every fence an engine may have seen
(a path first claimed after the upgrade and not in gm_scope_fence starts at 1 again after a downgrade).
'''

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0012"
down_revision = "0011"
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
    v_fence bigint;
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
    --    rows, e.g. a renewal, to end), then judge them again as those transactions committed them
    PERFORM 1 FROM gm_scope_lease
    WHERE scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!'
    FOR UPDATE;
    IF FOUND AND EXISTS (SELECT 1 FROM gm_scope_lease
                         WHERE (scope_path = ANY (p_related) OR scope_path LIKE p_descendants ESCAPE '!')
                           AND lease_expires_at > clock_timestamp()) THEN
        status := 'busy';
        RETURN;
    END IF;
    -- 5. steal the expired related claims (locked by this transaction since step 3)
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

_DROP = "DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, boolean, bigint[], bigint)"
_DROP_0005 = "DROP FUNCTION IF EXISTS gm_claim_scope(text, text, text[], text, text, bigint, bigint, boolean, bigint[], bigint)"


def upgrade() -> None:
    op.add_column("gm_claim_anchor", sa.Column("fence", sa.BigInteger, nullable=False, server_default="0"))
    bind = op.get_bind()
    top = bind.execute(sa.text("SELECT coalesce(max(fence), 0) FROM gm_scope_fence")).scalar_one()
    bind.execute(sa.text("UPDATE gm_claim_anchor SET fence = :top"), {"top": top})
    if top and bind.execute(sa.text("SELECT count(*) FROM gm_claim_anchor WHERE anchor = '/'")).scalar_one() == 0:
        # SQLite never wrote anchor rows; every later fence is above this one
        bind.execute(sa.text("INSERT INTO gm_claim_anchor (anchor, fence) VALUES ('/', :top)"), {"top": top})
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP_0005)  # another signature: CREATE OR REPLACE would add an overload
        op.execute(_CREATE)
    op.drop_index("ix_claim_waiter_scope", table_name="gm_claim_waiter")
    op.drop_table("gm_claim_waiter")


def downgrade() -> None:
    revision_0005 = _revision("0005_claim_waiter_line.py")
    op.create_table(
        "gm_claim_waiter",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("holder_id", sa.String(200), nullable=False, unique=True),
        sa.Column("scope_path", revision_0005._path(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True).with_variant(
            mysql.DATETIME(fsp=6), "mysql", "mariadb"), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_claim_waiter_scope", "gm_claim_waiter", ["scope_path"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
        op.execute(revision_0005._CREATE)
    bind = op.get_bind()
    top = bind.execute(sa.text("SELECT coalesce(max(fence), 0) FROM gm_claim_anchor")).scalar_one()
    bind.execute(sa.text("UPDATE gm_scope_fence SET fence = :top WHERE fence < :top"), {"top": top})
    with op.batch_alter_table("gm_claim_anchor") as batch:
        batch.drop_column("fence")


def _revision(script: str):  # type: ignore[no-untyped-def]
    """The module of an earlier revision's script beside this one (its frozen statements)."""
    spec = importlib.util.spec_from_file_location(f"_gm_{script[:4]}", Path(__file__).with_name(script))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
