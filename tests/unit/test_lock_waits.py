"""The pieces of bounded lock waits that need no database (gravimeta/store/lock_waits.py, config);
tests/ha/test_bounded_waits.py drives the real waits on PostgreSQL and MariaDB."""

from __future__ import annotations

from sqlalchemy.exc import InternalError, OperationalError

from gravimeta.config import load_settings
from gravimeta.store import lock_waits


class _PgError(Exception):
    def __init__(self, sqlstate: str):
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def test_the_idle_transaction_timeout_defaults_to_four_lease_ttls_and_zero_turns_it_off():
    assert load_settings(environ={"GRAVIMETA_LEASE_TTL_MS": "2000"}).idle_transaction_timeout() == 8000
    assert load_settings(environ={"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "0"}).idle_transaction_timeout() == 0
    assert load_settings(environ={"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "1500"}).idle_transaction_timeout() == 1500


def test_postgresql_never_gets_a_zero_lock_timeout_which_would_mean_no_limit():
    assert lock_waits.pg_lock_timeout(0) == "1ms"
    assert lock_waits.pg_lock_timeout(0.0004) == "1ms"
    assert lock_waits.pg_lock_timeout(1.25) == "1250ms"


def test_mariadb_gets_whole_seconds_of_at_least_one_for_innodb_and_the_exact_bound_as_statement_time():
    prefix = lock_waits.mysql_prefix(lock_waits.deadline_in(0.25))
    assert prefix.startswith("SET STATEMENT max_statement_time=0.2") and prefix.endswith(
        ", innodb_lock_wait_timeout=1 FOR ")


def test_a_lock_timeout_and_an_ended_session_are_told_apart():
    assert lock_waits.timed_out(OperationalError("x", {}, _PgError("55P03")))
    assert lock_waits.timed_out(OperationalError("x", {}, Exception(1969, "max_statement_time exceeded")))
    assert not lock_waits.timed_out(OperationalError("x", {}, _PgError("40P01")))
    assert lock_waits.session_ended(InternalError("x", {}, _PgError("25P03")))
    assert lock_waits.session_ended(OperationalError("x", {}, Exception(4031, "disconnected for inactivity")))
    assert not lock_waits.session_ended(OperationalError("x", {}, _PgError("55P03")))
