"""A replica holding a claim is killed (kill -9) or paused past its lease (SIGSTOP): the claim is taken
over within TTL + one heartbeat, later operations on that scope succeed, the paused holder never
commits under its stolen claim, and nothing acknowledged is lost.

Where the pause lands decides the paused holder's answer, and both answers are safe. Paused while it
waits inside its operation (the usual case here), it finds its claim lost on resuming: 409 FenceLost. Paused
after its claim's grant committed but before its process read the fence (the catalog lock makes no
difference there: it has not reached its reads yet), it finds the grant spent on resuming, gives it back
and claims again, after the stealer: its create commits under a newer fence, 200. A whole-suite run saw
that once; test_paused_claimant_order.py forces both. So the test judges the answer by the fence the
commit carried (conftest.judge_resumed_holder), and fails on a commit under the stolen fence
(GRAVIMETA_HA_DISABLE=no_fence: the replicas' fence guard does nothing)."""

from __future__ import annotations

import os
import signal
import time

from tests.chaos.conftest import (
    CATALOG,
    HEARTBEAT_S,
    METALAKE,
    SCHEMA,
    TTL_MS,
    catalog_table_locked,
    in_background,
    judge_resumed_holder,
    wait_until,
)

SLACK_S = 1.5  # process scheduling, HTTP and the claimant's backoff (at most 100 ms)


def test_claims_of_a_killed_replica_are_taken_over_within_ttl_plus_one_heartbeat(cluster):
    _, a = cluster.replica("chaos-a")
    _, b = cluster.replica("chaos-b")
    cluster.setup_tree(b)
    server_a = cluster.servers[0]
    with catalog_table_locked(cluster.db_url) as release:
        thread, _ = in_background(lambda: cluster.recorder.create_table(a, CATALOG, SCHEMA, "by_a"))
        assert wait_until("replica A claims the schema", lambda: cluster.claims_of("chaos-a")) == [f"/m/{CATALOG}/{SCHEMA}"]
        os.killpg(server_a.process.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        server_a.process.wait(10)
        release()
    op = cluster.recorder.create_table(b, CATALOG, SCHEMA, "by_b")
    took = time.monotonic() - killed_at
    assert op.outcome == "ok", op.describe()
    assert took <= TTL_MS / 1000 + HEARTBEAT_S + SLACK_S, f"the dead holder's claim blocked the scope for {took:.1f}s"
    assert cluster.claims_of("chaos-a") == []
    thread.join(35)

    # later structural operations on that scope, through the survivor, all succeed
    assert cluster.recorder.create_table(b, CATALOG, SCHEMA, "later").outcome == "ok"
    assert cluster.recorder.rename_table(b, CATALOG, SCHEMA, "later", SCHEMA, "later2").outcome == "ok"
    assert cluster.recorder.drop_table(b, CATALOG, SCHEMA, "by_b").outcome == "ok"
    report, state = cluster.final_check(b)
    assert report.ok, report.render()
    assert sorted(state.api[SCHEMA]) == ["later2"]


def test_a_paused_holder_loses_its_claim_and_never_commits_under_it(cluster):
    _, a = cluster.replica("chaos-a")
    _, b = cluster.replica("chaos-b")
    cluster.setup_tree(b)
    server_a = cluster.servers[0]
    scope = f"/{METALAKE}/{CATALOG}/{SCHEMA}"
    with catalog_table_locked(cluster.db_url) as release:
        thread, late = in_background(lambda: cluster.recorder.create_table(a, CATALOG, SCHEMA, "by_a"))
        wait_until("replica A claims the schema", lambda: cluster.claims_of("chaos-a"))
        os.killpg(server_a.process.pid, signal.SIGSTOP)
        try:
            paused_at = time.monotonic()
            release()
            op = cluster.recorder.create_table(b, CATALOG, SCHEMA, "by_b")  # waits for A's lease, then steals it
            took = time.monotonic() - paused_at
            assert op.outcome == "ok", op.describe()
            assert took <= TTL_MS / 1000 + HEARTBEAT_S + SLACK_S, f"stealing took {took:.1f}s"
        finally:
            os.killpg(server_a.process.pid, signal.SIGCONT)
    thread.join(35)
    assert late, "no answer from the resumed replica"
    (stealer_fence,) = cluster.fences("chaos-b", scope)
    report, state = cluster.final_check(b)
    assert report.ok, report.render()
    judge_resumed_holder(late[0], cluster.fences("chaos-a", scope), stealer_fence, state.api[SCHEMA], "by_a", "by_b")
    # the resumed replica is healthy again and works on the same scope
    assert cluster.recorder.create_table(a, CATALOG, SCHEMA, "after").outcome == "ok"
