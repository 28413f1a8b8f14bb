"""Truthful answers for a commit whose reply was lost.

COMMIT is the one statement whose failure can leave the outcome unknown: when the connection dies after
the server received it, the transaction may have committed or not, and the error does not say which (an
indefinite failure in Jepsen's terms; CockroachDB's AmbiguousResultError). Every other failure of a write
transaction is definite: a statement that failed before COMMIT was sent leaves an open transaction, which
the server rolls back when the session ends, and a COMMIT that the server answered with an error rolled
back. So only a COMMIT whose connection failed is checked; every other failure keeps its answer.

How a write transaction is checked (PostgreSQL, MariaDB/MySQL):
1. Just before COMMIT it inserts a row with a fresh operation id into gm_write_marker (one more statement
   per write transaction), and the store notes which server session runs it: PostgreSQL's backend pid
   (known from the connection's start, no round trip), MariaDB's CONNECTION_ID() (read once per pooled
   connection).
2. When the COMMIT fails because the connection failed, the server reads the marker from a new connection
   (all of it bounded by `timeout_s`, each connect and statement by timeouts of its own). Present: the
   transaction committed, and the write returns what it computed before the COMMIT (and the session's
   after_commit hooks run, as after an answered COMMIT: a lease claim's durable grant, its release).
3. Absent is not an answer yet: the old session may still commit (the COMMIT may still be on its way to
   it, or it waits for a disk flush). So the server ends the old session if it is still there
   (pg_terminate_backend, KILL CONNECTION: a session being ended finishes a commit it started, or rolls
   back) and waits until it is gone from pg_stat_activity / the processlist. A session leaves those lists
   only after its transaction ended (PostgreSQL aborts an exiting backend's open transaction before it
   clears its entry; MariaDB rolls back in the thread's cleanup before the thread leaves the processlist),
   and its commit was visible before that. Then the marker is read again: present, committed; absent,
   rolled back, and "nothing was changed" is true.
4. When it cannot connect, or the old session is still there at the deadline: CommitOutcomeUnknown (502)
   naming the operation id.

Identities. Presence is looked up by id alone, so a mistake can only make the check wait and answer 502,
never take a live session for gone: a live PostgreSQL pid or MariaDB connection id names one session
only. A PostgreSQL pid comes back only after the kernel's pid counter wraps; a MariaDB id only after a
server restart (which ended every old transaction). The end request also names the database and (on
PostgreSQL) the role, so it can only end a session of this store that reuses the old id.

SQLite: no marker, no check. The database is a file this process opens: there is no connection whose
reply can be lost, and a COMMIT that fails leaves the transaction rolled back (its journal).

Transactions that store writes join (a PostgreSQL advisory claim, committed by the coordinator): the first
write inserts the marker (`mark_joined`), and the claim commits with `commit_joined`, checked the same way.

Garbage: every `gc_every`-th checked commit of a process then deletes at most GC_BATCH markers older than
`retention_s` (database clock) in a statement of its own; each commit adds one marker, so the table holds
about what `retention_s` of writes leave. A marker is read only by the check of its own transaction,
seconds after it was written.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Engine,
    MetaData,
    String,
    Table,
    bindparam,
    create_engine,
    delete,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError, InterfaceError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from gravimeta import errors
from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.store.database import disabled_for_test, write_session

log = logging.getLogger(__name__)
T = TypeVar("T")

# created only by alembic/versions/0014_write_marker.py
write_marker = Table(
    "gm_write_marker", MetaData(),
    Column("op_id", String(32), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

TIMEOUT_S = 5.0
RETENTION_S = 900
GC_EVERY, GC_BATCH = 100, 200
_SESSION_ID = "gravimeta_session_id"  # in a pooled connection's info: its server session
_JOINED = "gravimeta_commit_check"  # in a joined transaction's Session.info: (check, operation id, session)

# A COMMIT the server answered with one of these errors is still indefinite: the server ended the session
# (PostgreSQL: admin/crash shutdown, terminated; MariaDB: shutdown, killed, idle timeout). Client-side
# errors (PostgreSQL: no SQLSTATE, or class 08; MySQL: 2000-2999) are indefinite too.
_ENDED_PG = {"57P01", "57P02", "57P03", "25P03"}
_ENDED_MYSQL = {1053, 1927, 4031}


def new_operation_id() -> str:
    return uuid.uuid4().hex


def indefinite(exc: DBAPIError) -> bool:
    """Whether a failed COMMIT may have committed: its connection failed before the server's answer
    arrived. A COMMIT the server answered with an error on a live session rolled back (definite)."""
    if exc.connection_invalidated or isinstance(exc, InterfaceError):
        return True
    orig = exc.orig
    if type(orig).__module__.startswith("psycopg"):
        state: str | None = getattr(orig, "sqlstate", None)
        return state is None or state.startswith("08") or state in _ENDED_PG
    args: tuple[Any, ...] = getattr(orig, "args", ())
    code = args[0] if args else None
    if type(orig).__module__.startswith("pymysql") and isinstance(code, int):
        return 2000 <= code < 3000 or code in _ENDED_MYSQL
    return True  # an error of unknown shape: looking is always safe


def lost_answer(exc: BaseException) -> bool:
    """Whether a statement or a COMMIT on an established connection failed before its answer came, so
    that it may have taken effect: indefinite, and not a failure to connect (whose error names no
    statement and invalidated no connection), after which a new connection is not worth trying at once."""
    return (isinstance(exc, DBAPIError) and (exc.statement is not None or exc.connection_invalidated)
            and indefinite(exc))


class CommitCheck:
    """Checked COMMITs of the store's write transactions on one engine (module docstring)."""

    def __init__(self, engine: Engine, timeout_s: float = TIMEOUT_S, retention_s: int = RETENTION_S,
                 gc_every: int = GC_EVERY):
        self.engine = engine
        self.dialect = dialect_of(engine)
        #: SQLite: no marker and no check (module docstring)
        self.enabled = self.dialect in ("postgresql", "mysql")
        self.timeout_s = timeout_s
        self.gc_every = gc_every
        self._lock = threading.Lock()
        self._commits = 0
        self._lookup_engine: Engine | None = None
        if not self.enabled:
            return
        self._insert = insert(write_marker).values(op_id=bindparam("op_id"), created_at=db_now(self.dialect))
        self._marked = select(write_marker.c.op_id).where(write_marker.c.op_id == bindparam("op_id"))
        old = write_marker.c.created_at < db_now_plus(self.dialect, -1000 * int(retention_s))
        if self.dialect == "postgresql":
            batch = select(write_marker.c.op_id).where(old).limit(GC_BATCH).with_for_update(skip_locked=True)
            self._gc = delete(write_marker).where(write_marker.c.op_id.in_(batch.scalar_subquery()))
            self._present = text("SELECT count(*) FROM pg_stat_activity WHERE pid = :sid")
            self._end = text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = :sid "
                             "AND usename = current_user AND datname = current_database()")
        else:
            self._gc = delete(write_marker).where(old).with_dialect_options(mysql_limit=GC_BATCH)
            self._present = text("SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = :sid")
            self._end = text("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = :sid AND DB = DATABASE()")
            self._kill = text("KILL CONNECTION :sid")

    # ------------------------------------------------------------------ a transaction of its own

    def run(self, body: Callable[[Session], T]) -> T:
        """`body(session)` in a new write transaction, then its COMMIT, checked when its connection fails.
        Returns what `body` returned once the transaction is known to have committed; raises
        StoreUnavailable when the check found that it did not, CommitOutcomeUnknown when it could not
        look. Other errors propagate as they are (the caller translates them)."""
        if not self.enabled:
            with write_session(self.engine) as session:
                return body(session)
        op_id = new_operation_id()
        with self.engine.connect() as conn, Session(bind=conn, expire_on_commit=False) as session:
            session.begin()
            result = body(session)
            session_id = self._mark(session, op_id)
            lost = _commit(session, conn)
        if lost is not None:
            self.settle(op_id, session_id, lost)
            _committed(session)
        self._collect_garbage()
        return result

    # ------------------------------------------------------------------ a transaction writes joined

    def mark_joined(self, session: Session) -> None:
        """Inside a transaction that store writes join (guard.joining), after a write: the first one
        inserts the marker; `commit_joined` then checks the transaction's COMMIT."""
        if self.enabled and _JOINED not in session.info:
            op_id = new_operation_id()
            session.info[_JOINED] = (self, op_id, self._mark(session, op_id))

    # ------------------------------------------------------------------ the check

    def _mark(self, session: Session, op_id: str) -> int | None:
        """Insert the marker last, after the ORM's pending changes (a failing flush stays a failure
        before COMMIT); return the server session that runs the transaction."""
        session.flush()
        conn = session.connection()
        conn.execute(self._insert, {"op_id": op_id})
        return self._session_id(conn)

    def _session_id(self, conn: Connection) -> int | None:
        known = conn.info.get(_SESSION_ID)
        if known is None:
            dbapi = conn.connection.dbapi_connection
            pid = getattr(getattr(dbapi, "info", None), "backend_pid", None) if self.dialect == "postgresql" else None
            known = pid if pid is not None else conn.scalar(
                text("SELECT pg_backend_pid()" if self.dialect == "postgresql" else "SELECT CONNECTION_ID()"))
            conn.info[_SESSION_ID] = known
        return int(known) if known is not None else None

    def settle(self, op_id: str, session_id: int | None, lost: DBAPIError) -> None:
        """The answer for a COMMIT whose connection failed: return when it committed, else raise."""
        found = self.look(op_id, session_id)
        if found:
            log.warning("the reply to the COMMIT of store operation %s was lost; the database shows it committed "
                        "(%s)", op_id, lost.orig)
            return
        if found is False:
            raise errors.StoreUnavailable(
                f"The metadata database failed during the commit; nothing was changed (operation {op_id} did "
                "not commit: checked)", detail=str(lost.orig), operation=op_id) from lost
        raise errors.CommitOutcomeUnknown(
            f"The connection to the metadata database failed during the commit of operation {op_id}, and "
            "the database could not be asked since whether it committed: the outcome is unknown; look "
            "before retrying", op_id, detail=str(lost.orig)) from lost

    def look(self, op_id: str, session_id: int | None) -> bool | None:
        """Whether the transaction that wrote marker `op_id` committed (steps 2-3 of the module
        docstring); None when that cannot be known within `timeout_s`."""
        deadline = time.monotonic() + self.timeout_s
        delay = 0.05
        while True:
            try:
                with self._lookup().connect() as conn:
                    if conn.scalar(self._marked, {"op_id": op_id}) is not None:
                        return True
                    if disabled_for_test("commit_session_end"):  # TEST-ONLY: absent taken as an answer
                        return False
                    if session_id is None or not self._ended(conn, session_id, deadline):
                        return None
                    return conn.scalar(self._marked, {"op_id": op_id}) is not None
            except DBAPIError as exc:
                log.info("cannot look for store operation %s yet: %s", op_id, exc.orig)
            if time.monotonic() + delay >= deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _ended(self, conn: Connection, session_id: int, deadline: float) -> bool:
        """End the old session if it is still there, and wait until it is gone (False at the deadline)."""
        delay, asked = 0.01, False
        while conn.scalar(self._present, {"sid": session_id}):
            if not asked:
                asked = True
                try:
                    ours = conn.execute(self._end, {"sid": session_id}).first() is not None
                    if ours and self.dialect == "mysql":
                        conn.execute(self._kill, {"sid": session_id})
                except DBAPIError as exc:  # gone meanwhile (MariaDB 1094), or not ours to end: wait for it
                    log.info("could not end the store session %s of a lost commit: %s", session_id, exc.orig)
            if time.monotonic() + delay >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        return True

    def _lookup(self) -> Engine:
        """An engine of single connections to the same database, each with short timeouts of its own:
        the check must not wait on a pool, nor on a network that swallows packets."""
        with self._lock:
            if self._lookup_engine is None:
                seconds = max(2, math.ceil(self.timeout_s / 2))  # libpq's connect_timeout is at least 2
                if self.dialect == "postgresql":
                    ms = int(self.timeout_s * 1000)
                    args: dict[str, Any] = {
                        "connect_timeout": seconds, "options": f"-c statement_timeout={ms}",
                        "tcp_user_timeout": ms, "keepalives": 1, "keepalives_idle": 1,
                        "keepalives_interval": 1, "keepalives_count": seconds,
                    }
                else:
                    args = {"connect_timeout": seconds, "read_timeout": seconds, "write_timeout": seconds,
                            "charset": "utf8mb4"}
                self._lookup_engine = create_engine(self.engine.url, poolclass=NullPool,
                                                    isolation_level="AUTOCOMMIT", connect_args=args)
            return self._lookup_engine

    # ------------------------------------------------------------------ garbage

    def _collect_garbage(self) -> None:
        with self._lock:
            self._commits += 1
            if self._commits % self.gc_every:
                return
        try:
            with self.engine.begin() as conn:
                conn.execute(self._gc)
        except DBAPIError as exc:  # the next turn deletes them; the request itself succeeded
            log.warning("could not delete old write markers: %s", exc.orig)

    def count(self) -> int:
        """How many markers the table holds (tests and diagnostics)."""
        with self.engine.connect() as conn:
            return int(conn.scalar(select(func.count()).select_from(write_marker)) or 0)


def commit_joined(session: Session) -> None:
    """Commit a transaction that store writes joined, checked as a write's own transaction is. Raises
    the DBAPIError of a COMMIT the server refused (definite: it rolled back)."""
    marked = session.info.get(_JOINED)
    if marked is None:
        session.commit()
        return
    check, op_id, session_id = marked
    lost = _commit(session, session.connection())
    if lost is not None:
        check.settle(op_id, session_id, lost)
        _committed(session)


def _committed(session: Session) -> None:
    """A COMMIT whose reply was lost, found committed: run the session's after_commit hooks, as its answer
    would have (a lease claim learns there that its grant is durable, or that the commit released it)."""
    session.dispatch.after_commit(session)


def _commit(session: Session, conn: Connection) -> DBAPIError | None:
    """COMMIT; the error when its connection failed (indefinite), else None. A definite error is raised."""
    try:
        session.commit()
    except DBAPIError as exc:
        if not indefinite(exc):
            raise
        with contextlib.suppress(Exception):  # never hand this session's connection out again
            conn.invalidate()
        return exc
    return None
