"""What an operator finishes when the repair cannot: `gravimeta repair --resolve ID applied|not-applied`
and `--discard ID`, run as its own process against real replicas (PostgreSQL and MariaDB); and operator
commands are not replicas (no row in the node registry).

- applied: a replica died after the engine created t, before its store step: the store takes t.
- not-applied, with the operation's call still on its way: replica A's create of t hangs inside the hive
  stub and A is stopped past its lease. The resolution waits out A's lease, makes the stub see its fence,
  sees t absent and ends the intent. When A's call reaches the stub it is refused (stale fence), so t
  never appears in the engine after the intent was closed as "not applied". Without the barrier the late
  create landed: the engine had t, the store did not, and no intent was left to repair it.
- refusals: the engine contradicts the operator (t is there, "not-applied" is asked), an unknown id, a
  not-applied whose engine cannot be reached; --discard needs no engine.
The background repair is off here (interval 0), so every intent stays until the command settles it.
"""

from __future__ import annotations

from http.client import HTTPException

import pytest
from sqlalchemy import select

from gravimeta.concurrency.tables import node
from gravimeta.store.models import TableRow
from tests.engine.conftest import Api, engine_of, hive_properties, in_background, ok, sqlite_properties

pytestmark = pytest.mark.slow  # tens of seconds each: start them first

NO_BACKGROUND = {"GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS": "0"}


def stored_tables(cluster) -> list[str]:
    with cluster.engine.connect() as conn:
        return sorted(conn.scalars(select(TableRow.name)))


def left_open_by_a_dead_replica(cluster, point: str) -> tuple[Api, int]:
    """A sqlite catalog; replica b's worker dies at `point` while creating table t. Returns replica a's
    Api and the intent's id."""
    a = Api(cluster.replica("a", **NO_BACKGROUND))
    b = Api(cluster.replica("b", **NO_BACKGROUND))
    ok(a.metalake())
    ok(a.catalog("sqlite", sqlite_properties()))
    ok(a.schema())
    cluster.fp.arm(point, "exit", tag="b")
    with pytest.raises((OSError, HTTPException)):
        b.table("t")
    [left] = cluster.open_intents()
    return a, left.id


def test_resolve_applied_puts_the_engines_change_into_the_store(cluster, monkeypatch):
    _, intent = left_open_by_a_dead_replica(cluster, "engine.after_call")

    refused = cluster.repair_command("--resolve", str(intent), "not-applied")  # the engine has t
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "the engine shows the change made" in refused.stdout, refused.stdout
    assert [i.id for i in cluster.open_intents()] == [intent]

    done = cluster.repair_command("--resolve", str(intent), "applied")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"resolved #{intent} create_table /m/c/s as applied: the store now has the change" in done.stdout
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert stored_tables(cluster) == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []


def test_discard_ends_an_intent_and_touches_nothing_else(cluster, monkeypatch):
    _, intent = left_open_by_a_dead_replica(cluster, "engine.after_call")
    unknown = cluster.repair_command("--resolve", str(intent + 1000), "applied")
    assert unknown.returncode == 1 and f"There is no open intent #{intent + 1000}" in unknown.stdout, unknown.stdout

    done = cluster.repair_command("--discard", str(intent))
    assert done.returncode == 0 and f"discarded #{intent} create_table /m/c/s" in done.stdout, done.stdout
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert (stored_tables(cluster), engine.list_tables("s")) == ([], ["t"])  # exactly as it was
    assert cluster.open_intents() == []


def test_resolve_not_applied_keeps_the_operations_late_engine_call_out(cluster, stub, monkeypatch):
    properties = hive_properties(stub)
    a = Api(cluster.replica("a", **NO_BACKGROUND))
    ok(a.metalake())
    ok(a.catalog("hive", properties))
    ok(a.schema())
    stub.fault("hang", seconds=60, ops=["create_table"])
    thread, late = in_background(lambda: a.table("t"))
    stub.wait_hung()  # A's create is inside the stub, before its work
    cluster.pause("a")
    try:
        [left] = cluster.open_intents()
        done = cluster.repair_command("--resolve", str(left.id), "not-applied")  # waits out A's lease
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"resolved #{left.id} create_table /m/c/s as not applied" in done.stdout, done.stdout
        stub.release()
        stub.wait_idle()  # A's call has now been judged by the stub
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late and late[0][0] == 502, late  # outcome unknown: its intent was settled elsewhere
    engine = engine_of(cluster, "hive", properties, monkeypatch)
    assert (stored_tables(cluster), engine.list_tables("s")) == ([], [])
    assert cluster.open_intents() == []


def test_resolve_not_applied_refuses_when_the_engine_cannot_be_told(cluster, stub):
    a = Api(cluster.replica("a", **NO_BACKGROUND))
    b = Api(cluster.replica("b", **NO_BACKGROUND))
    ok(a.metalake())
    ok(a.catalog("hive", hive_properties(stub)))
    ok(a.schema())
    cluster.fp.arm("engine.before_call", "exit", tag="b")
    with pytest.raises((OSError, HTTPException)):
        b.table("t")
    [left] = cluster.open_intents()
    stub.stop()
    refused = cluster.repair_command("--resolve", str(left.id), "not-applied")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "could not be told to refuse the operation's late calls" in refused.stdout, refused.stdout
    assert [i.id for i in cluster.open_intents()] == [left.id]
    assert cluster.repair_command("--discard", str(left.id)).returncode == 0  # the operator's last word
    assert cluster.open_intents() == []


def test_operator_commands_do_not_register_as_replicas(cluster):
    a = Api(cluster.replica("a", **NO_BACKGROUND))
    ok(a.metalake())

    def registered() -> list[str]:
        with cluster.engine.connect() as conn:
            return sorted(conn.scalars(select(node.c.node_id)))

    servers = registered()
    assert len(servers) == 1, servers
    for args in ((), ("--list",), ("--discard", "1")):
        cluster.repair_command(*args)
    assert registered() == servers
