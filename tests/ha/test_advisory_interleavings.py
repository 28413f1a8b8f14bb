"""The advisory claim (PG_ADVISORY, and AUTO on PostgreSQL) under the interleavings below (3-5),
each forced with failpoints (gravimeta/failpoints.py) on real gunicorn replicas of one PostgreSQL database:

3. an advisory claim must not be granted while a lease holder of a related scope is inside its fenced
   store transaction, even once that lease has expired (the advisory side never deletes the row, so the
   lease side's "a stealer must delete the row first" does not order it);
4. what an operation decides from the store (which catalog, which connector, one transaction or the
   journal) is decided after its claim is held: two renames that swap two catalogs' names while a
   create or drop waits for its claim must not make it act on one catalog with the other's connector;
5. claims come before the TreeLock for every backend: an advisory catalog operation never waits for a
   lease while holding the TreeLock that the lease's holder needs (a cycle only the claim timeout broke).

Items 3 and 5 exist only where advisory locks do (PostgreSQL). Item 4 on MariaDB and SQLite: their only
backend there is the lease table, whose claim is taken before the operation's first store transaction,
so there is no advisory prelude to reorder. The tests below run AUTO and PG_ADVISORY only: there is no
LEASE_TABLE case of item 4 here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, engine_of, in_background, ok, sqlite_properties, wait_until
from tests.support.databases import fresh_database

M = "m"


@pytest.fixture
def pg_url(tmp_path) -> Iterator[str]:
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        yield url


def cluster_on(made: list[Cluster], url: str, tmp_path: Any, backend: str, **env: str) -> Cluster:
    cluster = Cluster(url, tmp_path, {"GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": backend, **env})
    made.append(cluster)
    return cluster


def lease_expired(cluster: Cluster, path: str) -> bool:
    with cluster.engine.connect() as conn:
        return bool(conn.execute(text(
            "SELECT lease_expires_at <= now() FROM gm_scope_lease WHERE scope_path = :p"), {"p": path}).scalar())


def catalog_id(cluster: Cluster, name: str) -> int:
    with cluster.engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT c.id FROM gm_catalog c JOIN gm_metalake m ON m.id = c.metalake_id WHERE m.name = :m AND c.name = :c"
        ), {"m": M, "c": name}).scalar_one())


def stored_tables(cluster: Cluster, catalog: int) -> list[str]:
    with cluster.engine.connect() as conn:
        return sorted(conn.execute(text(
            "SELECT t.name FROM gm_table t JOIN gm_schema s ON s.id = t.schema_id WHERE s.catalog_id = :c"
        ), {"c": catalog}).scalars())


# --------------------------------------------------------------------- item 3


def test_an_advisory_claim_waits_for_the_fenced_transaction_of_an_expired_lease(pg_url, tmp_path, clusters):
    """L (lease on /m/c/s, creating a table in sqlite catalog c) is paused inside its fenced store
    transaction, right after its guard locked its claim row, until its lease has expired (its renewal
    waits on that row lock). A (advisory on /m: create catalog c2) must not be granted while L's
    transaction is open: it waits (bounded), and runs once L's transaction has ended."""
    cluster = cluster_on(clusters, pg_url, tmp_path, "AUTO")
    api_l, api_a = (Api(replica) for replica in cluster.replicas("l", "a"))
    ok(api_a.metalake())
    ok(api_a.catalog("sqlite", sqlite_properties()))
    ok(api_a.schema())
    cluster.fp.arm("guard.after_lock", tag="l")
    creator, created = in_background(lambda: api_l.table("t"))
    paused = cluster.fp.wait_reached("guard.after_lock", tag="l")
    wait_until("L's lease on /m/c/s expired while L is inside its fenced transaction",
               lambda: lease_expired(cluster, "/m/c/s"), timeout=15)
    assert cluster.fp.is_paused(paused)

    advisory, answered = in_background(lambda: api_a.catalog("memory", {}, c="c2"))
    advisory.join(3)
    granted_while_open = not advisory.is_alive()
    cluster.fp.resume(paused)
    creator.join(60)
    advisory.join(60)
    assert not granted_while_open, (
        f"the advisory claim on /m was granted (answer {answered}) while the lease holder of /m/c/s was still "
        "inside its fenced store transaction")
    assert answered and answered[0][0] == 200, answered
    assert created and created[0][0] < 500, created


# --------------------------------------------------------------------- item 4


def swap(api: Api, a: str, b: str) -> None:
    """Swap the names of catalogs a and b (three renames, each its own structural operation)."""
    for old, new in ((a, "swap_tmp"), (b, a), ("swap_tmp", b)):
        ok(api.r.request("PUT", f"/api/metalakes/{M}/catalogs/{old}", {"updates": [{"@type": "rename", "newName": new}]}))


def two_catalogs(api: Api) -> None:
    """xb (memory) and xa (sqlite), each with schema s0."""
    ok(api.metalake())
    ok(api.catalog("memory", {}, c="xb"))
    ok(api.catalog("sqlite", sqlite_properties(), c="xa"))
    ok(api.schema("s0", c="xb"))
    ok(api.schema("s0", c="xa"))


@pytest.mark.parametrize("backend", ["AUTO", "PG_ADVISORY"])
def test_a_create_waiting_for_its_claim_acts_on_the_catalog_that_holds_the_name_once_it_has_it(
        pg_url, tmp_path, clusters, monkeypatch, backend):
    cluster = cluster_on(clusters, pg_url, tmp_path, backend)
    api_a, api_b = (Api(replica) for replica in cluster.replicas("a", "b"))
    two_catalogs(api_b)
    memory_id, sqlite_id = catalog_id(cluster, "xb"), catalog_id(cluster, "xa")
    ok(api_a.table("warm", s="s0", c="xb"))  # replica a has used xb: its connector cache says "memory"
    cluster.fp.arm("advisory.before_lock", tag="a")
    creator, created = in_background(lambda: api_a.table("t0", s="s0", c="xb"))
    paused = cluster.fp.wait_reached("advisory.before_lock", tag="a")
    swap(api_b, "xb", "xa")  # now xb is the sqlite catalog, xa the memory one
    cluster.fp.resume(paused)
    creator.join(60)
    assert created, "the create did not answer"
    status, body = created[0]
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch, c="xb")
    in_store, in_engine = stored_tables(cluster, sqlite_id), sorted(engine.list_tables("s0"))
    assert in_store == in_engine, (
        f"answer {status}: the store lists {in_store} in the sqlite catalog (now xb), its engine has {in_engine}")
    assert "warm" in stored_tables(cluster, memory_id)
    if status == 200:
        assert in_store == ["t0"] and "t0" not in stored_tables(cluster, memory_id)
    else:
        assert status in (409, 503), body
    assert cluster.open_intents() == []


@pytest.mark.parametrize("backend", ["AUTO", "PG_ADVISORY"])
def test_a_drop_waiting_for_its_claim_acts_on_the_catalog_that_holds_the_name_once_it_has_it(
        pg_url, tmp_path, clusters, monkeypatch, backend):
    cluster = cluster_on(clusters, pg_url, tmp_path, backend)
    api_a, api_b = (Api(replica) for replica in cluster.replicas("a", "b"))
    two_catalogs(api_b)
    memory_id, sqlite_id = catalog_id(cluster, "xb"), catalog_id(cluster, "xa")
    ok(api_b.table("t0", s="s0", c="xb"))
    ok(api_b.table("t0", s="s0", c="xa"))
    ok(api_a.table("warm", s="s0", c="xb"))
    cluster.fp.arm("advisory.before_lock", tag="a")
    dropper, dropped = in_background(lambda: api_a.drop_table("t0", s="s0", c="xb"))
    paused = cluster.fp.wait_reached("advisory.before_lock", tag="a")
    swap(api_b, "xb", "xa")
    cluster.fp.resume(paused)
    dropper.join(60)
    assert dropped, "the drop did not answer"
    status, body = dropped[0]
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch, c="xb")
    in_store, in_engine = stored_tables(cluster, sqlite_id), sorted(engine.list_tables("s0"))
    assert in_store == in_engine, (
        f"answer {status} {body}: the store lists {in_store} in the sqlite catalog (now xb), its engine has {in_engine}")
    assert stored_tables(cluster, memory_id) == ["t0", "warm"], "the drop reached the memory catalog, now xa"
    if status == 200:
        assert in_store == []
    else:
        assert status in (409, 503), body
    assert cluster.open_intents() == []


# --------------------------------------------------------------------- item 5


def test_an_advisory_catalog_operation_never_waits_for_a_lease_while_holding_the_treelock(
        pg_url, tmp_path, clusters):
    """One replica, one worker, two request threads, AUTO. L creates a table in sqlite catalog c (lease
    on /m/c/s) and is paused right after its claim was granted, before its TreeLock. B creates catalog c2
    (advisory on /m, TreeLock WRITE on /m) and is paused where it is about to take its advisory locks. L
    goes on (it needs READ on /m), then B. If B waited for L's lease holding its TreeLock, the two would
    wait for each other until B's claim timeout; claims before the TreeLock make that impossible."""
    cluster = cluster_on(clusters, pg_url, tmp_path, "AUTO", GRAVIMETA_CLAIM_TIMEOUT_MS="5000")
    api = Api(cluster.replica("a"))
    ok(api.metalake())
    ok(api.catalog("sqlite", sqlite_properties()))
    ok(api.schema())
    cluster.fp.arm("claim.after_grant", tag="a")
    leaser, leased = in_background(lambda: api.table("t"))
    lease_paused = cluster.fp.wait_reached("claim.after_grant", tag="a")
    assert lease_paused.context["scope"] == "/m/c/s"
    cluster.fp.arm("advisory.before_lock", tag="a")
    advisory, answered = in_background(lambda: api.catalog("memory", {}, c="c2"))
    advisory_paused = cluster.fp.wait_reached("advisory.before_lock", tag="a")
    cluster.fp.resume(advisory_paused)
    cluster.fp.resume(lease_paused)
    leaser.join(30)
    advisory.join(30)
    assert leased and leased[0][0] == 200, leased
    assert answered and answered[0][0] == 200, (
        f"the advisory create of c2 waited for the lease on /m/c/s while holding the TreeLock that lease's "
        f"holder needed, until its claim timeout: {answered}")
