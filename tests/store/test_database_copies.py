"""A fresh migrated test database (tests/support/databases.py: a copy of one migrated per process) is
what alembic's migrations make: the same tables (columns, keys, foreign keys, options), stored routines
and rows, on PostgreSQL and MariaDB."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.pool import NullPool

from tests.conftest import require_backend
from tests.support.databases import _migrate, fresh_database


def objects(conn: Connection, backend: str) -> dict[str, Any]:
    """Everything the migrations make in the connection's database, as the server shows it."""
    if backend == "mysql":
        tables = conn.execute(text("SELECT table_name FROM information_schema.tables "
                                   "WHERE table_schema = DATABASE() ORDER BY table_name")).scalars().all()
        routines = conn.execute(text("SELECT routine_type, routine_name FROM information_schema.routines "
                                     "WHERE routine_schema = DATABASE() ORDER BY routine_name")).all()
        return {
            "tables": {t: conn.execute(text(f"SHOW CREATE TABLE `{t}`")).one()[1] for t in tables},
            "routines": {name: tuple(conn.execute(text(f"SHOW CREATE {kind} `{name}`")).one()[1:4])
                         for kind, name in routines},
            "rows": {t: sorted(map(tuple, conn.execute(text(f"SELECT * FROM `{t}`")).all())) for t in tables},
        }
    tables = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                               "ORDER BY tablename")).scalars().all()
    return {
        "columns": conn.execute(text(
            "SELECT table_name, column_name, data_type, is_nullable, column_default FROM "
            "information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name")).all(),
        "indexes": conn.execute(text("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' "
                                     "ORDER BY indexdef")).scalars().all(),
        "constraints": conn.execute(text(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2")).all(),
        "functions": conn.execute(text(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE pronamespace = 'public'::regnamespace "
            "ORDER BY proname")).scalars().all(),
        "sequences": conn.execute(text("SELECT sequencename, last_value FROM pg_sequences "
                                       "WHERE schemaname = 'public' ORDER BY 1")).all(),
        "rows": {t: sorted(map(tuple, conn.execute(text(f'SELECT * FROM "{t}"')).all())) for t in tables},
    }


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_a_fresh_database_is_what_the_migrations_make(backend, tmp_path):
    require_backend(backend)
    with fresh_database(backend, tmp_path) as copied, fresh_database(backend, tmp_path, migrate=False) as migrated:
        _migrate(migrated)
        shown = {}
        for which, url in (("copy", copied), ("migrated", migrated)):
            engine = create_engine(url, poolclass=NullPool)
            with engine.connect() as conn:
                shown[which] = objects(conn, backend)
            engine.dispose()
    assert shown["copy"]["tables" if backend == "mysql" else "columns"], "nothing was migrated"
    assert shown["copy"] == shown["migrated"]
