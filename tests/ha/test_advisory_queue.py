"""PG_ADVISORY: operations waiting for the same scope get it in the order they arrived, because an
advisory guard waits in PostgreSQL's lock queue (gm_advisory_claim, alembic revision 0006) instead of
polling (bench/hot_parent.py measures what that does to the tail of the wait).

A holder keeps the scope's advisory lock in its claim's open transaction; five waiters arrive one after
another, each only once the one before is visibly waiting in pg_locks. When the holder commits, each
waiter records its turn, holds the scope briefly and commits. Mechanism off:
GRAVIMETA_HA_DISABLE=advisory_queue makes the guard poll with backoff, as it did before; whoever
polls first after a release wins, and the turns come out of order."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text

from gravimeta.concurrency.pg_advisory import AdvisoryBackend
from gravimeta.entities import NameIdentifier
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.ha.conftest import disabled
from tests.support.databases import fresh_database

WAITERS = 5
SCOPE = NameIdentifier.of("m", "c", "s")


@pytest.fixture
def pg_engine(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url, pool_size=WAITERS + 2)
        yield engine
        engine.dispose()


def waiting_advisory_locks(engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")).scalar_one())


def test_waiters_for_a_taken_scope_get_it_in_arrival_order(pg_engine):
    backend = AdvisoryBackend(pg_engine, timeout_ms=20000)
    turns: list[int] = []
    failures: list[BaseException] = []

    def waiter(i: int) -> None:
        try:
            claim = backend.claim(SCOPE)
            turns.append(i)
            time.sleep(0.05)
            claim.release()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(WAITERS)]
    held = backend.claim(SCOPE)
    try:
        for i, thread in enumerate(threads):
            thread.start()
            if disabled("advisory_queue"):
                time.sleep(0.2)  # a poller shows in pg_locks only while it tries: give it time to start
                continue
            deadline = time.monotonic() + 10
            while waiting_advisory_locks(pg_engine) < i + 1:
                assert time.monotonic() < deadline, f"waiter {i} is not waiting in the lock queue"
                time.sleep(0.01)
    finally:
        held.release()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    assert turns == list(range(WAITERS)), f"waiters got the scope in the order {turns}"
