"""Schema migrations through Alembic, and the start-up check that refuses a database whose schema
revision is not the one this code was written for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from gravimeta.errors import SchemaVersionMismatch

ALEMBIC_DIR = Path(__file__).resolve().parents[2] / "alembic"


def alembic_config(engine: Engine | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    if engine is not None:
        # '%' doubled: the option goes through configparser's interpolation, and a rendered URL has
        # percent-escapes (a multi-host URL's `host=h%3A5432`, a password's special characters)
        config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return config


@cache
def _scripts() -> ScriptDirectory:
    """The revision scripts, read once per process: alembic compiles every file under alembic/versions
    each time it reads them (0.05-0.1 s), and they do not change while a process runs."""
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None, "no migrations found"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to `revision` on the engine's database (a no-op when it is there already).
    A database stamped by a newer gravimeta is refused with SchemaVersionMismatch, not Alembic's
    "Can't locate revision"."""
    current = current_revision(engine)
    if current is not None and current not in _known_revisions():
        raise _newer(engine, current)
    config = alembic_config(engine)
    with migration_connection(engine) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction to migrate in (committed when the block ends normally). On SQLite
    its foreign keys are off meanwhile: a revision that rebuilds a table (Alembic's batch mode: copy,
    DROP, rename) would otherwise have the DROP delete the old table's rows first, and with them, by ON
    DELETE CASCADE, the rows of other tables that refer to them (or fail on the others). The pragma only
    takes effect outside a transaction, so it is set before BEGIN; the keys are checked before COMMIT
    (`PRAGMA foreign_key_check`: no row may point at nothing) and switched on again after."""
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite":
            with conn.begin():
                yield conn
            return
        raw: Any = conn.connection.driver_connection  # a statement through `conn` would begin first
        raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():
                yield conn
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
                if broken:
                    raise RuntimeError(f"the migration left rows that refer to nothing: {broken[:5]}")
        finally:
            raw.execute("PRAGMA foreign_keys=ON")


def check_schema(engine: Engine) -> None:
    """Raise SchemaVersionMismatch unless the database is at exactly this code's head revision."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return
    url = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaVersionMismatch(
            f"The database {url} has no gravimeta schema. Run `gravimeta db upgrade` first.", migratable=True
        )
    if current not in _known_revisions():
        raise _newer(engine, current)
    raise SchemaVersionMismatch(
        f"The database {url} is at schema revision {current}, older than this code's {head}. "
        "Run `gravimeta db upgrade`.", migratable=True
    )


def _known_revisions() -> set[str]:
    return {rev.revision for rev in _scripts().walk_revisions()}


def _newer(engine: Engine, current: str) -> SchemaVersionMismatch:
    url = engine.url.render_as_string(hide_password=True)
    return SchemaVersionMismatch(
        f"The database {url} is at schema revision {current}, which is newer than this gravimeta "
        f"(head {head_revision()}). Upgrade gravimeta, or point it at another database."
    )
