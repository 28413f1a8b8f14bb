"""Settings a server publishes in the shared database for the tools that must work as it does
(gm_server_setting, alembic/versions/0008). Today one: `sqlite_catalog_root`, the directory the `sqlite`
provider's catalog files live in. `gravimeta repair` judges engines by what it finds there, so it compares
its own root with the servers' before it does anything (docs/consistency.md §4)."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Engine, MetaData, String, Table, Text, insert, select, update
from sqlalchemy.exc import IntegrityError

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.store.database import write_session

SQLITE_CATALOG_ROOT = "sqlite_catalog_root"

server_setting = Table(
    "gm_server_setting", MetaData(),
    Column("name", String(100), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def read(engine: Engine, name: str) -> str | None:
    with engine.connect() as conn:
        return conn.scalar(select(server_setting.c.value).where(server_setting.c.name == name))


def publish(engine: Engine, name: str, value: str) -> str | None:
    """Record `value` for `name`; returns the value recorded before (None: there was none). One write
    transaction (BEGIN IMMEDIATE on SQLite: a read-then-write there must not upgrade its lock)."""
    for _ in range(3):  # two servers starting at once: one inserts, the other updates
        try:
            with write_session(engine) as s:
                previous = s.scalar(select(server_setting.c.value).where(server_setting.c.name == name))
                now = db_now(dialect_of(engine))
                if previous is not None:
                    s.execute(update(server_setting).where(server_setting.c.name == name).values(value=value, updated_at=now))
                else:
                    s.execute(insert(server_setting).values(name=name, value=value, updated_at=now))
                return previous
        except IntegrityError:
            continue
    raise RuntimeError(f"could not record server setting {name}")
