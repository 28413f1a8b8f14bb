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

from collections.abc import Iterator

import pytest
from sqlalchemy import select

from gravimeta.entities import Column, Schema, Table
from gravimeta.store import EntityStore
from gravimeta.store.journal import operation_journal
from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, engine_of, hive_properties, ok, sqlite_properties
from tests.support.databases import fresh_database


def leave_a_drop_intent_and_replace_the_catalog(cluster, stub, through_the_store=False, provider="memory",
                                                properties=None, c="c"):
    """The old catalog's leftover drop intent, and a new catalog c (memory, or `provider` with `properties`
    and the name `c`) with schema s and table t. `through_the_store`: s and t are written straight into the
    store, so that no operation on the new catalog has looked at the journal yet (each would settle the
    leftover first)."""
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
    ok(api.catalog(provider, properties or {}, c=c))
    if through_the_store:
        store = EntityStore(cluster.engine)
        store.create_schema("m", c, Schema("s"), "u")
        store.create_table("m", c, "s", Table("t", [Column("id", "integer")]), "u")
    else:
        ok(api.schema(c=c))
        ok(api.table("t", c=c))
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


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def any_store_cluster(request, tmp_path, cluster_of) -> Iterator[Cluster]:
    """Replicas on a fresh store of each backend: SQLite too, where an INTEGER PRIMARY KEY without
    AUTOINCREMENT hands the highest id out again once its row is deleted."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield cluster_of(url)


@pytest.mark.parametrize("new_name", ["c", "c2"])
def test_a_catalog_made_after_a_drop_never_takes_over_the_dropped_catalogs_intents(any_store_cluster, stub, new_name):
    """The hive catalog c's drop of schema s is left open (the metastore failed it); c is force-dropped and
    a sqlite catalog (named c again, or c2) is made with schema s and table t in the store only (its engine
    file has no s). The new catalog must get a new id: with the dropped one's id, the repair took the
    leftover for the new catalog's (moved it there, when named c2), saw no s in its engine, took the drop
    for done and rolled it forward, dropping the new catalog's s and t from the store."""
    cluster = any_store_cluster
    api = leave_a_drop_intent_and_replace_the_catalog(cluster, stub, through_the_store=True, provider="sqlite",
                                                      properties={**sqlite_properties(), "path": "new.db"}, c=new_name)
    [left] = cluster.open_intents()
    left_catalog = catalog_id_of(cluster, left.id)  # the dropped catalog's id, as the intent names it
    new_id = EntityStore(cluster.engine).get_catalog("m", new_name).id
    result = cluster.repair_command("--settle-seconds", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "repair: 1 discarded" in result.stdout, result.stdout + result.stderr
    assert api.schemas(c=new_name) == ["s"] and api.tables(c=new_name) == ["t"]
    assert cluster.open_intents() == []
    assert new_id != left_catalog, "the new catalog got the dropped one's id"


def catalog_id_of(cluster: Cluster, intent_id: int) -> int:
    j = operation_journal.c
    with cluster.engine.connect() as conn:
        return conn.execute(select(j.catalog_id).where(j.id == intent_id)).scalar_one()
