"""Bounded lock waits: no statement of the claim layer waits on a row lock longer than its caller has.

Why. A holder that passed its fence guard holds its claim row FOR UPDATE until its store transaction
ends. If it then stalls (GC pause, SIGSTOP, a network stall), the database keeps that transaction, and
the row lock, until TCP keepalive notices, about two hours. Without a bound, every statement that needs
that row waits as long: a related claimant's steal (past its acquire timeout, the 503 ScopeBusy promise),
the reclaimer, a renewal. So every statement a request or the heartbeat sends while claiming, guarding,
renewing, releasing or reclaiming carries a lock-wait bound derived from the time its caller has left
(docs/ha.md, "Bounded waits"), and a statement that runs out of it fails with a timeout error that its
caller turns into "busy" (a claim attempt), FenceLost (a guard), or a logged retry (the heartbeat).
The server also ends a stalled holder's idle transaction itself (database.py, idle timeout).

How, per database, without an extra round trip:
- PostgreSQL: `set_config('lock_timeout', '<ms>ms', true)`, the SET LOCAL of a function, evaluated inside
  the bounded statement itself, before it can wait: as a WHERE term (`pg_term`) of a SELECT ... FOR UPDATE,
  UPDATE or DELETE (an InitPlan, evaluated before the LockRows/ModifyTable node takes any row lock), or around an argument of a function call (`pg_argument`: arguments are evaluated before
  the call). It lasts until the end of the transaction (one statement in autocommit), so it also bounds
  the statements after it, and nothing is left on the pooled connection.
- MariaDB: `SET STATEMENT max_statement_time=<s>, innodb_lock_wait_timeout=<whole s, min 1> FOR <stmt>`,
  put in front of each bounded statement by a cursor hook (`install`), from the deadline given as the
  execution option DEADLINE (on a statement or on a connection: then on every later statement of that
  checkout). max_statement_time gives the sub-second bound (it also ends a lock wait);
  innodb_lock_wait_timeout is the whole-second backstop. A per-statement setting is reset by the server
  after the statement, so nothing leaks into the pool.
- SQLite has no row locks; its writers wait on busy_timeout (database.py), left as it is.
"""

from __future__ import annotations

import math
import time
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, event, func, literal, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import ColumnElement

from gravimeta.error_chain import error_chain

#: the execution option naming a monotonic deadline for the lock waits of a statement or a connection
DEADLINE = "gravimeta_lock_deadline"
#: the shortest bound ever sent (0 would mean "no limit" to PostgreSQL)
MIN_WAIT_S = 0.001
#: the bound of the heartbeat's background statements (reclaimer, node registry) and of a release:
#: none of them may hold up the work behind them, and each is retried (or expires) anyway
BACKGROUND_WAIT_S = 1.0

# PostgreSQL: lock_not_available (lock_timeout), query_canceled (statement_timeout);
# MariaDB: lock wait timeout, max_statement_time exceeded; MySQL: max_execution_time exceeded
_TIMEOUT_PG = {"55P03", "57014"}
_TIMEOUT_MYSQL = {1205, 1969, 3024}
# the server ended the session: PostgreSQL idle_in_transaction_session_timeout, admin shutdown/terminate;
# MariaDB: disconnected for inactivity (idle_transaction_timeout), server gone, lost connection
_ENDED_PG = {"25P03", "57P01"}
_ENDED_MYSQL = {4031, 2006, 2013}
_BOUNDED_VERBS = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CALL")  # CALL: the claim procedure

S = TypeVar("S")


def deadline_in(seconds: float) -> float:
    """The monotonic deadline `seconds` from now."""
    return time.monotonic() + max(MIN_WAIT_S, seconds)


def left(deadline: float) -> float:
    """Seconds left until `deadline`, at least MIN_WAIT_S."""
    return max(MIN_WAIT_S, deadline - time.monotonic())


def pg_lock_timeout(seconds: float) -> str:
    """PostgreSQL's lock_timeout value for a wait of at most `seconds` (at least 1 ms)."""
    return f"{max(1, math.ceil(seconds * 1000))}ms"


def pg_term(seconds: float) -> ColumnElement[bool]:
    """A WHERE term that sets lock_timeout for the rest of the transaction before the statement locks a
    row (always true). An uncorrelated scalar subquery: PostgreSQL runs it once, as an InitPlan tested by
    a One-Time Filter below the LockRows/ModifyTable node, so also when no row matches."""
    return select(func.set_config("lock_timeout", literal(pg_lock_timeout(seconds)), True)).scalar_subquery().isnot(None)


def pg_argument(sql_expression: str, parameter: str = "gm_lock_timeout") -> str:
    """Wrap the SQL text of one argument of a function call so that evaluating it first sets
    lock_timeout to the bound parameter `:<parameter>` (a pg_lock_timeout value)."""
    return (f"CASE WHEN set_config('lock_timeout', CAST(:{parameter} AS text), true) IS NOT NULL "
            f"THEN {sql_expression} END")


def bounded(stmt: S, dialect: str, seconds: float) -> S:
    """`stmt` (a SELECT ... FOR UPDATE, UPDATE or DELETE) with its lock waits bounded by `seconds`:
    PostgreSQL through a WHERE term (also bounding the rest of its transaction), MariaDB/MySQL through
    the per-statement setting. SQLite: unchanged."""
    if dialect == "postgresql":
        return stmt.where(pg_term(seconds))  # type: ignore[attr-defined,no-any-return]
    if dialect == "mysql":
        return stmt.execution_options(**{DEADLINE: deadline_in(seconds)})  # type: ignore[attr-defined,no-any-return]
    return stmt


def mysql_prefix(deadline: float) -> str:
    """The `SET STATEMENT ... FOR ` that bounds one MariaDB statement by `deadline`."""
    seconds = left(deadline)
    return (f"SET STATEMENT max_statement_time={seconds:.3f}, "
            f"innodb_lock_wait_timeout={max(1, math.ceil(seconds))} FOR ")


def install(engine: Engine) -> None:
    """MariaDB/MySQL: put the per-statement bound in front of every statement executed with the
    DEADLINE option (create_store_engine calls this). Other databases need no hook."""
    if engine.dialect.name not in ("mysql", "mariadb"):
        return

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _bound(conn: Any, _cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> tuple[str, Any]:
        options = context.execution_options if context is not None else conn.get_execution_options()
        deadline = options.get(DEADLINE)
        if deadline is None or executemany or not statement.lstrip()[:6].upper().startswith(_BOUNDED_VERBS):
            return statement, parameters
        if not getattr(conn.dialect, "is_mariadb", False):  # known once connected; MySQL has no SET STATEMENT
            return statement, parameters
        return mysql_prefix(deadline) + statement, parameters


def timed_out(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is a statement that ran out of its lock-wait bound."""
    return caused_by(exc, _TIMEOUT_PG, _TIMEOUT_MYSQL)


def session_ended(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) says the server ended our session (database.py's
    idle-transaction timeout, among others): its transaction was rolled back."""
    return caused_by(exc, _ENDED_PG, _ENDED_MYSQL)


def caused_by(exc: BaseException, pg_states: set[str], mysql_codes: set[int]) -> bool:
    """Whether `exc`, or an error it was raised from or while handling (up to 10 links), is a database
    error with one of these PostgreSQL SQLSTATEs or MariaDB/MySQL error codes. The chain matters: on
    MySQL a deadlock or timeout rolls the transaction back, and the ROLLBACK TO SAVEPOINT issued while
    unwinding then fails with 'SAVEPOINT does not exist', hiding the original error."""
    for seen in error_chain(exc, limit=10):
        if isinstance(seen, DBAPIError):
            orig = seen.orig
            state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
            args: tuple[Any, ...] = getattr(orig, "args", ())
            if state in pg_states or (args and args[0] in mysql_codes):
                return True
    return False


def bound_connection(conn: Connection, dialect: str, seconds: float) -> None:
    """MariaDB/MySQL: bound every later statement of this checkout of `conn` by `seconds` from now
    (PostgreSQL's bound already lasts to the end of the transaction; SQLite has none)."""
    if dialect == "mysql":
        conn.execution_options(**{DEADLINE: deadline_in(seconds)})  # in place on a Connection
