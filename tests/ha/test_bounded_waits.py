"""Every wait of the claim layer is bounded, on PostgreSQL and MariaDB.

(a) A holder that passed its fence guard (its claim row locked FOR UPDATE in its store transaction) and
    froze there, past its lease, must not make a related claimant wait longer than the claimant's
    acquire timeout: the claimant answers 503 ScopeBusy while the holder is still frozen.
(b) The reclaimer meeting such a locked row must not stop the same worker's renewals: a claim of that
    worker on an unrelated scope stays renewed and trusted.
(c) The server ends a stalled holder's idle transaction itself after
    gravimeta.store.idle-transaction-timeout-ms: its rows are free again, and the holder, when it wakes,
    answers a clear error (503 StoreUnavailable or 409 FenceLost), never a 500.
(d) A claim waits only on rows related to it: a holder frozen after its guard in metalake m4 does not
    hold up a steal of an expired claim in m1 (MariaDB's locking re-read visited, and waited for, claim
    rows of other metalakes until alembic 0015 locked the rows it found by their keys).
(e) The one-off insert of a claim's anchor rows is bounded like the claim: behind a claim transaction
    that holds the metalake's anchor FOR UPDATE, it answers 503 ScopeBusy within the claim timeout
    (MariaDB's INSERT IGNORE takes a shared lock on the existing anchor row and waited as long as that
    transaction did).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select, text

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.tables import scope_lease
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, in_background, ok, wait_until
from tests.support.databases import fresh_database


@pytest.fixture(params=["postgresql", "mysql"])
def shared_db(request, tmp_path) -> Iterator[str]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def engine(shared_db) -> Iterator[Engine]:
    engine = create_store_engine(shared_db)
    yield engine
    engine.dispose()


def lease_row(engine: Engine, path: str) -> Any:
    """(holder_id, fence, expires_at, live) of the claim row on `path`, None if there is none."""
    lease = scope_lease.c
    with engine.connect() as conn:
        return conn.execute(select(lease.holder_id, lease.fence, lease.lease_expires_at,
                                   (lease.lease_expires_at > db_now(dialect_of(engine))).label("live"))
                            .where(lease.scope_path == path)).first()


def expired(engine: Engine, path: str) -> bool:
    row = lease_row(engine, path)
    return row is not None and not row.live


def row_free(engine: Engine, path: str) -> bool:
    """Whether the claim row on `path` can be locked right now (or is gone): nobody holds it."""
    lease = scope_lease.c
    with engine.connect() as conn, conn.begin():
        try:
            conn.execute(select(lease.fence).where(lease.scope_path == path).with_for_update(nowait=True)).all()
        except Exception:
            return False
    return True


def stalled_holder(cluster: Cluster, api: Api, m: str = "m", setup: bool = True) -> Any:
    """A create of table t in /<m>/c/s on `api`'s replica (tagged "h"), frozen right after its fence guard
    locked its claim row; returns (thread, answers, paused hit). `setup`: create m, c and s first (else
    only schema s)."""
    if setup:
        ok(api.metalake(m))
        ok(api.catalog("memory", {}, m=m))
    ok(api.schema(m=m))
    cluster.fp.arm("guard.after_lock", tag="h")
    thread, answers = in_background(lambda: api.table("t", m=m))
    return thread, answers, cluster.fp.wait_reached("guard.after_lock", tag="h")


def waits_on_a_lock(engine: Engine) -> bool:
    """Whether a session of this test's database waits for a row lock right now (MariaDB: a claim
    statement has been running for 300 ms, which only a lock wait makes it do; a transaction that has
    written nothing yet has no innodb_trx row to show its wait)."""
    if dialect_of(engine) == "postgresql":
        query = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND wait_event_type = 'Lock'")
    else:
        query = ("SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() "
                 "AND id <> CONNECTION_ID() AND time_ms > 300 "
                 "AND (info LIKE '%gm_scope_lease%' OR info LIKE '%gm_claim_%')")
    with engine.connect() as conn:
        return bool(conn.execute(text(query)).scalar())


# --------------------------------------------------------------------- (a)


def test_a_claimant_gives_up_within_its_timeout_while_a_guarded_holder_is_frozen(shared_db, tmp_path, clusters):
    cluster = Cluster(shared_db, tmp_path, {"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "60000"})
    clusters.append(cluster)
    holder = Api(cluster.replica("h"))
    claimant = Api(cluster.replica("b", GRAVIMETA_CLAIM_TIMEOUT_MS="1000"))
    thread, created, paused = stalled_holder(cluster, holder)
    wait_until("the frozen holder's lease on /m/c/s expired", lambda: expired(cluster.engine, "/m/c/s"), timeout=15)

    started = time.monotonic()
    waiter, answered = in_background(lambda: claimant.table("t2"))
    waiter.join(10)
    elapsed, in_time = time.monotonic() - started, list(answered)
    frozen = cluster.fp.is_paused(paused)
    cluster.fp.resume(paused)
    waiter.join(60)
    thread.join(60)
    assert frozen, "the holder was resumed before the claimant answered"
    assert in_time, (
        f"the claimant (acquire timeout 1000 ms) was still waiting after {elapsed:.1f} s, behind the claim row "
        "of a holder frozen after its fence guard")
    status, body = in_time[0]
    assert status == 503 and body.get("type") == "ScopeBusyException", (status, body)
    assert elapsed < 5, f"ScopeBusy only after {elapsed:.1f} s (acquire timeout 1000 ms)"
    # the holder, once resumed: 200 (its claim row stayed locked, nobody could steal it), 409 FenceLost, or on
    # MariaDB 503 ScopeBusy (its statements after the guard are bounded by the claim's time left, by then gone:
    # a statement slower than 1 ms on a loaded machine runs out); whatever it answered, the store agrees
    assert created and created[0][0] in (200, 409, 503), created
    if created[0][0] == 503:
        assert created[0][1].get("type") == "ScopeBusyException" and "nothing was changed" in created[0][1]["message"]
    with cluster.engine.connect() as conn:
        stored = conn.execute(text("SELECT count(*) FROM gm_table WHERE name = 't'")).scalar()
    assert stored == (1 if created[0][0] == 200 else 0), (created, stored)


# --------------------------------------------------------------------- (b)


def test_a_blocked_reclaim_never_holds_up_a_renewal(engine, shared_db, children):
    ttl_ms = 1500
    stalled = children("stall", {"url": shared_db, "path": "/h", "ttl_ms": ttl_ms}, "tests.ha.waits_child")
    stalled.expect("LOCKED")
    wait_until("the stalled holder's lease on /h expired", lambda: expired(engine, "/h"), timeout=15)
    worker = children("worker", {"url": shared_db, "path": "/w", "ttl_ms": ttl_ms}, "tests.ha.waits_child")
    worker.expect("CLAIMED")
    first = lease_row(engine, "/w").lease_expires_at
    # the reclaimer runs every TTL and meets /h's locked, expired row on its first run; three TTLs later the
    # worker's claim on /w must have been renewed all along
    renewed = wait_until_or_none(lambda: lease_row(engine, "/w").lease_expires_at.timestamp()
                                 >= first.timestamp() + 3 * ttl_ms / 1000, timeout=12)
    worker.send("status")
    state = worker.expect("")
    row = lease_row(engine, "/w")
    assert renewed and state == "TRUSTED", (
        f"the worker's claim on /w was not renewed while its reclaimer met a locked row (claim {state}, "
        f"row expires {row.lease_expires_at}, first seen expiring {first}, live {row.live})")
    assert lease_row(engine, "/h") is not None, "the reclaimer deleted a row whose holder still held its lock"
    stalled.send("go")
    stalled.expect("DONE")


def wait_until_or_none(condition: Any, timeout: float) -> bool:
    try:
        wait_until("condition", condition, timeout=timeout)
        return True
    except AssertionError:
        return False


# --------------------------------------------------------------------- (c)


def test_the_server_ends_an_idle_guarded_transaction_and_its_holder_gets_a_clear_error(
        shared_db, tmp_path, clusters):
    cluster = Cluster(shared_db, tmp_path, {"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "1500"})
    clusters.append(cluster)
    holder = Api(cluster.replica("h"))
    thread, created, paused = stalled_holder(cluster, holder)
    assert not row_free(cluster.engine, "/m/c/s"), "the frozen holder does not hold its claim row"
    freed = wait_until_or_none(lambda: row_free(cluster.engine, "/m/c/s"), timeout=15)
    frozen = cluster.fp.is_paused(paused)
    cluster.fp.resume(paused)
    thread.join(60)
    assert frozen, "the holder was resumed before its row was freed"
    assert freed, "the claim row of a holder idle in its transaction was still locked after 15 s (idle timeout 1.5 s)"
    assert created, "the holder did not answer"
    status, body = created[0]
    assert status in (503, 409), (status, body)
    assert body.get("type") in ("RuntimeException", "FenceLostException"), body
    assert "Internal error" not in body.get("message", ""), body
    other = Api(cluster.replica("b"))
    assert other.table("t3")[0] == 200, "a related create after the idle holder was ended"


# --------------------------------------------------------------------- (d)


def test_a_holder_frozen_in_one_metalake_does_not_hold_up_a_steal_in_another(shared_db, tmp_path, clusters,
                                                                              children):
    # the replicas' reclaimers run every TTL: with a long one, the abandoned claim below is still there,
    # expired, when the stealer claims (a reclaimed row would leave nothing to steal)
    cluster = Cluster(shared_db, tmp_path, {"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "60000",
                                            "GRAVIMETA_LEASE_TTL_MS": "120000"})
    clusters.append(cluster)
    holder = Api(cluster.replica("h"))
    stealer = Api(cluster.replica("b", GRAVIMETA_CLAIM_TIMEOUT_MS="5000"))
    for m in ("m1", "m4"):  # (a metalake create claims '/', which would steal the claim below)
        ok(stealer.metalake(m))
        ok(stealer.catalog("memory", {}, m=m))
    ok(stealer.schema(m="m1"))
    # a claim on /m1/c/s whose process stopped renewing it (no heartbeat): it expires, and is stolen
    gone = children("hold", {"url": shared_db, "path": "/m1/c/s", "ttl_ms": 1000, "no_heartbeat": True})
    gone.expect("CLAIMED")
    thread, created, paused = stalled_holder(cluster, holder, m="m4", setup=False)
    wait_until("the abandoned claim on /m1/c/s expired", lambda: expired(cluster.engine, "/m1/c/s"), timeout=15)

    waiter, answered = in_background(lambda: stealer.table("t", m="m1"))
    waiter.join(30)
    frozen = cluster.fp.is_paused(paused)
    cluster.fp.resume(paused)
    thread.join(60)
    assert frozen, "the holder in m4 was resumed before the steal in m1 answered"
    assert answered, "the create in m1 did not answer within 30 s"
    status, body = answered[0]
    assert status == 200, (
        f"a create in m1 that steals an expired claim answered {status} {body} while a holder in m4 was frozen "
        "after its fence guard: the steal waited on a claim row of another metalake")
    row = lease_row(cluster.engine, "/m1/c/s")
    assert row is None or not row.holder_id.startswith("child"), "the abandoned claim was not stolen"
    assert created and created[0][0] in (200, 409), created


@pytest.mark.parametrize("path", ["/m1/c/s", "/m1/c/s/t/p"])  # MariaDB: the procedure; the statements one by one
def test_a_steal_locks_only_the_claims_it_found(engine, shared_db, children, tmp_path, path):
    frozen = children("stall", {"url": shared_db, "path": "/m4/c/s", "ttl_ms": 60000}, "tests.ha.waits_child")
    frozen.expect("LOCKED")
    gone = children("hold", {"url": shared_db, "path": path, "ttl_ms": 1000, "no_heartbeat": True})
    gone.expect("CLAIMED")
    wait_until(f"the abandoned claim on {path} expired", lambda: expired(engine, path), timeout=15)
    stealer = children("claim", {"url": shared_db, "path": path, "ttl_ms": 60000, "timeout_ms": 3000,
                                 "fp_dir": str(tmp_path / "fp"), "tag": "s"}, "tests.ha.lease_child")
    answer = stealer.expect("", timeout=30)
    guard = stealer.expect("") if answer.startswith("CLAIMED") else None
    frozen.send("go")
    frozen.expect("DONE")
    assert answer.startswith("CLAIMED") and guard == "GUARD OK", (
        f"the claim on {path} that steals an expired claim answered {answer} ({guard}) while a holder of "
        "/m4/c/s was frozen after its fence guard")


# --------------------------------------------------------------------- (e)


def test_an_anchor_insert_behind_a_held_anchor_answers_busy_within_the_claim_timeout(shared_db, tmp_path, clusters):
    cluster = Cluster(shared_db, tmp_path, {"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "60000"})
    clusters.append(cluster)
    holder = Api(cluster.replica("h"))
    stealer = Api(cluster.replica("b", GRAVIMETA_CLAIM_TIMEOUT_MS="8000"))
    # a replica that has claimed nothing yet: its first claim in m1 inserts the anchor rows '/' and '/m1'
    fresh = Api(cluster.replica("f", GRAVIMETA_CLAIM_TIMEOUT_MS="1000"))
    ok(holder.metalake())
    ok(holder.catalog("memory", {}))
    ok(holder.schema("s2"))
    thread, created, paused = stalled_holder(cluster, holder, setup=False)
    wait_until("the frozen holder's lease on /m/c/s expired", lambda: expired(cluster.engine, "/m/c/s"), timeout=15)
    # the stealer's claim transaction locks m's anchor FOR UPDATE, then waits (up to 8 s) for the frozen
    # holder's claim row
    stealing, _ = in_background(lambda: stealer.table("t2"))
    wait_until("the stealer waits on the frozen holder's claim row", lambda: waits_on_a_lock(cluster.engine),
               timeout=10)

    started = time.monotonic()
    answer = fresh.table("t3", s="s2")  # /m/c/s2: not related to /m/c/s, but under the same anchor
    elapsed = time.monotonic() - started
    frozen = cluster.fp.is_paused(paused)
    cluster.fp.resume(paused)
    stealing.join(60)
    thread.join(60)
    assert frozen, "the holder was resumed before the fresh replica answered"
    status, body = answer
    assert elapsed < 1 + 2, (
        f"the fresh replica (claim timeout 1000 ms) answered {status} only after {elapsed:.1f} s: its anchor "
        "insert waited for the claim transaction holding the anchor")
    assert status == 503 and body.get("type") == "ScopeBusyException", (status, body)
