"""How a failed COMMIT becomes an answer, without a database (gravimeta/store/commit_check.py): which
driver errors leave the outcome unknown, what the look's finding turns into, and how the API renders it.
tests/store/test_commit_check.py runs the look on PostgreSQL and MariaDB; tests/hardening/test_lost_commits.py
cuts real connections at COMMIT."""

from __future__ import annotations

import psycopg.errors
import pymysql.err
import pytest
from flask import Flask
from sqlalchemy import create_engine
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError

from gravimeta import errors
from gravimeta.api.errors import register_error_handlers
from gravimeta.dispatch import journal, repair
from gravimeta.store import EntityStore
from gravimeta.store.commit_check import CommitCheck, indefinite, lost_answer

LOST = OperationalError("COMMIT", {}, psycopg.OperationalError("consuming input failed: server closed the connection"),
                        connection_invalidated=True)


@pytest.mark.parametrize(("error", "unknown"), [
    (LOST, True),
    (OperationalError("COMMIT", {}, psycopg.OperationalError("the connection is lost")), True),  # no SQLSTATE
    (OperationalError("COMMIT", {}, psycopg.errors.AdminShutdown("terminating connection")), True),
    (OperationalError("COMMIT", {}, pymysql.err.OperationalError(2013, "Lost connection during query")), True),
    # 2006 'gone away' at COMMIT: the bytes most likely never left, but looking is always safe
    (OperationalError("COMMIT", {}, pymysql.err.OperationalError(2006, "MySQL server has gone away")), True),
    (OperationalError("COMMIT", {}, pymysql.err.OperationalError(4031, "disconnected: inactivity")), True),
    (InterfaceError("COMMIT", {}, pymysql.err.InterfaceError(0, "")), True),
    (OperationalError("COMMIT", {}, Exception("a driver error of unknown shape")), True),
    # the server answered the COMMIT with an error, on a live session: it rolled back
    (OperationalError("COMMIT", {}, psycopg.errors.SerializationFailure("could not serialize")), False),
    (IntegrityError("COMMIT", {}, psycopg.errors.UniqueViolation("duplicate key")), False),
    (OperationalError("COMMIT", {}, pymysql.err.OperationalError(1213, "Deadlock found")), False),
])
def test_a_commit_whose_connection_failed_is_indefinite_and_one_the_server_refused_is_not(error, unknown):
    assert indefinite(error) is unknown


class _Found(CommitCheck):
    """The mapping from what the look found to the answer (the look itself runs on real databases)."""

    def __init__(self, found: bool | None):
        super().__init__(create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none"))
        self.found = found

    def look(self, op_id: str, session_id: int | None) -> bool | None:
        return self.found


def test_a_commit_found_committed_is_the_write_s_success():
    _Found(True).settle("a" * 32, 4711, LOST)  # returns: the caller answers with its result


def test_a_commit_found_not_committed_is_nothing_was_changed_and_says_it_was_checked():
    with pytest.raises(errors.StoreUnavailable) as raised:
        _Found(False).settle("b" * 32, 4711, LOST)
    assert type(raised.value) is errors.StoreUnavailable and raised.value.http_status == 503
    assert "nothing was changed" in raised.value.message and "b" * 32 in raised.value.message
    assert raised.value.__cause__ is LOST


def test_a_commit_that_could_not_be_looked_up_is_outcome_unknown_with_its_operation_id():
    with pytest.raises(errors.CommitOutcomeUnknown) as raised:
        _Found(None).settle("c" * 32, 4711, LOST)
    unknown = raised.value
    assert (unknown.http_status, unknown.code, unknown.type_name) == (502, 1007, "ConnectionFailedException")
    assert unknown.operation == "c" * 32 and "c" * 32 in unknown.message
    assert "nothing was changed" not in unknown.message
    assert "server closed the connection" in (unknown.detail or "") and "server closed" not in unknown.message


def test_outcome_unknown_stays_a_failed_store_for_the_journal_and_the_repair():
    """The journal's store step turns a StoreUnavailable into its own 'pending operation N' answer, and a
    repair stops at one; both must keep doing so when the store step's COMMIT was lost."""
    unknown = errors.CommitOutcomeUnknown("x", "d" * 32)
    assert isinstance(unknown, errors.StoreUnavailable) and isinstance(unknown, repair._FATAL)


def test_driver_errors_before_commit_still_mean_nothing_was_changed_and_settled_answers_pass_through():
    store = EntityStore(create_engine("sqlite://"))
    with pytest.raises(errors.StoreUnavailable) as raised, store._translated():
        raise OperationalError("INSERT", {}, psycopg.OperationalError("server closed the connection"))
    assert raised.value.message == "The metadata database failed; nothing was changed"
    unknown = errors.CommitOutcomeUnknown("x", "e" * 32)
    with pytest.raises(errors.CommitOutcomeUnknown) as passed, store._translated():
        raise unknown
    assert passed.value is unknown


def test_the_api_renders_outcome_unknown_as_a_502_gravitino_body_naming_the_operation():
    app = Flask("t")
    register_error_handlers(app)

    @app.post("/w")
    def write():
        raise errors.CommitOutcomeUnknown("the outcome of operation " + "f" * 32 + " is unknown", "f" * 32,
                                          detail="host 10.0.0.5 port 5432")

    response = app.test_client().post("/w")
    body = response.get_json()
    assert response.status_code == 502 and "Retry-After" not in response.headers
    assert body == {"code": 1007, "type": "ConnectionFailedException",
                    "message": "the outcome of operation " + "f" * 32 + " is unknown"}


def test_the_api_answers_a_failed_store_with_503_and_retry_after():
    """Nothing was changed and a retry may succeed (the database is back, or a standby was promoted)."""
    app = Flask("t")
    register_error_handlers(app)

    @app.post("/w")
    def write():
        raise errors.StoreUnavailable("The metadata database failed; nothing was changed")

    response = app.test_client().post("/w")
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert response.get_json()["type"] == "RuntimeException"


def test_a_check_on_sqlite_is_off():
    assert not CommitCheck(create_engine("sqlite://")).enabled


@pytest.mark.parametrize("failure", [
    errors.StoreUnavailable("The metadata database failed; nothing was changed"),
    errors.StoreUnavailable("The metadata database failed during the commit; nothing was changed (operation "
                            + "g" * 32 + " did not commit: checked)", operation="g" * 32),
    errors.CommitOutcomeUnknown("the outcome of operation " + "h" * 32 + " is unknown", "h" * 32),
    errors.ScopeBusy("A row this change needs stayed locked ...; nothing was changed, retry later"),
])
def test_a_journalled_store_step_that_failed_after_the_engine_call_does_not_say_nothing_was_changed(failure):
    """The store step's failure is quoted in the journal's 502 'pending operation N' answer; the engine
    has the change by then, so the error's own conclusion ("nothing was changed, retry") must not be."""
    why = journal.store_failure(failure)
    assert "nothing was changed" not in why and "retry" not in why
    operation = getattr(failure, "operation", None)
    assert operation is None or operation in why


@pytest.mark.parametrize(("error", "lost"), [
    (LOST, True),  # a COMMIT (no statement named) whose connection died: invalidated
    (OperationalError("SELECT gm_claim_scope(...)", {}, pymysql.err.OperationalError(2013, "Lost connection")), True),
    (OperationalError(None, None, psycopg.OperationalError("connection refused")), False),  # never connected
    (OperationalError(None, None, pymysql.err.OperationalError(2003, "Can't connect")), False),
    (OperationalError("DELETE", {}, pymysql.err.OperationalError(1213, "Deadlock found")), False),  # answered
])
def test_a_lost_answer_is_an_indefinite_failure_on_an_established_connection(error, lost):
    """What the claim's grant and release send again or undo on a new connection (lease_grant.py,
    lease_claim.py): never after a failure to connect, which a new connection would only repeat."""
    assert lost_answer(error) is lost
