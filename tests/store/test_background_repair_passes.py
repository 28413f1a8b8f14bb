"""Which intents a background repair pass takes (gravimeta/dispatch/background_repair.py), on a real
journal (SQLite): only those recorded at least one interval ago and not stuck; the pass runs on a
thread of its own; interval 0 starts nothing."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from gravimeta.concurrency import metrics
from gravimeta.dispatch.background_repair import BackgroundRepair
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.journal import STUCK, OperationJournal, operation_journal


@pytest.fixture
def journal(sqlite_url):
    engine = create_store_engine(sqlite_url)
    yield OperationJournal(EntityStore(engine))
    engine.dispose()


def record(journal: OperationJournal, path: str, old: bool = False, state: str | None = None) -> int:
    intent = journal.store.write(lambda s: journal.insert_in(s, path, "create_table", 1, "{}"))
    values: dict[str, object] = {}
    if old:  # recorded long ago
        values["created_at"] = datetime(2000, 1, 1, tzinfo=UTC)
    if state:
        values["state"] = state
    if values:
        journal.store.write(lambda s: s.execute(
            update(operation_journal).where(operation_journal.c.id == intent.id).values(**values)))
    return intent.id


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str]] = []
        self.called = threading.Event()

    def __call__(self, scopes: Iterable[str]) -> Counter[str]:
        self.calls.append((list(scopes), threading.current_thread().name))
        self.called.set()
        return Counter({"rolled forward": 1})


def test_a_pass_repairs_the_scopes_of_old_intents_that_are_not_stuck(journal):
    record(journal, "/m/c/young")
    record(journal, "/m/c/old", old=True)
    record(journal, "/m/c/old", old=True)
    record(journal, "/m/c/stuck", old=True, state=STUCK)
    repair = Recording()
    background = BackgroundRepair(journal, repair, interval_ms=60_000)

    assert background.run_once() == Counter({"rolled forward": 1})
    assert [scopes for scopes, _ in repair.calls] == [["/m/c/old"]]
    assert metrics.journal_stuck_intents._value.get() == 1


def test_a_pass_with_nothing_due_repairs_nothing(journal):
    record(journal, "/m/c/young")
    repair = Recording()
    assert BackgroundRepair(journal, repair, interval_ms=60_000).run_once() == Counter()
    assert repair.calls == []


def test_passes_run_on_their_own_thread_and_stop(journal):
    record(journal, "/m/c/old", old=True)
    repair = Recording()
    background = BackgroundRepair(journal, repair, interval_ms=50).start()
    try:
        assert repair.called.wait(10), "no pass ran"
    finally:
        background.stop()
    assert repair.calls[0][1] == "gravimeta-journal-repair"
    deadline = time.monotonic() + 10
    while background.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not background.running


def test_interval_zero_starts_no_thread(journal):
    background = BackgroundRepair(journal, Recording(), interval_ms=0).start()
    assert not background.running
