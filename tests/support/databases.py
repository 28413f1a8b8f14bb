"""Real databases for tests: a fresh, migrated database per use on SQLite, PostgreSQL or MariaDB.

PostgreSQL and MariaDB are the machine's servers at 127.0.0.1 (see .ci/run); each test database gets
a unique name and is dropped afterwards, so runs never see each other's data.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import alembic_config, migration_connection, upgrade

PG_ADMIN_URL = os.environ.get("GRAVIMETA_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_ADMIN_URL = os.environ.get("GRAVIMETA_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
BACKENDS = ("sqlite", "postgresql", "mysql")


def _admin_url(backend: str) -> str:
    return {"postgresql": PG_ADMIN_URL, "mysql": MYSQL_ADMIN_URL}[backend]


def backend_available(backend: str) -> bool:
    if backend == "sqlite":
        return True
    try:
        engine = create_engine(_admin_url(backend))
        with engine.connect():
            pass
        engine.dispose()
        return True
    except Exception:
        return False


@contextmanager
def fresh_database(backend: str, tmp_dir: Path, migrate: bool = True) -> Iterator[str]:
    """Yield the URL of a new, empty (optionally migrated) database; drop it afterwards."""
    name = f"gm_test_{uuid.uuid4().hex[:12]}"
    if backend == "sqlite":
        url = f"sqlite:///{tmp_dir / (name + '.db')}"
        if migrate:
            _migrate(url)
        yield url
        return
    admin_url = make_url(_admin_url(backend))
    # no pool: a connection must not outlive a server restart that a chaos test performs meanwhile
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        if backend == "mysql":
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"))
        else:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.set(database=name).render_as_string(hide_password=False)
    try:
        if migrate:
            _migrate(url)
        yield url
    finally:
        with admin.connect() as conn:
            if backend == "postgresql":
                conn.execute(text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n AND pid <> pg_backend_pid()"
                ), {"n": name})
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            else:
                conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


def _migrate(url: str) -> None:
    engine = create_store_engine(url)
    upgrade(engine)
    engine.dispose()


def downgrade(engine: Engine, revision: str) -> None:
    """alembic downgrade of the engine's database to `revision` (the migration tests' way back;
    gravimeta itself never downgrades)."""
    config = alembic_config(engine)
    with migration_connection(engine) as conn:  # on SQLite with foreign keys off, as upgrade() does
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
