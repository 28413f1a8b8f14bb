"""The fence contract (connectors/base.py), kept by every engine that checks fences (the sqlite catalog file,
the hive stub, and the jdbc-postgresql and jdbc-mysql catalogs, whose databases check them): a mutating
call whose fence is lower than one the engine has seen on its scope is refused with StaleFence and
changes nothing, checked storage-side in the same transaction as the change (MySQL: under the lock held
to the end of the change); a barrier records a fence alone; a call whose claim ran out is not sent; an
engine that cannot be found is "unreachable", never "empty".

Scopes are unique per test: the hive stub (one per module) keeps its fences across tests.
"""

from __future__ import annotations

import time

import pytest

from connectors.base import CatalogContext, Fence
from connectors.hive import HiveConnector
from connectors.sqlite import SQLiteCatalogConnector
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table


def table(name: str = "t") -> Table:
    return Table(name, [Column("id", "long", nullable=False)])


@pytest.fixture
def scope(name):
    """A claim scope path of this test alone: /lake/<catalog>."""
    return f"/lake/{name('c')}"


def test_a_call_with_a_lower_fence_than_the_engine_has_seen_changes_nothing(connector, name, scope):
    schema = name("s")
    connector.create_schema(Schema(schema), fence=Fence(scope, 7))
    with pytest.raises(errors.StaleFence, match="fence 6"):
        connector.create_table(schema, table(), fence=Fence(scope, 6))
    assert connector.list_tables(schema) == []
    connector.create_table(schema, table(), fence=Fence(scope, 7))  # the same holder goes on
    with pytest.raises(errors.StaleFence):
        connector.drop_table(schema, "t", fence=Fence(scope, 3))
    assert connector.list_tables(schema) == ["t"]


def test_every_mutating_call_is_fenced(connector, name, scope):
    schema = name("s")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, table())
    connector.fence_barrier(Fence(scope, 10))
    old = Fence(scope, 9)
    calls = {
        "create_schema": lambda: connector.create_schema(Schema(name("s2")), fence=old),
        "drop_schema": lambda: connector.drop_schema(schema, cascade=True, fence=old),
        "create_table": lambda: connector.create_table(schema, table("t2"), fence=old),
        "alter_table": lambda: connector.alter_table(schema, table(), Table("t", [Column("id", "long", nullable=False),
                                                                                 Column("v", "string")]), fence=old),
        "rename_table": lambda: connector.rename_table(schema, "t", schema, "t3", fence=old),
        "drop_table": lambda: connector.drop_table(schema, "t", fence=old),
        "purge_table": lambda: connector.purge_table(schema, "t", fence=old),
        "fence_barrier": lambda: connector.fence_barrier(old),
    }
    if not connector.supports_purge:  # the JDBC catalogs refuse every purge (405) before any fence
        del calls["purge_table"]
    refused = []
    for call_name, call in calls.items():
        with pytest.raises(errors.StaleFence):
            call()
        refused.append(call_name)
    assert refused == list(calls)
    assert schema in connector.list_schemas() and connector.list_tables(schema) == ["t"]


def test_a_stale_drop_of_something_already_gone_is_refused_not_answered_absent(connector, name, scope):
    """The journal reads a refused call as "did not land" and a False as "looked, and it was not there":
    a zombie drop arriving after the next holder's work must be the former, even when nothing is left."""
    schema = name("s")
    connector.create_schema(Schema(schema), fence=Fence(scope, 5))
    connector.drop_schema(schema, cascade=True, fence=Fence(scope, 5))
    old = Fence(scope, 4)
    with pytest.raises(errors.StaleFence):
        connector.drop_schema(schema, cascade=True, fence=old)
    with pytest.raises(errors.StaleFence):
        connector.drop_table(schema, "t", fence=old)
    assert connector.drop_schema(schema, cascade=True, fence=Fence(scope, 5)) is False


def test_a_barrier_records_the_fence_without_changing_anything(connector, name, scope):
    schema = name("s")
    connector.create_schema(Schema(schema), fence=Fence(scope, 1))
    connector.fence_barrier(Fence(scope, 5))
    assert connector.list_schemas().count(schema) == 1 and connector.list_tables(schema) == []
    with pytest.raises(errors.StaleFence):
        connector.create_table(schema, table(), fence=Fence(scope, 4))
    with pytest.raises(errors.StaleFence):
        connector.fence_barrier(Fence(scope, 4))
    connector.create_table(schema, table(), fence=Fence(scope, 5))
    assert connector.list_tables(schema) == ["t"]


def test_a_call_without_a_token_is_neither_checked_nor_recorded(connector, name, scope):
    schema = name("s")
    connector.fence_barrier(Fence(scope, 5))
    connector.create_schema(Schema(schema), fence=Fence(scope))  # no claim: the lock is off
    connector.create_table(schema, table(), fence=Fence(scope, 5))
    assert connector.list_tables(schema) == ["t"]


def test_per_path_fences_are_compared_on_the_same_scope_only(connector, name, scope):
    """While claims number fences per path, a token says nothing about another path's: related=False."""
    schema = name("s")
    connector.fence_barrier(Fence(f"{scope}/{schema}", 50))
    connector.create_schema(Schema(schema), fence=Fence(scope, 2))
    connector.create_table(schema, table(), fence=Fence(f"{scope}/{schema}", 50))
    assert connector.list_tables(schema) == ["t"]


def test_ordered_fences_are_compared_with_related_scopes(connector, name, scope):
    """With fences ordered across related paths (related=True) a higher fence seen on an ancestor or a
    descendant of the call's scope refuses it too; an unrelated scope, or one equal up to case, does not."""
    schema = name("s")
    connector.create_schema(Schema(schema))
    connector.fence_barrier(Fence(scope, 20, related=True))  # e.g. a repair on the catalog scope
    with pytest.raises(errors.StaleFence):
        connector.create_table(schema, table(), fence=Fence(f"{scope}/{schema}", 19, related=True))
    connector.fence_barrier(Fence(f"{scope}/{schema}/deeper", 30, related=True))
    with pytest.raises(errors.StaleFence):
        connector.create_table(schema, table(), fence=Fence(f"{scope}/{schema}", 25, related=True))
    connector.create_table(schema, table(), fence=Fence(f"{scope}_x/{schema}", 1, related=True))  # unrelated
    connector.drop_table(schema, "t", fence=Fence(scope.upper(), 1, related=True))  # names are case-sensitive
    connector.create_table(schema, table(), fence=Fence(f"{scope}/{schema}", 30, related=True))
    assert connector.list_tables(schema) == ["t"]


def test_a_call_whose_claim_ran_out_is_not_sent(connector, name, scope):
    schema = name("s")
    connector.create_schema(Schema(schema))
    with pytest.raises(errors.StaleFence, match="ran out"):
        connector.create_table(schema, table(), fence=Fence(scope, 1, deadline=time.monotonic() - 0.001))
    assert connector.list_tables(schema) == []
    connector.fence_barrier(Fence(scope, 1))  # nothing of the refused call was recorded either


def test_the_stub_keeps_its_fences_across_a_restart(hive_connector, stub, name, scope):
    schema = name("s")
    hive_connector.create_schema(Schema(schema), fence=Fence(scope, 8))
    stub.restart()
    with pytest.raises(errors.StaleFence):
        hive_connector.create_table(schema, table(), fence=Fence(scope, 7))
    assert hive_connector.list_tables(schema) == []


def test_a_stale_call_hung_inside_the_stub_is_refused_when_it_gets_to_work(hive_connector, stub, name, scope):
    """The check runs where the change is made, after the stub's own delays: a call that was fine when it
    was sent is refused if a barrier came in meanwhile."""
    import threading

    schema = name("s")
    hive_connector.create_schema(Schema(schema), fence=Fence(scope, 1))
    stub.fault("hang", seconds=20, ops=["drop_database"])
    slow = HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": stub.uri, "client.timeout-ms": "20000"}))
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(_try(lambda: slow.drop_schema(
        schema, cascade=True, fence=Fence(scope, 1)))))
    thread.start()
    stub.wait_hung()
    hive_connector.fence_barrier(Fence(scope, 2))
    stub.release()
    thread.join(20)
    assert isinstance(outcome[0], errors.StaleFence), outcome
    assert schema in hive_connector.list_schemas()


def _try(call):
    try:
        return call()
    except errors.GravitinoError as exc:
        return exc


def test_a_missing_catalog_file_is_unreachable_not_empty(sqlite_root, tmp_path, monkeypatch):
    """A wrong catalog root must never look like an empty catalog, and must not be filled with new files."""
    connector = SQLiteCatalogConnector(CatalogContext("lake", "sq", {"path": "catalogs/sq.db"}))
    connector.prepare_engine()
    connector.create_schema(Schema("s"))
    wrong_root = tmp_path / "elsewhere"
    wrong_root.mkdir()
    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(wrong_root))
    calls = [connector.list_schemas, lambda: connector.list_tables("s"), lambda: connector.fence_barrier(Fence("/x", 1)),
             lambda: connector.drop_table("s", "t"), lambda: connector.create_table("s", table())]
    for call in calls:
        with pytest.raises(errors.EngineUnreachable, match="does not exist"):
            call()
    assert list(wrong_root.iterdir()) == []


def test_a_missing_schema_file_is_unreachable_not_an_empty_schema(sqlite_connector, sqlite_root, name):
    schema = name("s")
    sqlite_connector.create_schema(Schema(schema))
    sqlite_connector.create_table(schema, table())
    [schema_file] = (sqlite_root / "catalogs" / "sq.db.schemas").glob(f"{schema.split('_')[0]}*.sqlite")
    schema_file.unlink()
    with pytest.raises(errors.ConnectionFailed):
        sqlite_connector.list_tables(schema)
    assert not schema_file.exists()


def test_a_metastore_that_refuses_every_connection_is_unreachable(name):
    from tests.support.servers import free_port

    connector = HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": f"http://127.0.0.1:{free_port()}"}))
    with pytest.raises(errors.EngineUnreachable):
        connector.create_schema(Schema(name("s")), fence=Fence("/lake/hv", 1))
