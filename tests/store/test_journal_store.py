"""The journal's rows (gravimeta/store/journal.py) on every database: an intent id names one operation
forever (a client is told "pending operation N"; a holder that lost its claim withdraws its intent by
id), and an operator's note holds whatever value it reports."""

from __future__ import annotations

from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.journal import OperationJournal


def journal_on(db_url):
    return OperationJournal(EntityStore(create_store_engine(db_url)))


def test_an_intent_id_is_never_used_twice_even_after_the_highest_row_is_deleted(db_url):
    journal = journal_on(db_url)
    first = journal.store.write(lambda s: journal.insert_in(s, "/m/c", "create_schema", 1, "{}"))
    assert journal.withdraw(first.id) is True
    second = journal.store.write(lambda s: journal.insert_in(s, "/m/c", "create_schema", 1, "{}"))
    assert second.id > first.id
    assert journal.withdraw(first.id) is False  # a late withdrawal of the first never hits the second
    assert [i.id for i in journal.pending()] == [second.id]
    journal.store.engine.dispose()


def test_a_note_holds_nul_and_lone_surrogates_and_is_bounded(db_url):
    journal = journal_on(db_url)
    intent = journal.store.write(lambda s: journal.insert_in(s, "/m/c", "create_schema", 1, "{}"))
    journal.note(intent.id, "refused: a\x00b \ud800 " + "x" * 10_000, state="stuck")
    [noted] = journal.pending()
    assert noted.state == "stuck" and noted.detail.startswith("refused: a\\x00b \\ud800 ") and len(noted.detail) == 4000
    journal.store.engine.dispose()
