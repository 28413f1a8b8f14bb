"""Support for races between two replicas driven by failpoints: requests in background threads, and a
bounded wait until a request has either finished or is waiting for a row lock in the database (the
only two things it can do while the other replica is paused inside its transaction)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool


@dataclass
class Request:
    """One HTTP request running in a thread; `status` and `body` once it is done."""

    method: str
    url: str
    body: Any = None
    status: int | None = None
    json: Any = None
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)
    started: float = field(init=False)
    #: seconds from the start until the answer (None while it runs): for failure messages
    took: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            response = requests.request(self.method, self.url, json=self.body, timeout=120)
            self.status, self.json = response.status_code, response.json()
        except BaseException as exc:  # noqa: BLE001 - reported by wait()
            self.error = exc
        finally:
            self.took = time.monotonic() - self.started

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self, timeout: float = 60.0) -> Request:
        self.thread.join(timeout)
        assert self.done, f"{self.method} {self.url} did not finish within {timeout}s"
        assert self.error is None, self.error
        return self


def lock_waiters(store_url: str) -> int:
    """Sessions of the store's database that wait for a row lock right now (PostgreSQL, MariaDB)."""
    url = make_url(store_url)
    engine = create_engine(store_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            if url.get_backend_name() == "postgresql":
                query = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                         "AND wait_event_type = 'Lock'")
            else:
                query = ("SELECT count(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p "
                         "ON p.id = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()")
            return int(conn.execute(text(query)).scalar_one())
    finally:
        engine.dispose()


def finished_or_blocked(request: Request, store_url: str, timeout: float = 30.0) -> str:
    """Wait (bounded) until `request` has finished ("finished") or waits for a row lock ("blocked")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if request.done:
            return "finished"
        if lock_waiters(store_url) > 0:
            return "blocked"
        time.sleep(0.02)
    raise AssertionError(f"{request.method} {request.url} neither finished nor waited for a lock in {timeout}s")


def sql_runner(store_url: str) -> Any:
    """run(statement, **params) -> rows as tuples, each call on a connection of its own."""

    def run(statement: str, **params: Any) -> list[tuple[Any, ...]]:
        engine = create_engine(store_url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(text(statement), params)]
        finally:
            engine.dispose()

    return run
