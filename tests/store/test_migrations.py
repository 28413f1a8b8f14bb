"""Migrations: the server refuses a database that is not at this code's schema revision (never
migrated, or migrated by a newer gravimeta), and `upgrade` can be run any number of times."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from gravimeta.entities import Metalake
from gravimeta.errors import SchemaVersionMismatch
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import check_schema, current_revision, head_revision, upgrade
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, fresh_database

FUTURE = "9999_from_the_future"


@pytest.fixture(params=BACKENDS)
def empty_url(request, tmp_path):
    """A fresh database on each backend with no tables at all."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path, migrate=False) as url:
        yield url


@pytest.fixture
def engine_of():
    engines = []

    def make(url):
        engines.append(create_store_engine(url))
        return engines[-1]

    yield make
    for engine in engines:
        engine.dispose()


def stamp(engine, revision: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def test_check_refuses_a_database_that_was_never_migrated(empty_url, engine_of):
    with pytest.raises(SchemaVersionMismatch, match=r"has no gravimeta schema\. Run `gravimeta db upgrade` first"):
        check_schema(engine_of(empty_url))


def test_check_refuses_a_database_stamped_by_a_newer_gravimeta(db_url, engine_of):
    engine = engine_of(db_url)
    check_schema(engine)
    stamp(engine, FUTURE)
    with pytest.raises(SchemaVersionMismatch) as info:
        check_schema(engine)
    message = str(info.value)
    assert f"at schema revision {FUTURE}, which is newer than this gravimeta (head {head_revision()})" in message
    assert "Upgrade gravimeta" in message


def test_the_app_refuses_to_start_on_an_unmigrated_or_newer_database(empty_url, engine_of):
    from gravimeta.app import create_app

    with pytest.raises(SchemaVersionMismatch, match="has no gravimeta schema"):
        create_app(store_url=empty_url)
    engine = engine_of(empty_url)
    upgrade(engine)
    stamp(engine, FUTURE)
    with pytest.raises(SchemaVersionMismatch, match="newer than this gravimeta"):
        create_app(store_url=empty_url)


def test_serve_exits_with_the_message_before_starting_gunicorn(empty_url):
    from gravimeta.cli import main

    result = CliRunner().invoke(main, ["--store-url", empty_url, "serve"])
    assert result.exit_code == 2, result.output
    assert "has no gravimeta schema" in result.output
    assert "Run `gravimeta db upgrade` first" in result.output


def test_upgrade_creates_the_schema_and_is_idempotent(empty_url, engine_of, unique):
    engine = engine_of(empty_url)
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    store = EntityStore(engine)
    store.create_metalake(Metalake(f"kept_{unique}", properties={"k": "v"}), "tester")

    upgrade(engine)
    upgrade(engine_of(empty_url))  # also from another engine, as a second replica would
    assert current_revision(engine) == head_revision()
    check_schema(engine)
    assert store.get_metalake(f"kept_{unique}").properties == {"k": "v"}


def test_upgrade_refuses_a_database_stamped_by_a_newer_gravimeta(db_url, engine_of):
    engine = engine_of(db_url)
    stamp(engine, FUTURE)
    with pytest.raises(SchemaVersionMismatch, match="newer than this gravimeta"):
        upgrade(engine)
    assert current_revision(engine) == FUTURE


def test_a_database_at_0004_upgrades_to_the_waiter_line_and_back(empty_url, engine_of):
    """Revision 0005 replaces 0004's claim function on PostgreSQL (another signature: the old one must
    go, not linger as an overload) and adds gm_claim_waiter; a downgrade restores 0004 exactly."""
    from alembic import command

    from gravimeta.store.migrations import alembic_config

    engine = engine_of(empty_url)
    upgrade(engine, "0004")
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM gm_claim_waiter")).scalar_one() == 0
        if engine.dialect.name == "postgresql":
            assert _claim_function_arities(conn) == [10]

    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0004")
    assert current_revision(engine) == "0004"
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            assert _claim_function_arities(conn) == [9]
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def _claim_function_arities(conn) -> list[int]:
    return sorted(conn.execute(text("SELECT pronargs FROM pg_proc WHERE proname = 'gm_claim_scope'")).scalars())


def test_a_database_at_0005_upgrades_to_the_advisory_function_and_back(empty_url, engine_of):
    """Revision 0006 adds gm_advisory_claim on PostgreSQL (nothing elsewhere); a downgrade removes it."""
    from alembic import command

    from gravimeta.store.migrations import alembic_config

    engine = engine_of(empty_url)
    upgrade(engine, "0005")
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    postgres = engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        if postgres:
            assert _advisory_function_count(conn) == 1
            granted = conn.execute(text(
                "SELECT gm_advisory_claim(ARRAY[]::bigint[], 42, ARRAY['/']::text[], '/%', 100)")).scalar_one()
            assert granted == "granted"

    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    assert current_revision(engine) == "0005"
    if postgres:
        with engine.connect() as conn:
            assert _advisory_function_count(conn) == 0
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def _advisory_function_count(conn) -> int:
    return int(conn.execute(text("SELECT count(*) FROM pg_proc WHERE proname = 'gm_advisory_claim'")).scalar_one())
