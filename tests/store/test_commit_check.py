"""The look-up behind a lost COMMIT's answer (gravimeta/store/commit_check.py), on PostgreSQL and MariaDB.

The dangerous interleaving: the old session has written its marker and its COMMIT is still on its way
(here: the session sits idle in its transaction and commits after the look). A look that takes the
missing marker as "did not commit" answers "nothing was changed" for a transaction that then commits;
the check ends the old session first, so that COMMIT fails. GRAVIMETA_HA_DISABLE=commit_session_end
removes that step and the first test fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from gravimeta import errors
from gravimeta.entities import Metalake
from gravimeta.store import EntityStore
from gravimeta.store.commit_check import CommitCheck
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.support.databases import MYSQL_ADMIN_URL, PG_ADMIN_URL, fresh_database


@pytest.fixture(params=["postgresql", "mysql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        engine = create_store_engine(url)
        yield engine
        engine.dispose()


def session_id(conn: Connection) -> int:
    sql = "SELECT pg_backend_pid()" if conn.dialect.name == "postgresql" else "SELECT CONNECTION_ID()"
    return int(conn.scalar(text(sql)))


def write_marker(conn: Connection) -> str:
    op_id = uuid.uuid4().hex
    conn.execute(text("INSERT INTO gm_write_marker (op_id, created_at) VALUES (:op, CURRENT_TIMESTAMP)"), {"op": op_id})
    return op_id


def marked(engine: Engine, op_id: str) -> bool:
    with engine.connect() as conn:
        return conn.scalar(text("SELECT count(*) FROM gm_write_marker WHERE op_id = :op"), {"op": op_id}) == 1


def test_a_missing_marker_means_not_committed_only_once_the_old_session_can_no_longer_commit(engine):
    check = CommitCheck(engine)
    old = engine.connect()
    try:
        sid = session_id(old)
        op_id = write_marker(old)  # its transaction is open: the COMMIT is still "on its way"
        assert check.look(op_id, sid) is False
        with pytest.raises(DBAPIError):
            old.commit()  # the look ended the session: this COMMIT cannot make the answer untrue
    finally:
        old.invalidate()
        old.close()
    assert not marked(engine, op_id)


def test_a_present_marker_means_committed_and_the_old_session_is_left_alone(engine):
    check = CommitCheck(engine)
    with engine.connect() as old:
        sid = session_id(old)
        op_id = write_marker(old)
        old.commit()
        assert check.look(op_id, sid) is True
        assert old.scalar(text("SELECT 1")) == 1


def test_a_session_the_check_may_not_end_leaves_the_outcome_unknown(engine):
    """The old session id names a session of another database (as a reused id would): the check does
    not end it, waits for it until its bound, and answers None (502), never 'not committed'."""
    check = CommitCheck(engine, timeout_s=0.5)
    admin_url = PG_ADMIN_URL if engine.dialect.name == "postgresql" else MYSQL_ADMIN_URL
    other = create_engine(admin_url, poolclass=NullPool)
    try:
        with other.connect() as elsewhere:
            assert check.look(uuid.uuid4().hex, session_id(elsewhere)) is None
            assert elsewhere.scalar(text("SELECT 1")) == 1
    finally:
        other.dispose()


def test_old_markers_are_collected_and_recent_ones_kept(engine):
    keep = CommitCheck(engine, gc_every=2)
    for _ in range(4):
        keep.run(lambda s: None)
    assert keep.count() == 4
    collect = CommitCheck(engine, retention_s=0, gc_every=1)
    collect.run(lambda s: None)
    assert collect.count() == 0


def test_every_store_write_records_its_marker(engine):
    store = EntityStore(engine)
    before = store.commits.count()
    store.create_metalake(Metalake(f"m{uuid.uuid4().hex[:8]}"), "u")
    assert store.commits.count() == before + 1


def test_sqlite_writes_no_marker(sqlite_url):
    engine = create_store_engine(sqlite_url)
    try:
        store = EntityStore(engine)
        store.create_metalake(Metalake("m"), "u")
        assert not store.commits.enabled
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT count(*) FROM gm_write_marker")) == 0
    finally:
        engine.dispose()



@pytest.mark.parametrize("when", ["before-commit", "in-transaction"])
def test_a_session_ended_by_the_server_answers_nothing_was_changed_and_is_checked_only_at_commit(engine, when):
    """The server ends the write's session. Before its COMMIT is sent (after the marker): the COMMIT fails
    on the client's side (MariaDB 2013 'Lost connection during query' or 2006 'server has gone away',
    PostgreSQL a closed connection or 57P01), which a COMMIT whose reply was lost also raises, so it is
    checked: marker absent, session gone, 503 'did not commit: checked'. Inside the transaction (a
    statement fails the same way before any COMMIT): definite, 503 'nothing was changed' without a check."""
    store = EntityStore(engine)
    store.commits.timeout_s = 2
    admin = create_engine(engine.url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    end = "SELECT pg_terminate_backend(:sid)" if engine.dialect.name == "postgresql" else "KILL CONNECTION :sid"
    checked: list[BaseException | None] = []
    settle = store.commits.settle

    def settle_and_note(op_id: str, session_id: int | None, lost: DBAPIError) -> None:
        checked.append(lost.orig)
        settle(op_id, session_id, lost)

    store.commits.settle = settle_and_note  # type: ignore[method-assign]

    def kill(session: Session) -> None:
        with admin.connect() as conn:
            conn.execute(text(end), {"sid": session_id(session.connection())})

    def work(session: Session) -> None:
        session.execute(text("INSERT INTO gm_server_setting (name, value, updated_at) "
                             "VALUES (:n, 'v', CURRENT_TIMESTAMP)"), {"n": name})
        if when == "before-commit":
            event.listen(session, "before_commit", kill)  # after the marker, before COMMIT is sent
        else:
            kill(session)

    name = uuid.uuid4().hex
    try:
        with pytest.raises(errors.StoreUnavailable) as raised:
            store.write(work)
    finally:
        admin.dispose()
    assert type(raised.value) is errors.StoreUnavailable and "nothing was changed" in raised.value.message
    if when == "before-commit":
        assert checked and "did not commit: checked" in raised.value.message, raised.value.message
    else:
        assert not checked, "a failure before COMMIT is definite: nothing to look up"
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM gm_server_setting WHERE name = :n"), {"n": name}) == 0
