"""The background repair (gravimeta.journal.repair-interval-ms): an intent left open by a replica that died
between its engine call and its store step is settled without any further operation on its scope, on
real replicas (PostgreSQL and MariaDB).

Replica B's worker dies right after the engine created table t (failpoint engine.after_call, `exit`): the
engine has t, the store does not, the intent is open, and B's claim lives on until its lease expires.
Replica A runs the background repair every second (B's is off) and nothing else is asked of anyone: A's
repair claims the intent's scope (waiting out B's lease, as a repair does), makes the engine see its
fence, sees t there and rolls the create forward.
"""

from __future__ import annotations

from http.client import HTTPException

import pytest
from sqlalchemy import select

from gravimeta.store.models import TableRow
from tests.engine.conftest import Api, engine_of, ok, sqlite_properties, wait_until


def stored_tables(cluster) -> list[str]:
    with cluster.engine.connect() as conn:
        return sorted(conn.scalars(select(TableRow.name)))


def test_a_background_repair_settles_an_intent_with_no_further_operation(cluster, monkeypatch):
    a = Api(cluster.replica("a", GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS="1000"))
    b = Api(cluster.replica("b", GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS="0"))
    ok(a.metalake())
    ok(a.catalog("sqlite", sqlite_properties()))
    ok(a.schema())
    cluster.fp.arm("engine.after_call", "exit", tag="b")
    with pytest.raises((OSError, HTTPException)):
        b.table("t")  # B's worker dies after the engine call, before its store step
    [left] = cluster.open_intents()
    assert left.operation == "create_table" and stored_tables(cluster) == []

    wait_until("the background repair settled the intent", lambda: not cluster.open_intents(), timeout=60)
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert stored_tables(cluster) == engine.list_tables("s") == ["t"]

