"""The line of claim waiters (gravimeta/concurrency/waiter_line.py): across nodes, a scope that comes
free goes to the operation that has waited for it, not to whichever node asks first.

The line is off by default (GRAVIMETA_CLAIM_LINE=true turns it on); these tests turn it on unless
the variable says false. Each LeaseBackend below has its own engine and node id, so they meet only
in the database, as replicas do. Run with GRAVIMETA_CLAIM_LINE=false, the first two tests fail: a
newcomer that asks right after the release overtakes the waiter, which is asleep between polls, and
a cascade waiting on /m/c no longer holds anyone back.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from sqlalchemy import select

from gravimeta import errors
from gravimeta.concurrency import waiter_line
from gravimeta.concurrency.db_clock import db_now
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.concurrency.tables import claim_waiter
from gravimeta.store.database import create_store_engine

ROUNDS = 5


@pytest.fixture
def node(db_url, monkeypatch):
    """node(name, **lease_args) -> a LeaseBackend on an engine of its own; all closed at the end."""
    if os.environ.get("GRAVIMETA_CLAIM_LINE", "").lower() not in ("0", "false"):
        monkeypatch.setenv("GRAVIMETA_CLAIM_LINE", "true")
    made: list[LeaseBackend] = []

    def make(name: str, **kwargs) -> LeaseBackend:
        kwargs.setdefault("ttl_ms", 5000)
        made.append(LeaseBackend(create_store_engine(db_url), name, **kwargs))
        return made[-1]

    yield make
    for backend in made:
        backend.heartbeat.stop()
        backend.engine.dispose()


def tickets(backend: LeaseBackend, path: str) -> list[str]:
    """Holders with a live ticket on `path`."""
    w = claim_waiter.c
    with backend.engine.connect() as conn:
        return list(conn.execute(
            select(w.holder_id).where(w.scope_path == path, w.expires_at > db_now(backend.dialect))
        ).scalars())


def test_a_freed_scope_goes_to_the_node_that_waited_not_to_a_newcomer(node):
    holder, waiter, newcomer = node("holder"), node("waiter"), node("newcomer")
    path = "/m/c/s"
    overtaken = 0
    for _ in range(ROUNDS):
        held = holder.claim_path(path)
        granted: dict[str, int] = {}

        def wait_then_hold(granted: dict[str, int] = granted) -> None:
            claim = waiter.claim_path(path)
            granted["waiter"] = claim.fence
            time.sleep(0.2)  # the newcomer's claim is refused meanwhile, if the line works
            claim.release()

        thread = threading.Thread(target=wait_then_hold)
        thread.start()
        time.sleep(0.5)  # the waiter has polled (and found the scope busy) and its backoff is at its cap
        held.release()
        claim = newcomer.claim_path(path)  # asks at once; the waiter may be between two polls
        granted["newcomer"] = claim.fence
        claim.release()
        thread.join(timeout=20)
        assert set(granted) == {"waiter", "newcomer"}, granted
        if granted["newcomer"] < granted["waiter"]:  # fences of one path grow with every grant
            overtaken += 1
    assert overtaken == 0, f"a newcomer took the freed scope ahead of the waiter in {overtaken}/{ROUNDS} rounds"


def test_a_waiting_ancestor_claim_holds_back_newcomers_below_it_but_not_elsewhere(node):
    """Writer preference across nodes: while a cascade on /m/c waits for /m/c/s1, a new claim on
    /m/c/s2 (free, but below the waiter) queues behind it; /m/d/s is unrelated and goes through."""
    holder, cascade, newcomer = node("holder"), node("cascade"), node("newcomer")
    held = holder.claim_path("/m/c/s1")
    assert cascade._try_claim("/m/c", "cascade-op", waiting=False).fence is None

    behind = newcomer._try_claim("/m/c/s2", "newcomer-op", waiting=False)
    assert behind.fence is None and behind.ahead == 1
    elsewhere = newcomer.claim_path("/m/d/s")
    elsewhere.release()

    held.release()
    first = cascade._try_claim("/m/c", "cascade-op", waiting=True)
    assert first.fence is not None, "the oldest waiter gets the scope once it is free"
    assert tickets(holder, "/m/c") == []  # a granted waiter leaves the line


def test_a_ticket_that_is_not_renewed_stops_holding_the_line(node):
    """A waiter that died (its process killed while it waited) holds the line back for at most
    WAIT_TTL_MS after its last poll."""
    dead, newcomer = node("dead"), node("newcomer")
    with dead.engine.begin() as conn:
        waiter_line.wait_in_line(conn, dead.dialect, "/m/c/s", "dead-op", None)
    assert newcomer._try_claim("/m/c/s", "newcomer-op", waiting=False).fence is None
    time.sleep(waiter_line.WAIT_TTL_MS / 1000 + 0.2)
    assert newcomer._try_claim("/m/c/s", "newcomer-op", waiting=True).fence is not None


def test_a_waiter_that_times_out_leaves_the_line_at_once(node):
    holder, impatient = node("holder"), node("impatient", timeout_ms=300)
    held = holder.claim_path("/m/c/s")
    with pytest.raises(errors.ScopeBusy):
        impatient.claim_path("/m/c/s")
    assert tickets(holder, "/m/c/s") == []
    held.release()
