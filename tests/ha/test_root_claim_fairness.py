"""A root claim (a metalake create, rename or drop claims '/') gets its claim within its timeout while
another metalake is busy, under LEASE_TABLE on SQLite, PostgreSQL and MariaDB (docs/ha.md, "Root claims").

A root claim needs a moment with no live claim anywhere. The relay below leaves it none, as six threads
churning schemas in m1 did: replicas a and b create tables in m1's schemas s1 and s2 (unrelated scopes),
each paused at `claim.after_grant` while it holds its claim, and each next create is granted before the
previous one is let go. Without the hold-back every attempt of the metalake create met a live claim, and
it answered 503 ScopeBusy after its claim timeout (7 of 8 creates under a real churn). With it, the root
claim's first busy attempt records it as waiting in '/''s anchor row, the relay's next create is held
back, the current one ends, and the metalake create is granted; the held-back create follows it.
`GRAVIMETA_HA_DISABLE=root_hold_back` (the root claim records nothing) makes it fail again. Under AUTO the
same relay of advisory claims (memory catalog) starves a metalake's force drop, a lease root claim, unless
gm_advisory_claim reads the record too.

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
from contextlib import ExitStack
from typing import Any

import pytest
from sqlalchemy import select

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.root_wait import POLL_S
from gravimeta.concurrency.tables import claim_anchor
from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, in_background, ok, sqlite_properties, wait_until
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


class Relay:
    """Table creates in m1 through replicas a (schema s1) and b (s2), each paused at `failpoint` (where it
    holds its claim) until the next one holds its own: some claim in m1 is live at every moment, unless a
    waiting root claim holds the next one back."""

    def __init__(self, cluster: Cluster, apis: dict[str, tuple[Api, str]], failpoint: str = "claim.after_grant"):
        self.cluster, self.apis, self.failpoint = cluster, apis, failpoint
        self.sent: list[tuple[Any, list[Any]]] = []  # (thread, answers)
        self.held_back: list[float] = []  # how long each held-back create waited for its claim
        self.holder: Reached | None = None

    def send(self, tag: str) -> None:
        api, schema = self.apis[tag]
        name = f"t{len(self.sent) + 1}"
        self.cluster.fp.arm(self.failpoint, tag=tag, scope="/m1")
        self.sent.append(in_background(lambda: api.table(name, s=schema, m="m1")))

    def reached(self, tag: str, seconds: float) -> Reached | None:
        """The create of replica `tag` paused at the failpoint, if it gets there within `seconds`."""
        try:
            return self.cluster.fp.wait_reached(self.failpoint, tag=tag, timeout=seconds)
        except AssertionError:
            return None

    def let_go(self, held: Reached) -> None:
        self.cluster.fp.resume(held)
        wait_until("the resumed holder left its failpoint", lambda: not self.cluster.fp.is_paused(held), timeout=10)

    def start(self) -> None:
        """The first create, through a: it holds its claim once this returns."""
        self.send("a")
        self.holder = self.cluster.fp.wait_reached(self.failpoint, tag="a")

    def run(self, until_answered: Any, limit_s: float) -> None:
        """Hand the claim on from a to b and back until `until_answered` (a thread) ends: send the next
        create; once it holds its claim (or after HANDOVER_S, if it is held back) let the previous one go;
        a held-back create becomes the holder once it is granted. Every create is let go at the end."""
        holder = self.holder
        assert holder is not None, "start() first"
        started = time.monotonic()
        while until_answered.is_alive() and time.monotonic() - started < limit_s:
            tag = "b" if holder.tag == "a" else "a"
            sent = time.monotonic()
            self.send(tag)
            following = self.reached(tag, HANDOVER_S)
            self.let_go(holder)
            if following is None:  # held back: nothing holds m1 any more once the previous holder is gone
                following = self.cluster.fp.wait_reached(self.failpoint, tag=tag, timeout=20)
                self.held_back.append(time.monotonic() - sent)
            holder = following
            until_answered.join(0.1)
        until_answered.join(ROOT_TIMEOUT_MS / 1000 + 10)
        self.let_go(holder)

    def answers(self) -> list[Any]:
        for thread, _ in self.sent:
            thread.join(60)
        return [answers[0] if answers else None for _, answers in self.sent]


@pytest.mark.slow
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
    relay.start()
    creator, made = in_background(lambda: root.metalake("m9"))
    started = time.monotonic()
    relay.run(creator, 4 * ROOT_TIMEOUT_MS / 1000)
    root_answered = time.monotonic() - started
    answers = relay.answers()

    assert made, "the metalake create did not answer"
    status, body = made[0]
    assert status == 200, (
        f"a metalake create answered {status} {body.get('type')} after {root_answered:.1f} s (claim timeout "
        f"{ROOT_TIMEOUT_MS} ms) while {len(relay.sent)} creates in m1 handed a live claim on one to the next")
    assert relay.held_back, "the metalake create was granted although no create in m1 was held back"
    assert all(answer is not None and answer[0] == 200 for answer in answers), answers
    # a held-back create waited for the claim its relay held (HANDOVER_S) and the metalake create, no more
    assert max(relay.held_back) < HANDOVER_S + 3, f"held-back creates in m1 waited {relay.held_back} s"


@pytest.fixture
def postgres_url(tmp_path) -> Iterator[str]:
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        yield url


@pytest.mark.slow
def test_a_lease_root_claim_under_auto_gets_its_claim_while_advisory_claims_churn_in_m1(
        postgres_url, tmp_path, clusters):
    """AUTO on PostgreSQL: table creates in a memory catalog take advisory claims; the force drop of a
    metalake with a sqlite catalog takes the lease on '/' (its catalog's retirement needs a fence), whose
    pg_try_advisory_xact_lock on '/' fails while any advisory claim holds '/' shared. So advisory claims
    read the waiting root claim's record too (gm_advisory_claim, alembic 0021): before they did, the drop
    answered 503 while the relay's advisory claims overlapped."""
    cluster = Cluster(postgres_url, tmp_path, {"GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "AUTO"})
    clusters.append(cluster)
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    root = Api(cluster.replica("r", GRAVIMETA_CLAIM_TIMEOUT_MS=str(ROOT_TIMEOUT_MS)))
    ok(a.metalake("m1"))
    ok(a.catalog("memory", {}, m="m1"))
    ok(a.schema("s1", m="m1"))
    ok(b.schema("s2", m="m1"))
    ok(a.table("w1", s="s1", m="m1"))
    ok(b.table("w2", s="s2", m="m1"))  # both replicas know c is a memory catalog: advisory claims
    ok(root.metalake("m9"))
    ok(root.catalog("sqlite", sqlite_properties(), m="m9"))
    ok(root.schema("s", m="m9"))

    relay = Relay(cluster, {"a": (a, "s1"), "b": (b, "s2")}, failpoint="advisory.after_lock")
    relay.start()
    dropper, dropped = in_background(lambda: root.r.request("DELETE", "/api/metalakes/m9?force=true"))
    started = time.monotonic()
    relay.run(dropper, 4 * ROOT_TIMEOUT_MS / 1000)
    answered = time.monotonic() - started
    answers = relay.answers()

    assert dropped, "the metalake drop did not answer"
    status, body = dropped[0]
    assert status == 200 and body.get("dropped") is True, (
        f"a force drop of a metalake with a sqlite catalog answered {status} {body} after {answered:.1f} s "
        f"(claim timeout {ROOT_TIMEOUT_MS} ms) while {len(relay.sent)} advisory claims in m1 overlapped")
    assert all(answer is not None and answer[0] == 200 for answer in answers), answers


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


@pytest.fixture
def database_of(tmp_path) -> Iterator[Any]:
    """A fresh migrated database of the backend asked for (dropped at the end of the test)."""
    with ExitStack() as stack:
        def make(backend: str) -> str:
            require_backend(backend)
            return stack.enter_context(fresh_database(backend, tmp_path))
        yield make


# the record's bound is the database's: a frozen waiter on every backend, a dead one (its worker exits at
# the failpoint) on one
@pytest.mark.parametrize("backend,how", [("sqlite", "pause"), ("postgresql", "pause"), ("mysql", "pause"),
                                         ("postgresql", "exit")])
def test_a_waiting_root_claim_that_freezes_or_dies_holds_m1_back_no_longer_than_its_record_lives(
        database_of, tmp_path, clusters, backend, how):
    cluster = Cluster(database_of(backend), tmp_path)
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
