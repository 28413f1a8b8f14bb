"""One catalog's connections to its engine: a SQLAlchemy pool of psycopg 3 or PyMySQL connections, bounded
by the catalog's pool properties and by each call's deadline.

At most `jdbc.pool.max-size` connections are open at once; a call waits for a free one at most
`jdbc.pool.max-wait-ms`, and never past its deadline (a semaphore taken with the shorter of the two: the
pool's own timeout is fixed when it is made, a deadline is per call). Connections are opened on first
use and kept (up to max-size); `jdbc.pool.min-size` is checked but opens nothing ahead. With
`jdbc.pool.test-on-borrow` (default true) a connection is pinged before it is handed out, so one that a
server restart broke is replaced instead of failing the call.

A call gets the DBAPI connection itself (`raw`): the connectors drive their transactions by hand (a
fenced PostgreSQL transaction, MySQL's named locks). A connection whose state is unknown after an error
(a transaction that may be open, a named lock that may be held) is invalidated, never handed out again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from connectors.jdbc.failures import Phase
from connectors.jdbc.settings import Settings
from gravimeta import errors

#: the longest a new connection may take to open, whatever the deadline (psycopg takes whole seconds)
CONNECT_TIMEOUT_S = 10


class Pool:
    def __init__(self, settings: Settings, translate: Callable[[Exception, Phase, str], errors.GravitinoError],
                 driver_errors: tuple[type[Exception], ...]):
        self.settings, self._translate, self._driver_errors = settings, translate, driver_errors
        self._slots = threading.BoundedSemaphore(settings.max_size)
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def _made(self) -> Engine:
        with self._lock:
            if self._engine is None:
                s = self.settings
                connect_args: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
                if s.kind == "postgresql":
                    connect_args["application_name"] = "gravimeta"
                else:
                    connect_args.update(autocommit=True, read_timeout=600, write_timeout=600)
                self._engine = create_engine(s.url, poolclass=QueuePool, pool_size=s.max_size, max_overflow=0,
                                             pool_timeout=s.max_wait_s, pool_pre_ping=s.ping,
                                             connect_args=connect_args)
            return self._engine

    @contextmanager
    def raw(self, deadline: float, what: str) -> Iterator[Any]:
        """A DBAPI connection for one call that must end by `deadline` (time.monotonic()). EngineUnreachable
        (nothing was sent) when no connection is free in time or none can be opened. The caller marks a
        connection unusable by calling `.invalidate()` on what it gets."""
        wait = min(self.settings.max_wait_s, deadline - time.monotonic())
        if wait <= 0 or not self._slots.acquire(timeout=wait):
            raise errors.EngineUnreachable(
                f"No connection to {self.settings.where()} was free for {what} within {max(wait, 0):.3g}s "
                f"(jdbc.pool.max-size {self.settings.max_size}); nothing was sent")
        try:
            try:
                connection = self._made().raw_connection()
            except self._driver_errors as exc:
                raise self._translate(exc, Phase.CONNECTING, what) from exc
            except Exception as exc:  # SQLAlchemy's own wrappers of the driver's connect errors
                cause = exc.__cause__ or getattr(exc, "orig", None)
                if isinstance(cause, self._driver_errors):
                    raise self._translate(cause, Phase.CONNECTING, what) from exc
                raise
            try:
                yield connection
            finally:
                connection.close()  # back to the pool, or closed for good once invalidated
        finally:
            self._slots.release()

    @contextmanager
    def probe(self) -> Iterator[None]:
        """A block after which the pool is closed again if it was made for it."""
        with self._lock:
            fresh = self._engine is None
        try:
            yield
        finally:
            if fresh:
                self.close()

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
