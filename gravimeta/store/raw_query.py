"""One hot read statement run straight on the DBAPI cursor of a pooled connection.

For the load-table request (docs/benchmarks.md, reads): SQLAlchemy's execution context and result
processing cost the worker about 100 µs per statement, more than PostgreSQL takes to answer it, and a
load is one statement. The statement is still built with SQLAlchemy and compiled once per dialect;
only its execution skips the engine's machinery. Rows come back as the driver's tuples, so callers
convert values themselves (JSON text, 0/1 booleans on MySQL and SQLite).

Outside any transaction: one statement reads one consistent state on every dialect. On PostgreSQL
the connection is switched to autocommit (no BEGIN, no ROLLBACK: one round trip; psycopg flips the
flag without a round trip); MySQL keeps its implicit transaction (pymysql would send SET AUTOCOMMIT
each way); SQLite runs outside BEGIN already (the store issues its own BEGINs).

A driver error is re-raised as SQLAlchemy's DBAPIError, so the store translates it as it does every
other; a lost connection is invalidated and the pool's idle connections are closed (opened before
the failure, they are most likely dead too), as SQLAlchemy does on a disconnect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Select


class RawQuery:
    """A select compiled once per dialect, run with `rows(engine, params)`."""

    def __init__(self, statement: Select[Any]):
        self.statement = statement
        self._compiled: dict[str, tuple[str, Sequence[str] | None]] = {}

    def _compile(self, dialect: Dialect) -> tuple[str, Sequence[str] | None]:
        """The SQL text in the driver's paramstyle and, for positional styles, the parameter order."""
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self.statement.compile(dialect=dialect)
            found = compiled.string, (compiled.positiontup if compiled.positional else None)
            self._compiled[dialect.name] = found
        return found

    def rows(self, engine: Engine, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        sql, order = self._compile(engine.dialect)
        args: Any = tuple(params[name] for name in order) if order is not None else dict(params)
        autocommit = engine.dialect.name == "postgresql"
        with engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            cursor = None
            try:
                if autocommit:
                    driver.autocommit = True
                cursor = driver.cursor()
                cursor.execute(sql, args)
                return list(cursor.fetchall())
            except engine.dialect.loaded_dbapi.Error as exc:
                lost = engine.dialect.is_disconnect(exc, driver, cursor)
                if lost:
                    conn.invalidate(exc)
                    engine.pool.dispose()  # the idle ones were opened before the failure: close them too
                raise DBAPIError.instance(sql, args, exc, engine.dialect.loaded_dbapi.Error,
                                          connection_invalidated=lost, dialect=engine.dialect) from exc
            finally:
                if cursor is not None:
                    cursor.close()
                if autocommit and not conn.invalidated:
                    driver.autocommit = False
