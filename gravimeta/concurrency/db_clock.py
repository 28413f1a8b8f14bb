"""The database's clock as SQL expressions, so that every lease decision uses one clock (docs/ha.md).

PostgreSQL uses clock_timestamp() (the time of the statement, not of the transaction start, which can
be long ago in a claim transaction that waited for its anchor row); MySQL/MariaDB UTC_TIMESTAMP(6)
(independent of the session time zone); SQLite strftime('%Y-%m-%d %H:%M:%f', 'now') as text, which
sorts like the time it names. Offsets are integers from the settings, never user input.
"""

from __future__ import annotations

from sqlalchemy import Engine, literal_column
from sqlalchemy.sql.elements import ColumnElement


def dialect_of(engine: Engine) -> str:
    name = engine.dialect.name
    return "mysql" if name == "mariadb" else name


def db_now(dialect: str) -> ColumnElement[object]:
    return db_now_plus(dialect, 0)


def db_now_plus(dialect: str, offset_ms: int) -> ColumnElement[object]:
    """The database's current time shifted by `offset_ms` (may be negative)."""
    ms = int(offset_ms)
    if dialect == "postgresql":
        sql = "clock_timestamp()" if ms == 0 else f"(clock_timestamp() + interval '{ms} milliseconds')"
    elif dialect == "mysql":
        sql = "UTC_TIMESTAMP(6)" if ms == 0 else f"(UTC_TIMESTAMP(6) + INTERVAL {ms * 1000} MICROSECOND)"
    elif dialect == "sqlite":
        modifier = "" if ms == 0 else f", '{ms / 1000:+.3f} seconds'"
        sql = f"strftime('%Y-%m-%d %H:%M:%f', 'now'{modifier})"
    else:
        raise ValueError(f"no database clock for dialect {dialect!r}")
    return literal_column(sql)
