"""A `sqlite` drop schema that pauses after its engine commit cannot delete the schema re-created since.

Replica A drops schema s: its fenced transaction in the catalog file commits, and A is stopped at the
failpoint right after it, before the schema's file is deleted; A is SIGSTOPped past its lease. Replica
B then creates s again (its claim waits out A's lease, its repair finds A's drop applied in the engine
and finishes it in the store) and creates table t in it. When A goes on, it deletes the file of the
incarnation it dropped; B's s has a file of its own, so t stays, in the store and in the engine.

Before schema files were per incarnation (one name per schema name, deleted unfenced after the commit),
A deleted the file of B's s: the store had t, the engine had no file for s at all.
"""

from __future__ import annotations

from tests.engine.conftest import engine_of, in_background, ok, setup_catalog, sqlite_properties


def test_a_drop_schema_paused_after_its_engine_commit_leaves_the_re_created_schema_alone(cluster, monkeypatch):
    properties = sqlite_properties()
    a, b = setup_catalog(cluster, "sqlite", properties)
    ok(b.table("old"))
    cluster.fp.arm("sqlite.schema_unregistered", tag="a")
    thread, late = in_background(lambda: a.drop_schema())
    reached = cluster.fp.wait_reached("sqlite.schema_unregistered", tag="a")
    engine = engine_of(cluster, "sqlite", properties, monkeypatch)
    assert "s" not in engine.list_schemas()  # A's engine commit is in
    cluster.pause("a")  # returns once every thread of A is stopped
    cluster.fp.resume(reached)  # it goes on (deletes the file it dropped) only once continued
    try:
        ok(b.schema())  # waits out A's lease, settles A's drop, creates s again
        ok(b.table("t"))
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late, "A never answered"
    assert b.schemas() == engine.list_schemas() == ["s"]
    assert b.tables() == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []
