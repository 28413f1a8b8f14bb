"""Threads of one process waiting for the same scope: one polls the database at a time (the local
gate of LeaseBackend.claim_path), and each of them still gets the claim once it is free. With
GRAVIMETA_CLAIM_GATE=false every waiting thread polls, which the first assertion catches."""

from __future__ import annotations

import threading
import time

import pytest

from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.store.database import create_store_engine

WAITERS = 4


@pytest.fixture
def engine(db_url):
    engine = create_store_engine(db_url)
    yield engine
    engine.dispose()


def test_waiting_threads_poll_one_at_a_time_and_all_get_the_claim(engine, monkeypatch):
    holder = LeaseBackend(engine, "holder", ttl_ms=5000, timeout_ms=1000)
    waiting = LeaseBackend(engine, "waiting", ttl_ms=5000, timeout_ms=10000)
    polling, most_polling, lock = 0, 0, threading.Lock()
    try_claim = waiting._try_claim

    def counted(path: str, holder_id: str, waiting_before: bool):  # type: ignore[no-untyped-def]
        nonlocal polling, most_polling
        with lock:
            polling += 1
            most_polling = max(most_polling, polling)
        try:
            time.sleep(0.005)  # a slow database: overlapping polls would show
            return try_claim(path, holder_id, waiting_before)
        finally:
            with lock:
                polling -= 1

    monkeypatch.setattr(waiting, "_try_claim", counted)
    held = holder.claim_path("/m/c/s")
    granted: list[int] = []

    def claim_and_release() -> None:
        claim = waiting.claim_path("/m/c/s")
        granted.append(claim.fence)
        claim.release()

    threads = [threading.Thread(target=claim_and_release) for _ in range(WAITERS)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # every waiter is queued or polling while the holder keeps the scope
    held.release()
    for t in threads:
        t.join(timeout=20)
    holder.heartbeat.stop()
    waiting.heartbeat.stop()

    assert most_polling == 1, f"{most_polling} threads of one process polled at once"
    assert len(granted) == WAITERS and len(set(granted)) == WAITERS, granted
