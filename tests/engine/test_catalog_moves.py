"""A catalog moved between engines keeps every engine it left told (real replicas, hive stubs).

A move (a change of metastore.uris) or a drop retires the catalog's key in the engine it leaves; an
engine that misses that barrier gets a recorded retirement, delivered before another catalog uses it
(gravimeta/dispatch/retirement.py). Each case leaves one drop of replica A held inside a stub past its
client timeout, moves or drops the catalog with the engine missing its barrier, lets a catalog on that
engine import the table, and releases the held drop: the store and the engine must agree afterwards.

- two engines left in turn, each missing its barrier: both retirements stay (one row per catalog key
  and engine; GRAVIMETA_HA_DISABLE=retirement_per_engine keeps one per catalog key, as an upsert did);
- a delivery in flight while the catalog leaves another engine: the delivered row alone is deleted (by
  its id and token; retirement_compare_delete deletes by the catalog's key, as by name before);
- two property changes on two replicas: the identity record names the engine of the properties stored
  (recorded in the change's own transaction, under the claim; identity_in_claim records it after the
  claim, as before);
- a record naming another engine is corrected at a first use (identity_reverify: asked only without one);
- on a SQLite store, a first use whose engine is frozen holds no other replica's write
  (engine_calls_before_write: the connector is made inside the journal's write transaction, as before).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from gravimeta.dispatch.engine_keys import catalog_key
from gravimeta.dispatch.retirement import identity_name
from gravimeta.store import EntityStore
from gravimeta.store.database import write_session
from gravimeta.store.retirements import retirement
from gravimeta.store.server_settings import publish, read, server_setting
from tests.connectors.stub_process import StubProcess
from tests.engine.conftest import Api, Cluster, hive_properties, in_background, ok, path_of, wait_until
from tests.engine.test_engine_identity_races import (
    DIVERGE,
    H,
    S,
    T,
    assert_agree,
    engine_tables,
    hive_catalog_with_table,
    hold_drop,
    release,
    store_tables,
)

S2 = "s2"


@pytest.fixture
def other(tmp_path) -> Iterator[StubProcess]:
    """A second metastore, empty."""
    process = StubProcess(tmp_path / "hive-stub-2").start()
    try:
        yield process
    finally:
        process.stop()


def identity_of(stub: Any) -> str:
    return str(stub.raw("GET", "/identity")[1]["identity"])


def point(api: Api, c: str, uri: str) -> dict[str, Any]:
    """Point catalog m.c at the metastore at `uri`."""
    return ok(api.r.request("PUT", path_of("m", c), {"updates": [
        {"@type": "setProperty", "property": "metastore.uris", "value": uri}]}))


def miss_barrier(stub: Any) -> None:
    """The metastore refuses the next fence barrier (a retirement it misses)."""
    stub.fault("fail", count=1, mode="500", ops=["fence"])


def retirements(cluster: Cluster) -> list[tuple[str, list[str]]]:
    """(catalog key, locations) of each pending retirement."""
    import json

    r = retirement.c
    with cluster.engine.connect() as conn:
        return [(key, json.loads(locations)) for key, locations in
                conn.execute(select(r.catalog_key, r.locations).order_by(r.id))]


def key_of(cluster: Cluster, c: str) -> str:
    catalog = EntityStore(cluster.engine).get_catalog("m", c)
    assert catalog.id is not None
    return catalog_key(catalog.id, catalog.audit.create_time)


def test_a_catalog_that_leaves_two_engines_unheard_keeps_the_retirement_of_each(cluster, stub, other):
    """h moves from metastore 1 to metastore 2, then is dropped; each metastore misses its barrier. A's drop
    held in metastore 1 is refused once catalog h2 there imported the table: its first use delivered the
    move's retirement. When one record per catalog key was kept (an upsert), the drop's record replaced the
    move's: metastore 1 was never told, the held drop landed, and h2's store kept a table the engine lost."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    properties = hive_catalog_with_table(b, stub)
    h = key_of(cluster, H)
    try:
        status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
        assert status == 502, (status, body)
        miss_barrier(stub)
        point(b, H, other.uri)
        miss_barrier(other)
        assert ok(b.drop_catalog(c=H))["dropped"] is True
        recorded = retirements(cluster)
        ok(b.catalog("hive", properties, c="h2"))  # metastore 1, where s.t still is
        assert ok(b.r.request("GET", path_of("m", "h2", S, T)))["table"]["name"] == T
    finally:
        release(stub)
    ok(b.table("v", c="h2"))
    assert_agree(cluster, b, stub, "h2", [T, "v"])
    assert [key for key, _ in recorded] == [h, h], recorded  # one for each metastore, known by its identity
    assert {f"id:{identity_of(stub)}", f"id:{identity_of(other)}"} <= {x for _, where in recorded for x in where}
    assert [key for key, _ in retirements(cluster)] == [h], "metastore 2's retirement is still pending"


def test_a_delivery_deletes_the_retirement_it_delivered_and_no_newer_one(cluster, stub, other):
    """h moves off metastore 1, which misses the barrier; replica C's first use of h2 there delivers that
    retirement (holding a claim in metalake m2) and is paused before it deletes its record. Meanwhile A's drop of h's table is held in
    metastore 2, and h is dropped with metastore 2 missing that barrier. C then deletes the record it
    delivered, and only that one: h3's first use of metastore 2 delivers the drop's retirement, and the
    held drop is refused. Deleted by the catalog's key (by name, before), the newer record went with it,
    undelivered, and the held drop landed after h3 imported the table."""
    a, b, c = (Api(replica) for replica in cluster.replicas("a", "b", "c"))
    properties = hive_catalog_with_table(b, stub)
    h = key_of(cluster, H)
    miss_barrier(stub)
    point(b, H, other.uri)
    ok(b.schema(S2, c=H))
    ok(b.table(T, s=S2, c=H))  # in metastore 2
    ok(b.metalake("m2"))
    ok(b.catalog("hive", properties, c="h2", m="m2"))  # metastore 1, in another metalake: C's claim is not h's
    cluster.fp.arm("retirement.before_forget", tag="c")
    thread, answer = in_background(lambda: c.schema("s3", c="h2", m="m2"))  # C's first use delivers, then pauses
    reached = cluster.fp.wait_reached("retirement.before_forget", tag="c")
    try:
        status, body = hold_drop(other, lambda: a.drop_table(T, s=S2, c=H))
        assert status == 502, (status, body)
        miss_barrier(other)
        assert ok(b.drop_catalog(c=H))["dropped"] is True
        cluster.fp.resume(reached)
        thread.join(60)
        ok(answer[0])
        left = [key for key, _ in retirements(cluster)]
        ok(b.catalog("hive", {**properties, "metastore.uris": other.uri}, c="h3"))  # metastore 2: s2.t is there
        assert ok(b.r.request("GET", path_of("m", "h3", S2, T)))["table"]["name"] == T
    finally:
        cluster.fp.clear()
        release(other)
    ok(b.table("v", s=S2, c="h3"))
    store, engine = store_tables(cluster, "h3", S2), engine_tables(other, S2)
    assert store == engine, f"{DIVERGE}: store {store}, engine {engine}"
    assert {T, "v"} <= set(store)
    assert left == [h], "the drop's retirement was deleted undelivered"
    assert retirements(cluster) == []


def lease_held(cluster: Cluster, path: str, replica: str) -> bool:
    """Whether `replica` (its node id) holds a lease on `path`."""
    from gravimeta.concurrency.tables import scope_lease

    lease = scope_lease.c
    with cluster.engine.connect() as conn:
        return conn.execute(select(lease.scope_path).where(
            lease.scope_path == path, lease.holder_id.like(f"{replica}:%"))).first() is not None


def test_two_property_changes_leave_the_identity_of_the_engine_whose_properties_are_stored(
        cluster, stub, other, tmp_path):
    """Replica A points h at metastore 2 and is paused just before it asks metastore 2 who it is; replica B
    then points h at metastore 3. A asks inside its claim, so B's change waits for it and comes second;
    either way the identity recorded is the one of the metastore the stored properties name, and a later
    drop that metastore misses records its identity. Recorded after the claim (before), A's record came
    last: it named metastore 2 while h was on metastore 3, and the drop's retirement carried it."""
    third = StubProcess(tmp_path / "hive-stub-3").start()
    try:
        a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
        ok(b.metalake())
        ok(b.catalog("hive", hive_properties(stub), c=H))
        cluster.fp.arm("catalog.before_identity", tag="a")
        changed, by_a = in_background(lambda: point(a, H, other.uri))
        reached = cluster.fp.wait_reached("catalog.before_identity", tag="a")
        second, by_b = in_background(lambda: point(b, H, third.uri))
        # B's change either waits behind A's claim on the metalake, or (A holding none) is done
        wait_until("B's change waits behind A's claim or is done", lambda: lease_held(cluster, "/m", "a") or by_b)
        cluster.fp.resume(reached)
        changed.join(60)
        second.join(60)
        assert by_a and by_b, "a change did not answer"
        catalog = EntityStore(cluster.engine).get_catalog("m", H)
        stored = {stub.uri: stub, other.uri: other, third.uri: third}[catalog.properties["metastore.uris"]]
        assert read(cluster.engine, identity_name(catalog)) == identity_of(stored), \
            "the identity record names another engine than the one the catalog's properties name"
        miss_barrier(stored)
        assert ok(b.drop_catalog(c=H))["dropped"] is True
        assert any(f"id:{identity_of(stored)}" in where for _, where in retirements(cluster)), retirements(cluster)
    finally:
        cluster.fp.clear()
        third.stop()


def test_a_first_use_corrects_an_identity_record_that_names_another_engine(cluster, stub):
    """The store says h's engine is another one (recorded for an address that reached another metastore
    then, say); replica A's first use asks the metastore, which answers otherwise, and the record is
    corrected before A's change is answered. Before, a first use asked only when no record existed."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog("hive", hive_properties(stub), c=H))
    name = identity_name(EntityStore(cluster.engine).get_catalog("m", H))
    publish(cluster.engine, name, "another-engine")
    ok(a.schema(c=H))  # A's first use of h
    assert read(cluster.engine, name) == identity_of(stub)


def test_a_frozen_engine_holds_up_no_write_of_another_metalake_on_a_sqlite_store(sqlite_db_cluster, stub):
    """Replicas share one SQLite store (one writer at a time). Replica A's first use of h (its identity
    record missing: a catalog made before identities) asks the metastore, which is frozen (SIGSTOP). Replica
    B's write in another metalake is answered within its own claim timeout (5 s). When A's connector was
    made inside the journal's write transaction (BEGIN IMMEDIATE), B waited for A's question to time out
    (the metastore client's 10 s)."""
    claim_timeout_s = 5.0
    a, b = (Api(replica) for replica in
            sqlite_db_cluster.replicas("a", "b", GRAVIMETA_CLAIM_TIMEOUT_MS=str(int(claim_timeout_s * 1000))))
    ok(b.metalake())
    ok(b.metalake("m2"))
    ok(b.catalog("memory", {}, c="mem", m="m2"))
    ok(b.catalog("hive", {**hive_properties(stub), "client.timeout-ms": "10000"}, c=H))
    name = identity_name(EntityStore(sqlite_db_cluster.engine).get_catalog("m", H))
    with write_session(sqlite_db_cluster.engine) as s:
        s.execute(server_setting.delete().where(server_setting.c.name == name))
    assert stub.process is not None
    sqlite_db_cluster.fp.arm("retirement.before_ask", tag="a")
    first_use, _ = in_background(lambda: a.schema(c=H))
    reached = sqlite_db_cluster.fp.wait_reached("retirement.before_ask", tag="a")
    os.killpg(stub.process.pid, signal.SIGSTOP)
    try:
        sqlite_db_cluster.fp.resume(reached)  # A asks the frozen metastore now
        began = time.monotonic()
        status, body = b.schema(c="mem", m="m2")
        took = time.monotonic() - began
        assert status == 200, (status, body)
        assert took < claim_timeout_s, f"an unrelated write waited {took:.2f} s for a frozen engine"
    finally:
        os.killpg(stub.process.pid, signal.SIGCONT)
        sqlite_db_cluster.fp.clear()
        first_use.join(60)


def test_a_retirement_recorded_after_a_catalog_on_the_same_engine_was_first_used_reaches_it(cluster, stub):
    """Catalogs h and g share one metastore, and replica B has used g already (its connector is made).
    A's drop of h's table s.t is held in the metastore; h is dropped, the metastore missing the barrier;
    B's load of g.s.t imports the table (the metastore's s is g's too). B delivers the retirement first,
    though its connector of g was made before it was recorded, so the held drop is refused. Before, only a
    new connector delivered: B imported, the held drop landed, and g's store kept a table the engine lost."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    hive_catalog_with_table(b, stub)
    ok(b.catalog("hive", hive_properties(stub), c="g"))
    ok(b.schema("gs", c="g"))  # B's first use of g
    try:
        status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
        assert status == 502, (status, body)
        miss_barrier(stub)
        assert ok(b.drop_catalog(c=H))["dropped"] is True
        assert ok(b.r.request("GET", path_of("m", "g", S, T)))["table"]["name"] == T
    finally:
        release(stub)
    ok(b.table("v", c="g"))
    assert_agree(cluster, b, stub, "g", [T, "v"])
