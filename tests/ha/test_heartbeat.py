"""Heartbeats keep a claim alive past its TTL; the reclaimer removes a claim nobody renews."""

from __future__ import annotations

import time

import pytest

from gravimeta import errors
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.reclaimer import live_claims, reclaim_expired
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.store.database import create_store_engine


@pytest.fixture
def engine(db_url):
    engine = create_store_engine(db_url)
    yield engine
    engine.dispose()


def test_a_renewed_claim_outlives_its_ttl(engine):
    holder = LeaseBackend(engine, "holder", ttl_ms=600, timeout_ms=1000)
    contender = LeaseBackend(engine, "contender", ttl_ms=600, timeout_ms=2000)
    claim = holder.claim_path("/m/c")
    with pytest.raises(errors.ScopeBusy):
        contender.claim_path("/m/c/s")  # waits 2 s, more than three TTLs
    assert claim.trusted()
    claim.release()
    contender.claim_path("/m/c/s").release()
    holder.heartbeat.stop()
    contender.heartbeat.stop()


def test_the_reclaimer_deletes_a_claim_nobody_renews(engine):
    silent = LeaseBackend(engine, "silent", ttl_ms=300, heartbeat=Heartbeat(3600))
    claim = silent.claim_path("/m")
    deadline = time.monotonic() + 5
    while any(c["live"] for c in live_claims(engine)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reclaim_expired(engine) == 1
    assert live_claims(engine) == []
    assert not claim.trusted()
