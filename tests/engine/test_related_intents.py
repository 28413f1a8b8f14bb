"""The journal's look for intents related to a scope is exact and case-sensitive.

The SQL filter uses LIKE for descendants, which SQLite evaluates ignoring ASCII case, so on SQLite a
repair under /m/c found the intents of /m/C/s, a scope another worker may hold at that very moment (the
claim layer itself treats /m/c and /m/C/s as unrelated). The rows are now checked again with the exact
relation, as the claim layer does for claims.
"""

from __future__ import annotations

from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.journal import OperationJournal
from tests.engine.conftest import Api, engine_of, in_background, ok, sqlite_properties

PATHS = ["/", "/m", "/m/c", "/m/c/s", "/m/c/s/t", "/m/C", "/m/C/s", "/m/c_", "/m/cX/s", "/m/c%/s", "/M/c/s", "/m2"]


def test_the_intents_related_to_a_scope_are_its_own_its_ancestors_and_its_descendants_exactly(db_url):
    engine = create_store_engine(db_url)
    try:
        journal = OperationJournal(EntityStore(engine))
        ids = {}
        for path in PATHS:
            ids[path] = journal.store.write(lambda s, p=path: journal.insert_in(s, p, "drop_table", 1, "{}")).id
        related = {i.scope_path for i in journal.pending(related_to="/m/c")}
        assert related == {"/", "/m", "/m/c", "/m/c/s", "/m/c/s/t"}
        assert {i.scope_path for i in journal.pending(related_to="/m/C/s")} == {"/", "/m", "/m/C", "/m/C/s"}
    finally:
        engine.dispose()


def test_a_repair_under_one_catalog_leaves_the_intent_of_a_catalog_named_alike_alone(sqlite_db_cluster, monkeypatch):
    """Replica A holds /m/C/s with its intent open (the engine made t, A is stopped before its store step);
    replica B works under /m/c meanwhile. A's intent must still be open, and A then finishes it."""
    cluster = sqlite_db_cluster
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog("sqlite", {**sqlite_properties(), "path": "upper.db"}, c="C"))
    ok(b.catalog("sqlite", sqlite_properties(), c="c"))
    ok(b.schema(c="C"))
    cluster.fp.arm("engine.after_call", tag="a")
    thread, answer = in_background(lambda: a.table("t", c="C"))
    reached = cluster.fp.wait_reached("engine.after_call", tag="a")
    ok(b.schema("s2", c="c"))  # B's look for intents under /m/c
    held = cluster.open_intents()
    assert [(i.scope_path, i.state, i.detail) for i in held] == [("/m/C/s", "pending", None)], "B touched A's intent"
    cluster.fp.resume(reached)
    thread.join(60)
    assert answer and answer[0][0] == 200, answer
    engine = engine_of(cluster, "sqlite", {**sqlite_properties(), "path": "upper.db"}, monkeypatch, c="C")
    assert b.tables(c="C") == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []
