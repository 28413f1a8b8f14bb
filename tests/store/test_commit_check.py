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
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

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
