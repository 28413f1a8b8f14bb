"""An answer must be true.

Replica A renames t to t2; the engine has done it (A stopped at engine.after_call, before its store step)
when A is SIGSTOPped past its lease. Replica B's next operation on the scope repairs A's intent: the
engine shows t2, so B rolls it forward. When A resumes, its store step fails its fence check. A must not
answer 409 FenceLost "this change was not saved; retry" (the table IS at t2, and a retry would 404): it
answers 502 "outcome unknown, pending operation N", naming the intent a repair settles.

And where nothing of the request can take effect, the answer says so: a call the engine refuses for a
stale fence, whose intent A withdraws itself, is a 409 FenceLost (tests/connectors/test_failure_matrix.py
has the unit-level cases).
"""

from __future__ import annotations

import re

import pytest

from tests.engine.conftest import engine_of, in_background, ok, setup_catalog, sqlite_properties


def test_a_rename_whose_intent_a_repair_rolls_forward_answers_outcome_unknown_not_fence_lost(cluster, monkeypatch):
    properties = sqlite_properties()
    a, b = setup_catalog(cluster, "sqlite", properties)
    ok(b.table("t"))
    cluster.fp.arm("engine.after_call", tag="a")
    thread, late = in_background(lambda: a.rename_table("t", "t2"))
    reached = cluster.fp.wait_reached("engine.after_call", tag="a")
    [intent] = cluster.open_intents()
    assert intent.id == int(reached.context["intent"])
    cluster.pause("a")
    cluster.fp.resume(reached)
    try:
        ok(b.table("u"))  # B's claim waits out A's lease; its repair rolls A's rename forward first
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late, "A never answered"
    status, body = late[0]
    assert (status, body["code"], body["type"]) == (502, 1007, "ConnectionFailedException"), body
    assert "FenceLostException" in body["message"] and "outcome of this table rename is unknown" in body["message"]
    assert re.search(rf"pending operation {intent.id}\b", body["message"]), body
    assert "not saved" not in body["message"]
    engine = engine_of(cluster, "sqlite", properties, monkeypatch)
    assert b.tables() == engine.list_tables("s") == ["t2", "u"]
    assert cluster.open_intents() == []


@pytest.mark.parametrize("point", ["engine.after_call", "store.before_commit"])
def test_a_busy_error_after_the_engine_call_answers_outcome_unknown_not_busy(cluster, monkeypatch, point):
    """A drop whose engine call landed and whose store step then fails with an error that otherwise means
    "nothing happened, retry" (ScopeBusy: 503) must not be answered with it: the intent stays open and the
    next operation's repair rolls the drop forward, so the answer is "outcome unknown, pending operation N".
    (The soak on MariaDB found two acknowledged renames into a schema lost that way: a cascade drop answered
    503 ScopeBusy, then rolled forward by a repair.)"""
    properties = sqlite_properties()
    a, b = setup_catalog(cluster, "sqlite", properties)
    ok(b.table("t"))
    if point == "engine.after_call":
        cluster.fp.arm("engine.after_call", "raise ScopeBusy", tag="a")
        thread, late = in_background(lambda: a.drop_schema())
    else:  # the store step's commit, not the first step's: armed once A's engine call has returned
        cluster.fp.arm("engine.after_call", tag="a")
        thread, late = in_background(lambda: a.drop_schema())
        reached = cluster.fp.wait_reached("engine.after_call", tag="a")
        cluster.fp.arm("store.before_commit", "raise ScopeBusy", tag="a")
        cluster.fp.resume(reached)
    thread.join(60)
    assert late, "A never answered"
    status, body = late[0]
    assert (status, body["type"]) == (502, "ConnectionFailedException"), body
    [intent] = cluster.open_intents()
    assert re.search(rf"pending operation {intent.id}\b", body["message"]), body
    ok(b.schema("s2"))  # the next operation under the catalog repairs A's drop: rolled forward
    assert b.schemas() == ["s2"]
    assert engine_of(cluster, "sqlite", properties, monkeypatch).list_schemas() == ["s2"]
    assert cluster.open_intents() == []
