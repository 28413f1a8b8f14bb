"""An intent whose schema another replica dropped meanwhile (real replicas, the hive stub).

Replica A's table rename in h.s is held inside the stub past the catalog's client timeout: A answers 502
and its intent stays open. Replica B then drops s (cascade). B's drop first repairs the intents under
s, but it cannot observe the engine (its barrier fails), and what stays open does not block the
operation. Before B's engine call A's held rename lands; then B drops s in the engine and in the store.
Optionally s is created again under the same name. Then `gravimeta repair` runs, as an operator (or the
soak's end) would.

The intent's key names s by its identity (engine_keys.py), and that identity is gone from the store: the
store's decision, the drop, won, and the engine's s (if any) is another incarnation the intent's calls
can never reach (the drop's fence is above them). So the repair discards the intent: nothing stays open
or stuck, and the store and the engine list the same schemas and tables. With GRAVIMETA_HA_DISABLE=
dropped_schema the repair judges the intent by its names alone: the engine shows neither the old nor
the new table name in s (gone, or the new, empty s), and the intent is marked stuck.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from gravimeta.store import EntityStore
from tests.engine.conftest import Api, Cluster, in_background, ok
from tests.engine.test_engine_identity_races import HOLD_S, H, S, T, hive_catalog_with_table, release

U = "u"


def store_tree(cluster: Cluster) -> dict[str, list[str]]:
    store = EntityStore(cluster.engine)
    return {s.name: sorted(store.list_tables("m", H, s.name)) for s in store.list_schemas("m", H)}


def engine_tree(stub: Any) -> dict[str, list[str]]:
    status, body = stub.raw("GET", "/databases")
    assert status == 200, body
    tree = {}
    for schema in body["databases"]:
        status, tables = stub.raw("GET", f"/databases/{schema}/tables")
        assert status == 200, tables
        tree[schema] = sorted(tables["tables"])
    return tree


@pytest.mark.parametrize("recreate", [False, True], ids=["dropped", "recreated"])
def test_an_intent_whose_schema_was_dropped_settles(cluster, stub, recreate):
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    hive_catalog_with_table(b, stub)
    stub.fault("hang", seconds=HOLD_S, ops=["rename_table"])
    try:
        status, body = a.rename_table(T, U, c=H)
        assert status == 502, (status, body)  # outcome unknown: A's intent stays open
        stub.wait_hung()
        (left,) = cluster.open_intents()
        assert left.operation == "rename_table"
        stub.fault("fail", count=1, mode="500", ops=["fence"])  # B's repair cannot observe: its barrier fails
        cluster.fp.arm("engine.before_call", tag="b")
        thread, out = in_background(lambda: b.drop_schema(c=H))
        reached = cluster.fp.wait_reached("engine.before_call", tag="b")
        assert [i.id for i in cluster.open_intents() if i.operation == "rename_table"] == [left.id]
        release(stub)  # A's rename lands before B's drop reaches the engine
        assert engine_tree(stub) == {S: [U]}
        cluster.fp.resume(reached)
        thread.join(30)
        assert ok(out[0])["dropped"] is True
    finally:
        release(stub)
    if recreate:
        ok(b.schema(c=H))
    switch = {k: v for k, v in os.environ.items() if k == "GRAVIMETA_HA_DISABLE"}  # reaches the repair too
    done = cluster.repair_command("--settle-seconds", "0", env={**cluster.base_env(), **switch})
    assert done.returncode == 0, done.stdout + done.stderr
    assert cluster.open_intents() == []
    expected = {S: []} if recreate else {}
    assert store_tree(cluster) == engine_tree(stub) == expected
