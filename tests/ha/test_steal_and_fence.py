"""Steal + fence: a holder paused past its lease (SIGSTOP) loses its claim to another process and, when
it wakes, cannot commit; the store shows only the stealer's change."""

from __future__ import annotations

import signal

import pytest

from gravimeta.concurrency.scope_lease import UNSAFE_NO_FENCE, UNSAFE_NO_LOCAL_DEADLINE
from gravimeta.entities import Catalog, Metalake
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.ha.conftest import disabled

TTL_MS = 1000


@pytest.fixture
def store(db_url):
    engine = create_store_engine(db_url)
    store = EntityStore(engine)
    store.create_metalake(Metalake("m"), "test")
    store.create_catalog(Catalog("m", "c", "relational", "memory"), "test")
    yield store
    engine.dispose()


@pytest.mark.parametrize("checks", ["local_and_db", "db_only"])
def test_a_paused_holder_cannot_commit_after_its_claim_was_stolen(db_url, store, children, checks):
    unsafe = [UNSAFE_NO_FENCE] if disabled("no_fence") else []
    if checks == "db_only":  # no renewals and no local deadline: only the fenced read in the store transaction
        unsafe.append(UNSAFE_NO_LOCAL_DEADLINE)
    a = children("create_schema", {
        "url": db_url, "scope": ["m", "c"], "schema": "by_a", "pause": True, "node": "A",
        "ttl_ms": TTL_MS, "unsafe": unsafe, "no_heartbeat": checks == "db_only",
    })
    fence_a = int(a.expect("CLAIMED"))
    a.signal(signal.SIGSTOP)

    b = children("create_schema", {
        "url": db_url, "scope": ["m", "c"], "schema": "by_b", "node": "B", "ttl_ms": TTL_MS, "timeout_ms": 10000,
    })
    fence_b = int(b.expect("CLAIMED", timeout=20))
    assert b.expect("COMMITTED") == ""
    assert fence_b > fence_a

    a.signal(signal.SIGCONT)
    a.send("go")
    outcome = a.expect("")
    assert outcome.startswith("FENCELOST"), f"the paused holder committed after losing its claim: {outcome}"
    if checks == "db_only":  # refused by the locked re-read of the claim row, not by the local deadline
        # ("expired before this change could be saved"). Without a local deadline the claim counts a whole
        # lease left, which bounds the re-read; a bound that runs out before the read answers ("could not
        # be checked") would be the same database-side refusal.
        assert "taken over" in outcome or "could not be checked before it ran out" in outcome, outcome
    assert [s.name for s in store.list_schemas("m", "c")] == ["by_b"]
