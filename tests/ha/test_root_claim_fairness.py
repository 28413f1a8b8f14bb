"""A root claim (a metalake create, rename or drop claims '/') gets its claim within its timeout while
another metalake is busy, under LEASE_TABLE on SQLite, PostgreSQL and MariaDB (docs/ha.md, "Root claims").

A root claim needs a moment with no live claim anywhere. The relay below leaves it none, as six threads
churning schemas in m1 did: replicas a and b create tables in m1's schemas s1 and s2 (unrelated scopes),
each paused at `claim.after_grant` while it holds its claim, and each next create is granted before the
previous one is let go. Without the hold-back every attempt of the metalake create met a live claim, and
it answered 503 ScopeBusy after its claim timeout (7 of 8 creates under a real churn). With it, the root
claim's first busy attempt records it as waiting in '/''s anchor row, the relay's next create is held
back, the current one ends, and the metalake create is granted; the held-back create follows it.
`GRAVIMETA_HA_DISABLE=root_hold_back` (the root claim records nothing) makes it fail again.

A waiting root claim that freezes or dies holds the others back no longer than its record lives past its
last attempt (root_wait.POLL_S, by the database clock): the second test pauses it at `claim.root_waiting`
(or ends its process there) right after an attempt recorded it, and a create in m1 is granted within that.
`GRAVIMETA_HA_DISABLE=root_wait_expiry` (the record lives until its end, a quarter of the root claim's
timeout) makes that one fail.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.root_wait import POLL_S
from gravimeta.concurrency.tables import claim_anchor
from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, in_background, ok, wait_until
from tests.support.databases import BACKENDS, fresh_database
from tests.support.failpoints import Reached

#: how long the relay lets a holder hold on once the next create was sent: the next one is granted within
#: this unless it is held back
HANDOVER_S = 0.5
ROOT_TIMEOUT_MS = 6000


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path) -> Iterator[str]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


def reached_within(cluster: Cluster, tag: str, seconds: float) -> Reached | None:
    """The hit of replica `tag` paused at claim.after_grant, if it gets there within `seconds`."""
    try:
        return cluster.fp.wait_reached("claim.after_grant", tag=tag, timeout=seconds)
    except AssertionError:
        return None


class Relay:
    """Table creates in m1 through replicas a (schema s1) and b (s2), each holding its claim at
    claim.after_grant until the next one holds its own."""

    def __init__(self, cluster: Cluster, apis: dict[str, tuple[Api, str]]):
        self.cluster, self.apis = cluster, apis
        self.sent: list[tuple[str, Any, list[Any], float]] = []  # (tag, thread, answers, sent at)
        self.count = 0

    def send(self, tag: str) -> None:
        api, schema = self.apis[tag]
        self.count += 1
        name = f"t{self.count}"
        self.cluster.fp.arm("claim.after_grant", tag=tag, scope="/m1")
        thread, answers = in_background(lambda: api.table(name, s=schema, m="m1"))
        self.sent.append((tag, thread, answers, time.monotonic()))

    def let_go(self, held: Reached) -> None:
        self.cluster.fp.resume(held)
        wait_until("the resumed holder left its failpoint", lambda: not self.cluster.fp.is_paused(held), timeout=10)

    def answers(self) -> list[Any]:
        for _, thread, _, _ in self.sent:
            thread.join(60)
        return [answers[0] if answers else None for _, _, answers, _ in self.sent]


def test_a_metalake_create_gets_its_claim_while_m1_always_holds_a_live_claim(store_url, tmp_path, clusters):
    cluster = Cluster(store_url, tmp_path)
    clusters.append(cluster)
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    root = Api(cluster.replica("r", GRAVIMETA_CLAIM_TIMEOUT_MS=str(ROOT_TIMEOUT_MS)))
    ok(a.metalake("m1"))
    ok(a.catalog("memory", {}, m="m1"))
    ok(a.schema("s1", m="m1"))
    ok(b.schema("s2", m="m1"))  # every replica's anchor rows exist: the claims below only claim
    ok(root.metalake("warm"))

    relay = Relay(cluster, {"a": (a, "s1"), "b": (b, "s2")})
    relay.send("a")
    holder = cluster.fp.wait_reached("claim.after_grant", tag="a")
    creator, made = in_background(lambda: root.metalake("m9"))
    started = time.monotonic()
    held_back: tuple[str, float] | None = None
    while creator.is_alive() and time.monotonic() - started < 4 * ROOT_TIMEOUT_MS / 1000:
        tag = "b" if holder.tag == "a" else "a"
        relay.send(tag)
        following = reached_within(cluster, tag, HANDOVER_S)
        relay.let_go(holder)
        if following is None:  # held back: nothing holds m1 any more once the previous holder ends
            held_back = (tag, relay.sent[-1][3])
            break
        holder = following
        creator.join(0.1)
    creator.join(ROOT_TIMEOUT_MS / 1000 + 10)
    root_answered = time.monotonic() - started
    if held_back is not None:  # the held-back create is granted after the metalake create
        last = cluster.fp.wait_reached("claim.after_grant", tag=held_back[0], timeout=20)
        granted_after = time.monotonic() - held_back[1]
        relay.let_go(last)
    else:
        relay.let_go(holder)
    answers = relay.answers()

    assert made, "the metalake create did not answer"
    status, body = made[0]
    assert status == 200, (
        f"a metalake create answered {status} {body.get('type')} after {root_answered:.1f} s (claim timeout "
        f"{ROOT_TIMEOUT_MS} ms) while {len(relay.sent)} creates in m1 handed a live claim on one to the next")
    assert held_back is not None, "the metalake create was granted although no create in m1 was held back"
    assert all(answer is not None and answer[0] == 200 for answer in answers), answers
    # the held-back create waited for the claim its relay held (HANDOVER_S) and the metalake create, no more
    assert granted_after < HANDOVER_S + 3, f"the held-back create in m1 was granted {granted_after:.1f} s after it was sent"


def answered_or_lost(request: Any) -> Any:
    """The request's answer, or "lost" when its replica's worker died before it answered."""
    try:
        return request()
    except (OSError, http.client.HTTPException):
        return "lost"


def waiting_root_claim(cluster: Cluster) -> Any:
    """The waiting root claim's record ('/' anchor row): (holder, live), by the database clock."""
    a = claim_anchor.c
    with cluster.engine.connect() as conn:
        return conn.execute(select(a.root_waiter, (a.root_wait_until > db_now(dialect_of(cluster.engine))).label("live"))
                            .where(a.anchor == "/")).one()


@pytest.mark.parametrize("how", ["pause", "exit"])
def test_a_waiting_root_claim_that_freezes_or_dies_holds_m1_back_no_longer_than_its_record_lives(
        store_url, tmp_path, clusters, how):
    cluster = Cluster(store_url, tmp_path)
    clusters.append(cluster)
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    root = Api(cluster.replica("r", GRAVIMETA_CLAIM_TIMEOUT_MS="12000"))  # its record may last 3 s
    ok(a.metalake("m1"))
    ok(a.catalog("memory", {}, m="m1"))
    ok(a.schema("s1", m="m1"))
    ok(b.schema("s2", m="m1"))
    ok(root.metalake("warm"))

    cluster.fp.arm("claim.after_grant", tag="a", scope="/m1")
    holding, held = in_background(lambda: a.table("t1", s="s1", m="m1"))
    holder = cluster.fp.wait_reached("claim.after_grant", tag="a")
    cluster.fp.arm("claim.root_waiting", action=how, tag="r")
    creator, made = in_background(lambda: answered_or_lost(lambda: root.metalake("m9")))  # busy: m1 holds a claim
    frozen = cluster.fp.wait_reached("claim.root_waiting", tag="r") if how == "pause" else None
    if how == "exit":
        creator.join(20)
        assert made and made[0] == "lost", f"the root claimant's worker did not die at its failpoint: {made}"
    cluster.fp.resume(holder)  # m1's claim ends: nothing is live but the frozen (or dead) waiter's record
    holding.join(20)
    assert held and held[0][0] == 200, held
    record = waiting_root_claim(cluster)
    started = time.monotonic()
    created = b.table("t2", s="s2", m="m1")
    elapsed = time.monotonic() - started
    if frozen is not None:
        still = cluster.fp.is_paused(frozen)
        cluster.fp.resume(frozen)
        creator.join(30)
        assert still, "the waiting root claim was resumed before the create in m1 answered"
        assert made and made[0][0] == 200, made

    assert record.root_waiter is not None and record.live, (
        f"the {'frozen' if how == 'pause' else 'dead'} root claimant's record was not live when m1's create was sent")
    assert created[0] == 200, created
    assert elapsed < POLL_S + 1, (
        f"a create in m1 waited {elapsed:.1f} s behind the record of a {'frozen' if how == 'pause' else 'dead'} "
        f"waiting root claim (it lives {POLL_S} s past the waiter's last attempt)")
