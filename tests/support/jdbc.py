"""Engines for the JDBC providers' tests, on the machine's PostgreSQL and MariaDB servers (the ones the store
tests use: tests/support/databases.py).

A `jdbc-postgresql` catalog is one database: each use gets a fresh, empty `gm_test_*` database, dropped
afterwards. A `jdbc-mysql` catalog spans the whole server, so each use gets a fresh `gm_test_*` database
as its fence database (`gravimeta.fence-database`), and `drop_mysql_databases` drops the databases a
test made as schemas (their names carry the test's suffix), so that a failed test leaves none behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.support.databases import MYSQL_ADMIN_URL, PG_ADMIN_URL, fresh_database

PROVIDERS = ("jdbc-postgresql", "jdbc-mysql")
#: the store backend each provider's engine runs on
BACKEND = {"jdbc-postgresql": "postgresql", "jdbc-mysql": "mysql"}


def _server(admin_url: str, default_port: int) -> tuple[str, int, str, str]:
    url = make_url(admin_url)
    return url.host or "127.0.0.1", url.port or default_port, url.username or "", url.password or ""


def postgresql_properties(database: str) -> dict[str, str]:
    host, port, user, password = _server(PG_ADMIN_URL, 5432)
    return {"jdbc-url": f"jdbc:postgresql://{host}:{port}/{database}", "jdbc-driver": "org.postgresql.Driver",
            "jdbc-database": database, "jdbc-user": user, "jdbc-password": password}


def mysql_properties(fence_database: str) -> dict[str, str]:
    host, port, user, password = _server(MYSQL_ADMIN_URL, 3306)
    return {"jdbc-url": f"jdbc:mysql://{host}:{port}", "jdbc-driver": "com.mysql.cj.jdbc.Driver",
            "jdbc-user": user, "jdbc-password": password, "gravimeta.fence-database": fence_database}


@contextmanager
def target(provider: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The catalog properties of a fresh engine for `provider`; its database is dropped afterwards."""
    with fresh_database(BACKEND[provider], tmp_path, migrate=False) as url:
        database = make_url(url).database or ""
        yield postgresql_properties(database) if provider == "jdbc-postgresql" else mysql_properties(database)


def drop_mysql_databases(suffix: str) -> None:
    """Drop every database of the MariaDB server whose name ends with `suffix` (a test's schemas)."""
    _drop_mysql_databases(lambda name: name.endswith(suffix))


def drop_mysql_databases_tagged(tag: str) -> None:
    """Drop every database of the MariaDB server whose name holds `tag` (a test session's schemas)."""
    _drop_mysql_databases(lambda name: tag in name)


def _drop_mysql_databases(chosen) -> None:  # noqa: ANN001
    admin = create_engine(MYSQL_ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            names = [row[0] for row in conn.execute(text("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"))]
            for name in names:
                if chosen(name) and not name.startswith("gm_test_"):
                    conn.execute(text(f"DROP DATABASE `{name.replace('`', '``')}`"))
    finally:
        admin.dispose()


def admin_engine(provider: str, properties: dict[str, str]):  # noqa: ANN201 - a SQLAlchemy Engine
    """A SQLAlchemy engine on the provider's engine as its admin (PostgreSQL: on the catalog's database)."""
    if provider == "jdbc-postgresql":
        return create_engine(make_url(PG_ADMIN_URL).set(database=properties["jdbc-database"]), poolclass=NullPool)
    return create_engine(MYSQL_ADMIN_URL, poolclass=NullPool)
