"""Where a pause lands around a claim's grant decides what the paused replica answers, and neither answer
is a commit under a stolen claim. Real replicas (LEASE_TABLE, TTL 2 s) on PostgreSQL, MariaDB and SQLite;
a failpoint puts replica A exactly there, then its whole process group is stopped (SIGSTOP: its heartbeat
stops too) while replica B takes the scope over.

At the grain of SQL statements (A and B each create a table in /m/c/s):

  A  CALL gm_claim_scope('/m/c/s', A) (one call: the grant commits, fence F)     -- the row is visible
     -- pause 1 (claim.granted): A has not read the fence yet, or not judged it --
     -- pause 2 (claim.after_grant): A holds the claim, tracked for renewal, before its store write --
  B  the claim's related read finds A's row live: busy, backoff; after TTL it is committed expired
  B  locking re-read, DELETE of A's row (a steal), grant F' > F; its create commits, deleting its row
  A  SIGCONT.
     pause 1: the grant's lease counted from A's attempt, more than a TTL ago, so it is spent before A
        used it: A gives it back (DELETE by holder and fence: nothing left to delete) and claims again,
        now after B: fence F'' > F'. Its create commits under F'': ordered after B's, legitimately. 200.
     pause 2: its store transaction's fence guard finds the claim untrusted (its local deadline passed)
        and, in the database, B's grant in its place: 409 FenceLost, nothing written.

A whole-suite run saw pause 1 once in tests/chaos/test_holder_dies_or_pauses.py (the replica's claim row
was visible before its process had read the grant) and took the 200 for a zombie commit. The fence each
commit carried tells them apart (conftest.judge_resumed_holder).
Switches: GRAVIMETA_HA_DISABLE=no_fence (the guard does nothing) fails the pause-2 test with a ZOMBIE
COMMIT; fresh_grant (the spent grant is kept) turns pause 1's answer into 409 FenceLost, and
fresh_grant,no_fence into a ZOMBIE COMMIT under the spent fence.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.chaos.conftest import (
    CATALOG,
    HEARTBEAT_S,
    METALAKE,
    SCHEMA,
    TTL_MS,
    Cluster,
    in_background,
    judge_resumed_holder,
)
from tests.conftest import require_backend
from tests.engine.conftest import group_members, wait_stopped
from tests.support.databases import fresh_database
from tests.support.servers import ServerProcess

SCOPE = f"/{METALAKE}/{CATALOG}/{SCHEMA}"
SLACK_S = 1.5  # process scheduling, HTTP and the claimant's backoff


@pytest.fixture(params=["postgresql", "mysql", "sqlite"])
def replicas(request, tmp_path) -> Iterator[Cluster]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        cluster = Cluster(url, tmp_path)
        try:
            yield cluster
        finally:
            cluster.stop()


def stopped(server: ServerProcess) -> None:
    """SIGSTOP the replica's process group and return once every thread of it has stopped."""
    group = server.process.pid  # type: ignore[union-attr]
    os.killpg(group, signal.SIGSTOP)
    for pid in group_members(group):
        wait_stopped(pid)


def run_paused(cluster: Cluster, failpoint: str) -> tuple[str, int]:
    """A's create paused at `failpoint` and stopped; B's create takes the scope over; A resumed. Returns
    what A's answer was (judge_resumed_holder) and the fence A's process saw at the failpoint."""
    server_a, a = cluster.replica("chaos-a")
    _, b = cluster.replica("chaos-b")
    cluster.setup_tree(b)
    cluster.fp.arm(failpoint, tag="chaos-a", scope=SCOPE)
    thread, late = in_background(lambda: cluster.recorder.create_table(a, CATALOG, SCHEMA, "by_a"))
    hit = cluster.fp.wait_reached(failpoint, tag="chaos-a")
    paused_fence = int(hit.context["fence"])
    assert cluster.claims_of("chaos-a") == [SCOPE], "A's grant is committed: what the suite's poll saw"
    stopped(cluster.servers[0])
    try:
        cluster.fp.resume(hit)  # A goes on only once continued
        op = cluster.recorder.create_table(b, CATALOG, SCHEMA, "by_b")  # waits for A's lease, then steals it
        assert op.outcome == "ok", op.describe()
        assert op.end is not None and op.end - op.start <= TTL_MS / 1000 + HEARTBEAT_S + SLACK_S, op.describe()
    finally:
        os.killpg(server_a.process.pid, signal.SIGCONT)  # type: ignore[union-attr]
    thread.join(35)
    assert late, "no answer from the resumed replica"
    (stealer_fence,) = cluster.fences("chaos-b", SCOPE)
    assert paused_fence < stealer_fence, "B's grant came after A's"
    report, state = cluster.final_check(b)
    assert report.ok, report.render()
    holder_fences = cluster.fences("chaos-a", SCOPE) if failpoint == "claim.granted" else [paused_fence]
    answer = judge_resumed_holder(late[0], holder_fences, stealer_fence, state.api[SCHEMA], "by_a", "by_b")
    assert cluster.recorder.create_table(a, CATALOG, SCHEMA, "after").outcome == "ok"  # A works again
    return answer, paused_fence


def test_a_claimant_paused_before_it_used_its_grant_claims_again_after_the_stealer_and_commits_after_it(replicas):
    answer, spent = run_paused(replicas, "claim.granted")
    assert answer == "claimed again", "the resumed claimant kept its spent grant"
    (taken_again, _after) = replicas.fences("chaos-a", SCOPE)
    assert taken_again > spent


def test_a_holder_paused_once_it_held_its_claim_is_refused_when_it_resumes(replicas):
    answer, _held = run_paused(replicas, "claim.after_grant")
    assert answer == "refused"
