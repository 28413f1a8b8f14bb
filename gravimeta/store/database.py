"""Engine construction per dialect, and the two kinds of transaction the store uses.

- write(): READ COMMITTED on PostgreSQL/MySQL (row locks give the ordering), BEGIN IMMEDIATE on SQLite
  (one writer at a time across processes, so a read-check-write cannot interleave).
- snapshot(): REPEATABLE READ on PostgreSQL/MySQL, one deferred read transaction on SQLite (WAL),
  so several queries see one consistent state of the tree.

Engines must be created after a fork (gunicorn post_fork): pooled connections never cross processes.

`idle_transaction_timeout_ms` (gravimeta.store.idle-transaction-timeout-ms, docs/ha.md "Bounded waits"):
the database server itself ends a session of ours that sits idle inside a transaction that long
(PostgreSQL idle_in_transaction_session_timeout, sent in the startup packet: no round trip; MariaDB
idle_transaction_timeout, whole seconds, set once per new connection). A holder frozen inside its fenced
store transaction (GC pause, SIGSTOP, network stall) then frees its rows after this timeout instead of
after TCP keepalive (hours). The process finds its connection gone on its next statement: the store
turns that into StoreUnavailable (503), and the pool replaces the connection. Lock waits of the claim
layer are bounded per statement (lock_waits.py; the hook is installed here).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.orm import Session

from gravimeta.failpoints import disabled_for_test
from gravimeta.store import lock_waits


def create_store_engine(url: str, idle_transaction_timeout_ms: int = 0, **kwargs: Any) -> Engine:
    """Create an engine with the per-dialect settings the store relies on; `idle_transaction_timeout_ms`
    > 0: the server ends our sessions idle in a transaction that long (module docstring)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)
        _configure_sqlite(engine, in_memory=parsed.database in (None, "", ":memory:"))
        return engine
    if backend == "postgresql" and parsed.drivername == "postgresql":
        url = str(parsed.set(drivername="postgresql+psycopg"))
    if backend in ("mysql", "mariadb") and "+" not in parsed.drivername:
        url = str(parsed.set(drivername=f"{backend}+pymysql"))
    if backend in ("mysql", "mariadb"):
        kwargs.setdefault("connect_args", {}).setdefault("charset", "utf8mb4")
    if backend == "postgresql" and idle_transaction_timeout_ms > 0:
        connect_args = kwargs.setdefault("connect_args", {})
        option = f"-c idle_in_transaction_session_timeout={int(idle_transaction_timeout_ms)}"
        connect_args["options"] = f"{connect_args.get('options', '')} {option}".strip()
    # No pool_pre_ping: it cost one round trip on every checkout (4-6 per structural request). A
    # connection the database dropped fails its first statement instead; SQLAlchemy then invalidates
    # the whole pool (every connection opened before the failure is replaced on its next checkout),
    # the request gets StoreUnavailable (503), and later requests reconnect: no restart needed
    # (tests/chaos/test_database_outage.py). pool_recycle replaces idle connections before a server or
    # proxy idle timeout can cut them.
    kwargs.setdefault("pool_recycle", 1800)
    engine = create_engine(url, isolation_level="READ COMMITTED", **kwargs)
    lock_waits.install(engine)
    if backend in ("mysql", "mariadb") and idle_transaction_timeout_ms > 0:
        _end_idle_mariadb_transactions(engine, idle_transaction_timeout_ms)
    return engine


def _end_idle_mariadb_transactions(engine: Engine, timeout_ms: int) -> None:
    seconds = max(1, -(-int(timeout_ms) // 1000))  # whole seconds, rounded up, at least 1

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        if "mariadb" not in str(getattr(dbapi_connection, "server_version", "")).lower():
            return  # MySQL has no such variable (its wait_timeout counts idle sessions, not transactions)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"SET SESSION idle_transaction_timeout = {seconds}")
        cursor.close()


def _configure_sqlite(engine: Engine, in_memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        if mode == _NO_BEGIN:  # TEST-ONLY (no_snapshot): stay in autocommit, one transaction per statement
            return
        conn.exec_driver_sql(f"BEGIN {mode}")




_NO_BEGIN = "NONE"


def dialect_name(engine: Engine) -> str:
    name = engine.dialect.name
    return "mysql" if name == "mariadb" else name


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A write transaction: commits when the block ends normally, rolls back on any exception."""
    options: dict[str, Any] = {"sqlite_begin": "IMMEDIATE"} if engine.dialect.name == "sqlite" else {}
    with engine.connect() as conn:
        conn = conn.execution_options(**options) if options else conn
        with Session(bind=conn, expire_on_commit=False) as session, session.begin(), writing():
            yield session


_writing: ContextVar[bool] = ContextVar("gravimeta_in_write_transaction", default=False)


@contextmanager
def writing() -> Iterator[None]:
    """Marks the code run inside a store write transaction (write_session, EntityStore.write), so that
    what must never run there can tell: an engine call (on SQLite the transaction holds every
    replica's writes while it waits; gravimeta/dispatch/connector_cache.py)."""
    token = _writing.set(True)
    try:
        yield
    finally:
        _writing.reset(token)


def in_write_transaction() -> bool:
    return _writing.get()


@contextmanager
def snapshot_session(engine: Engine) -> Iterator[Session]:
    """A read-only transaction in which every query sees the same snapshot."""
    with engine.connect() as conn:
        if disabled_for_test("no_snapshot"):  # TEST-ONLY: every statement sees the latest commit
            conn = conn.execution_options(sqlite_begin=_NO_BEGIN)  # READ COMMITTED on PG/MySQL
        elif engine.dialect.name != "sqlite":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        # Ends with COMMIT, not ROLLBACK: the same for a transaction that wrote nothing, but psycopg
        # drops every prepared statement of the connection after a ROLLBACK (one more round trip,
        # DEALLOCATE ALL, and every statement parsed and planned afresh).
        with Session(bind=conn) as session, session.begin():
            yield session
