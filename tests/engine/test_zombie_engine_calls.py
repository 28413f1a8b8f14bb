"""A paused replica's engine call must not land after the next holder's work.

Replica A starts dropping table t; its engine call is on its way (hung inside the hive stub, or stopped
at a failpoint inside the sqlite connector, after its deadline check); A is SIGSTOPped past its lease.
Replica B then drops t (its repair first makes the engine see B's fence, then looks: A's drop has not
landed, so A's intent is rolled back) and creates t again. When A's call finally reaches the engine, the
engine compares fences in the same transaction as the change and refuses it: the store and the engine
both keep B's acknowledged t, no intent is left, and A's answer is true (502 "outcome unknown": a repair
settled its intent, A cannot tell which way; never 200, never "not saved" for a change that stands).

Without the engine's check (GRAVIMETA_HA_DISABLE=engine_fence: the calls carry no token) A's drop removes
B's new t: the store has t, the engine does not, and nothing is left to repair it.

The related-scope case (B works on the catalog scope /m/c, A's call is under /m/c/s) relies on fences
ordered across related scopes (a later grant on any related path gets a greater fence: alembic 0012).
"""

from __future__ import annotations

from tests.engine.conftest import (
    engine_of,
    hive_properties,
    in_background,
    ok,
    setup_catalog,
    sqlite_properties,
)


def assert_a_true_unknown_outcome(answer):
    status, body = answer
    assert status == 502 and body["type"] == "ConnectionFailedException", body
    assert "pending operation" in body["message"], body


def test_a_zombie_drop_hung_in_the_stub_cannot_remove_the_next_holders_table(cluster, stub, monkeypatch):
    properties = hive_properties(stub)
    a, b = setup_catalog(cluster, "hive", properties)
    ok(b.table("t"))
    stub.fault("hang", seconds=60, ops=["drop_table"])
    thread, late = in_background(lambda: a.drop_table("t"))
    stub.wait_hung()  # A's DELETE is inside the stub, before its work
    cluster.pause("a")
    try:
        assert ok(b.drop_table("t"))["dropped"] is True  # waits out A's lease, fences A out, rolls A's intent back
        ok(b.table("t"))
        stub.release()
        stub.wait_idle()  # A's call has now been judged by the stub
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late, "A never answered"
    assert_a_true_unknown_outcome(late[0])
    engine = engine_of(cluster, "hive", properties, monkeypatch)
    assert b.tables() == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []


def test_a_zombie_drop_stopped_inside_the_sqlite_connector_cannot_remove_the_next_holders_table(cluster, monkeypatch):
    properties = sqlite_properties()
    a, b = setup_catalog(cluster, "sqlite", properties)
    ok(b.table("t"))
    cluster.fp.arm("sqlite.before_begin", tag="a")
    thread, late = in_background(lambda: a.drop_table("t"))
    reached = cluster.fp.wait_reached("sqlite.before_begin", tag="a")
    cluster.pause("a")
    cluster.fp.resume(reached)  # it goes on (BEGIN, fence check, DROP) only once continued
    try:
        assert ok(b.drop_table("t"))["dropped"] is True
        ok(b.table("t"))
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late, "A never answered"
    assert_a_true_unknown_outcome(late[0])
    engine = engine_of(cluster, "sqlite", properties, monkeypatch)
    assert b.tables() == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []


def test_a_zombie_create_cannot_land_in_a_schema_re_created_under_the_catalog_scope(cluster, stub, monkeypatch):
    """A creates t in s (scope /m/c/s), hung in the stub, then paused; B drops s and creates it again
    (scope /m/c, a related scope): A's late create must not put t into B's new, empty s."""
    properties = hive_properties(stub)
    a, b = setup_catalog(cluster, "hive", properties)
    stub.fault("hang", seconds=60, ops=["create_table"])
    thread, late = in_background(lambda: a.table("t"))
    stub.wait_hung()
    cluster.pause("a")
    try:
        assert ok(b.drop_schema())["dropped"] is True
        ok(b.schema())
        stub.release()
        stub.wait_idle()
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late and late[0][0] == 502, late
    engine = engine_of(cluster, "hive", properties, monkeypatch)
    assert b.tables() == engine.list_tables("s") == []
    assert cluster.open_intents() == []
