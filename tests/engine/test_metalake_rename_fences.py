"""A metalake rename keeps the fences of its catalogs' engines ordered (PostgreSQL, backend AUTO).

Fences are counted per anchor row, one per metalake *name* ('/m'); a catalog's engine keys are its
identity, so after `m` is renamed `n` the catalog's next claims count on '/n'. That is sound only because
the rename claims the root with a fence above every anchor (lease_grant.py), which every later grant
exceeds. Under AUTO the root claim was an advisory one, which takes no fence: the claims under '/n'
then started below the tokens the catalog's engine had already seen. Every engine call of the catalog
was refused as stale (409 "not saved; retry") until the new counter caught up, and every repair's
barrier too, so an intent left open before the rename stayed open, with nothing noted on it, through
any number of `gravimeta repair` runs (the soak's "intent still open after repair ... pending").

Here: a sqlite catalog in `m` whose engine has seen a few fences, one create left open by a replica
that died after the engine call, then `m` renamed to `n` (a name whose anchor starts at zero). The
repair must roll the create forward, and a new create must succeed.
"""

from __future__ import annotations

from http.client import HTTPException

import pytest

from tests.conftest import require_backend
from tests.engine.conftest import Api, engine_of, ok, path_of, sqlite_properties
from tests.support.databases import fresh_database

AUTO = {"GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "AUTO", "GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS": "0"}


@pytest.fixture
def pg_cluster(tmp_path, cluster_of):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        yield cluster_of(url, **AUTO)


def test_after_a_metalake_rename_its_catalogs_engine_calls_and_repairs_are_not_stale(pg_cluster, monkeypatch):
    cluster = pg_cluster
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(a.metalake())
    ok(a.catalog("sqlite", sqlite_properties()))
    ok(a.schema())
    for t in ("t0", "t1", "t2"):  # the engine sees the fences of these claims on '/m'
        ok(a.table(t))
    cluster.fp.arm("engine.after_call", "exit", tag="b")
    with pytest.raises((OSError, HTTPException)):
        b.table("t3")
    [left] = cluster.open_intents()

    ok(a.r.request("PUT", path_of("m"), {"updates": [{"@type": "rename", "newName": "n"}]}))
    [moved] = cluster.open_intents()
    assert (moved.id, moved.scope_path) == (left.id, "/n/c/s")

    done = cluster.repair_command("--settle-seconds", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 rolled forward" in done.stdout, done.stdout  # not "1 deferred": the barrier was not stale
    assert cluster.open_intents() == []

    ok(a.table("t4", m="n"))  # not 409 FenceLost
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert engine.list_tables("s") == a.tables(m="n") == ["t0", "t1", "t2", "t3", "t4"]
