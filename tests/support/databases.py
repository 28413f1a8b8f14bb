"""Real databases for tests: a fresh, migrated database per use on SQLite, PostgreSQL or MariaDB.

PostgreSQL and MariaDB are the machine's servers at 127.0.0.1 (see .ci/run); each test database gets
a unique name and is dropped afterwards, so runs never see each other's data.

A migrated PostgreSQL or MariaDB database is a copy of one migrated by alembic once per test process
(the template, dropped when the process exits): the migrations cost about 1 s on PostgreSQL and 2-3 s
on MariaDB each time, a copy a fraction of that. PostgreSQL copies it itself (CREATE DATABASE ...
TEMPLATE); on MariaDB its tables, stored routines and rows are made again from the template's own
SHOW CREATE statements. tests/store/test_database_copies.py holds each copy to a migrated database.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
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
    """Yield the URL of a new, empty (optionally migrated) database; drop it afterwards. On PostgreSQL and
    MariaDB, a migrated one is made ahead, while the test before runs, and the drop runs behind the next
    test's back (_keeper)."""
    name = f"gm_test_{uuid.uuid4().hex[:12]}"
    if backend == "sqlite":
        url = f"sqlite:///{tmp_dir / (name + '.db')}"
        if migrate:
            _migrate(url)
        yield url
        return
    with _template_lock:
        spare = _spares.pop(backend, None) if migrate else None
    if spare is not None:
        name = spare
    else:
        try:
            _create(backend, name, migrate)
        except BaseException:
            _chores.put(("drop", backend, name))
            raise
    if migrate:
        with _template_lock:
            wanted = backend not in _spares_wanted
            _spares_wanted.add(backend)
        if wanted:
            _chores.put(("spare", backend, f"gm_test_{uuid.uuid4().hex[:12]}"))
    try:
        yield make_url(_admin_url(backend)).set(database=name).render_as_string(hide_password=False)
    finally:
        _chores.put(("drop", backend, name))


def _create(backend: str, name: str, migrate: bool) -> None:
    """Create database `name`: empty, or a copy of the migrated template."""
    # no pool: a connection must not outlive a server restart that a chaos test performs meanwhile
    admin = create_engine(make_url(_admin_url(backend)), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            if backend == "mysql":
                conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"))
            elif migrate:
                conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{_template(backend)}"'))
            else:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        if migrate:
            _copy_migrated(backend, admin, name)
    finally:
        admin.dispose()


def _drop(backend: str, name: str) -> None:
    admin = create_engine(make_url(_admin_url(backend)), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            if backend == "postgresql":
                conn.execute(text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n AND pid <> pg_backend_pid()"
                ), {"n": name})
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            else:
                conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
    finally:
        admin.dispose()


#: what _keeper does next: ("drop", backend, name) a database whose use ended, ("spare", backend, name)
#: make the next migrated one
_chores: queue.Queue[tuple[str, str, str]] = queue.Queue()
#: backend -> a migrated database made ahead for the next test; the backends whose spare is on its way
_spares: dict[str, str] = {}
_spares_wanted: set[str] = set()
#: how long a drop is tried again while its server does not answer (a chaos test restarts it)
DROP_RETRY_S = 60.0


def _keeper() -> None:
    """Make the next test's migrated database ahead and drop those whose use ended, one at a time, on a
    thread of its own, so that the tests do not wait for either: a copy of the template takes ~0.4 s on
    PostgreSQL and ~1 s on MariaDB, and PostgreSQL's DROP DATABASE waits for a checkpoint of the whole
    server (up to seconds while other tests write). A spare that cannot be made is not: the test makes
    its own. drop_templates waits until every chore queued before it is done."""
    while True:
        chore, backend, name = _chores.get()
        try:
            if chore == "spare":
                try:
                    _create(backend, name, migrate=True)
                    with _template_lock:
                        extra = _spares.get(backend)
                        _spares[backend] = name
                    if extra is not None:  # two spares were made (seen in runs; how, unknown): keep one,
                        _chores.put(("drop", backend, extra))  # drop the other rather than lose its name
                except Exception:
                    _chores.put(("drop", backend, name))
                finally:
                    with _template_lock:
                        _spares_wanted.discard(backend)
                continue
            deadline = time.monotonic() + DROP_RETRY_S
            while True:
                try:
                    _drop(backend, name)
                    break
                except Exception:
                    if time.monotonic() > deadline:  # left behind, as a killed test run leaves it
                        break
                    time.sleep(1)
        finally:
            _chores.task_done()


threading.Thread(target=_keeper, name="test-databases", daemon=True).start()


#: backend -> the name of this process's migrated template database on it (made at first use)
_templates: dict[str, str] = {}
#: MariaDB: the statements that make a migrated database's objects again, read from the template once
_mysql_objects: list[str] = []
_template_lock = threading.Lock()


def _template(backend: str) -> str:
    """This process's migrated database on `backend`, made (by alembic) at its first use. Nothing stays
    connected to it: PostgreSQL copies a template only while no session is connected to it."""
    with _template_lock:
        if backend not in _templates:
            admin_url = make_url(_admin_url(backend))
            name = f"gm_test_template_{uuid.uuid4().hex[:12]}"
            admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
            with admin.connect() as conn:
                if backend == "mysql":
                    conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"))
                else:
                    conn.execute(text(f'CREATE DATABASE "{name}"'))
            _templates[backend] = name
            try:
                _migrate(admin_url.set(database=name).render_as_string(hide_password=False))
                if backend == "mysql":
                    _mysql_objects.extend(_mysql_statements(admin, name))
            except BaseException:
                del _templates[backend]
                _chores.put(("drop", backend, name))
                raise
            finally:
                admin.dispose()
        return _templates[backend]


def drop_templates() -> None:
    """Once every test database whose use ended is dropped, drop this process's spares and templates (the
    next fresh_database makes a new one)."""
    deadline = time.monotonic() + DROP_RETRY_S + 60
    while _chores.unfinished_tasks and time.monotonic() < deadline:
        time.sleep(0.05)
    with _template_lock:
        made = list(_spares.items()) + list(_templates.items())
        _spares.clear()
        _templates.clear()
        _mysql_objects.clear()
    for backend, name in made:
        try:
            _drop(backend, name)
        except Exception:  # the server is down (the machine's shutdown): left behind
            pass


atexit.register(drop_templates)  # also at pytest's session end (tests/conftest.py)


def _mysql_statements(admin: Engine, template: str) -> list[str]:
    """What makes the template's objects again in another (current) database: each table as SHOW CREATE
    TABLE shows it (columns, keys, foreign keys, options, the auto-increment counter), each stored
    routine under the sql_mode it was made with, and each table's rows copied from the template."""
    statements = []
    with admin.connect() as conn:
        tables = conn.execute(text(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = :s "
            "ORDER BY table_name"), {"s": template}).all()
        for table, kind in tables:
            if kind != "BASE TABLE":
                raise RuntimeError(f"cannot copy {kind} {table} of the migrated template yet")
            statements.append(conn.execute(text(f"SHOW CREATE TABLE `{template}`.`{table}`")).one()[1])
        for table, _ in tables:
            if conn.execute(text(f"SELECT 1 FROM `{template}`.`{table}` LIMIT 1")).first() is not None:
                statements.append(f"INSERT INTO `{table}` SELECT * FROM `{template}`.`{table}`")
        routines = conn.execute(text(
            "SELECT routine_type, routine_name FROM information_schema.routines WHERE routine_schema = :s "
            "ORDER BY routine_name"), {"s": template}).all()
        for kind, routine in routines:
            shown = conn.execute(text(f"SHOW CREATE {kind} `{template}`.`{routine}`")).mappings().one()
            statements.append(f"SET SESSION sql_mode = '{shown['sql_mode']}'")
            statements.append(shown[f"Create {kind.title()}"])
        for kind in ("TRIGGERS", "EVENTS"):
            if conn.execute(text(f"SHOW {kind} FROM `{template}`")).first() is not None:
                raise RuntimeError(f"cannot copy the {kind.lower()} of the migrated template yet")
    return statements


def _copy_migrated(backend: str, admin: Engine, name: str) -> None:
    """Make new database `name` a migrated one: PostgreSQL made it from the template already."""
    if backend != "mysql":
        return
    _template(backend)
    with admin.connect() as conn:
        conn.execute(text(f"USE `{name}`"))
        conn.execute(text("SET SESSION foreign_key_checks = 0"))
        for statement in _mysql_objects:
            conn.exec_driver_sql(statement)  # no parameters: the text goes to the server as it is


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
