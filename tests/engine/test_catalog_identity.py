"""Intents name their catalog by id, never by name.

A drop of schema s in hive catalog c fails in the metastore (HTTP 500): its intent stays open. The
catalog is force-dropped and a new catalog c (memory) is created with its own schema s and table t. The
leftover intent belongs to the old catalog, which is gone: `gravimeta repair` must discard it, and so
must the next operation on the new catalog (memory operations settle leftovers under their scope too).
Before, the repair applied the old drop to the namesake and cascaded away its s and t.

A catalog that is renamed keeps its id: its open intents move with it (in the rename's transaction), so
the next operation under the new name repairs them.
"""

from __future__ import annotations

from tests.engine.conftest import Api, engine_of, hive_properties, ok, sqlite_properties


def leave_a_drop_intent_and_replace_the_catalog(cluster, stub, through_the_store=False):
    """The old catalog's leftover drop intent, and a new memory catalog c with schema s and table t.
    `through_the_store`: s and t are written straight into the store, so that no operation on the new
    catalog has looked at the journal yet (each would settle the leftover first)."""
    api = Api(cluster.replica("a"))
    ok(api.metalake())
    ok(api.catalog("hive", hive_properties(stub)))
    ok(api.schema())
    stub.fault("fail", ops=["drop_database"])
    status, body = api.drop_schema()
    assert status == 502 and "pending operation" in body["message"], body
    [left] = cluster.open_intents()
    assert (left.operation, left.scope_path) == ("drop_schema", "/m/c")
    stub.clear_faults()
    assert ok(api.drop_catalog())["dropped"] is True
    ok(api.catalog("memory", {}))
    if through_the_store:
        from gravimeta.entities import Column, Schema, Table
        from gravimeta.store import EntityStore

        store = EntityStore(cluster.engine)
        store.create_schema("m", "c", Schema("s"), "u")
        store.create_table("m", "c", "s", Table("t", [Column("id", "integer")]), "u")
    else:
        ok(api.schema())
        ok(api.table("t"))
    return api


def test_gravimeta_repair_discards_an_intent_of_a_dropped_catalog_instead_of_applying_it_to_a_namesake(cluster, stub):
    api = leave_a_drop_intent_and_replace_the_catalog(cluster, stub, through_the_store=True)
    assert len(cluster.open_intents()) == 1
    result = cluster.repair_command("--settle-seconds", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "repair: 1 discarded" in result.stdout, result.stdout
    assert api.schemas() == ["s"] and api.tables() == ["t"]
    assert cluster.open_intents() == []


def test_an_operation_on_the_namesake_settles_the_leftover_without_applying_it(cluster, stub):
    api = leave_a_drop_intent_and_replace_the_catalog(cluster, stub, through_the_store=True)
    assert len(cluster.open_intents()) == 1
    ok(api.schema("s2"))  # a memory catalog's operation: one transaction, after settling leftovers
    assert api.schemas() == ["s", "s2"] and api.tables() == ["t"]
    assert cluster.open_intents() == []


def test_a_renamed_catalog_takes_its_open_intents_along(cluster, monkeypatch):
    """A died-before-the-engine drop of table t in sqlite catalog c; c is renamed to c2 and a new catalog c
    appears. The next operation on c2's schema rolls the intent back there; c's namesake is left alone."""
    properties = sqlite_properties()
    api = Api(cluster.replica("a"))
    ok(api.metalake())
    ok(api.catalog("sqlite", properties))
    ok(api.schema())
    ok(api.table("t"))
    cluster.fp.arm("engine.before_call", "exit", tag="a")
    try:
        api.drop_table("t")
    except OSError:
        pass  # the worker died on the spot (the connection dropped): its intent is left open
    [left] = cluster.open_intents()
    assert left.scope_path == "/m/c/s"
    api = Api(cluster.replica("b"))
    ok(api.r.request("PUT", "/api/metalakes/m/catalogs/c", {"updates": [{"@type": "rename", "newName": "c2"}]}))
    assert [i.scope_path for i in cluster.open_intents()] == ["/m/c2/s"]
    ok(api.catalog("memory", {}))
    ok(api.schema())
    ok(api.table("t2", c="c2"))  # repairs first under /m/c2/s: the engine still has t, so the drop is undone
    engine = engine_of(cluster, "sqlite", properties, monkeypatch, c="c2")
    assert api.tables(c="c2") == engine.list_tables("s") == ["t", "t2"]
    assert api.tables(c="c") == [] and cluster.open_intents() == []
