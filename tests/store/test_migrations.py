"""Migrations: the server refuses a database that is not at this code's schema revision (never
migrated, or migrated by a newer gravimeta), and `upgrade` can be run any number of times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect as sa_inspect
from sqlalchemy import text

from gravimeta.entities import Metalake
from gravimeta.errors import SchemaVersionMismatch
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import check_schema, current_revision, head_revision, upgrade
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, downgrade, fresh_database

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


def test_an_app_on_an_unmigrated_or_newer_database_answers_503_until_it_is_at_head(empty_url, engine_of):
    """A worker boots without a usable store (gunicorn must not crash-loop, docs/operations.md) but
    serves nothing from it: every request answers 503 with the reason, until the store is at head."""
    from gravimeta.app import create_app

    client = create_app(store_url=empty_url).test_client()
    answer = client.get("/api/metalakes")
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert "has no gravimeta schema" in answer.get_json()["message"]
    engine = engine_of(empty_url)
    upgrade(engine)
    stamp(engine, FUTURE)
    client = create_app(store_url=empty_url).test_client()
    answer = client.get("/api/metalakes")
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert f"at schema revision {FUTURE}" in answer.get_json()["message"]
    stamp(engine, head_revision())
    assert client.get("/api/metalakes").status_code == 200


def test_serve_exits_with_the_message_before_starting_gunicorn(empty_url):
    """`serve` is a process of its own (it prepares the metrics directory before anything imports
    prometheus_client), so it runs as one here."""
    result = subprocess.run([sys.executable, "-m", "gravimeta", "--store-url", empty_url, "serve"],
                            capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    # a SQLite file that does not exist is not opened (that would create it): refused before
    missing = empty_url.startswith("sqlite") and not Path(empty_url.removeprefix("sqlite:///")).exists()
    assert ("no gravimeta store at" if missing else "has no gravimeta schema") in output
    assert f"gravimeta --store-url {empty_url} db upgrade" in output


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

    engine = engine_of(empty_url)
    upgrade(engine, "0004")
    upgrade(engine, "0005")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM gm_claim_waiter")).scalar_one() == 0
        if engine.dialect.name == "postgresql":
            assert _claim_function_arities(conn) == [10]

    downgrade(engine, "0004")
    assert current_revision(engine) == "0004"
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            assert _claim_function_arities(conn) == [9]
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_a_database_at_0011_upgrades_to_anchor_fences_without_the_waiter_line_and_back(empty_url, engine_of):
    """Revision 0012 numbers fences per anchor row, seeded above every per-path fence issued before it
    (fences never go back), drops the waiter line (PostgreSQL: the claim function without it, as the
    only overload); a downgrade restores 0005's function and table and lifts the per-path counters to
    the highest fence issued."""

    from gravimeta.concurrency.scope_lease import LeaseBackend

    engine = engine_of(empty_url)
    upgrade(engine, "0011")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_scope_fence (scope_path, fence) VALUES ('/m/c', 7), ('/m/c/s', 41)"))
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    postgres = engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        assert "gm_claim_waiter" not in sa_inspect(conn).get_table_names()
        if postgres:  # the only overload: 0012's nine arguments, and the two of a waiting root claim (0021)
            assert _claim_function_arities(conn) == [11]
    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=1000)
    try:
        first = claims.claim_path("/m/c")
        assert first.fence == 42, "a fence went back below one issued before the upgrade"
        first.release()
        second = claims.claim_path("/m/c")
        assert second.fence == 43
    finally:
        claims.heartbeat.stop()

    downgrade(engine, "0011")
    assert current_revision(engine) == "0011"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM gm_claim_waiter")).scalar_one() == 0
        assert sorted(conn.execute(text("SELECT fence FROM gm_scope_fence")).scalars()) == [43, 43]
        if postgres:
            assert _claim_function_arities(conn) == [10]
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def _claim_function_arities(conn) -> list[int]:
    return sorted(conn.execute(text("SELECT pronargs FROM pg_proc WHERE proname = 'gm_claim_scope'")).scalars())


def test_a_database_at_0005_upgrades_to_the_advisory_function_and_back(empty_url, engine_of):
    """Revision 0006 adds gm_advisory_claim on PostgreSQL (nothing elsewhere); a downgrade removes it."""

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

    downgrade(engine, "0005")
    assert current_revision(engine) == "0005"
    if postgres:
        with engine.connect() as conn:
            assert _advisory_function_count(conn) == 0
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_a_database_at_0012_upgrades_to_the_mariadb_claim_procedure_and_back(empty_url, engine_of):
    """Revision 0013 adds the claim procedure on MySQL/MariaDB (nothing elsewhere): after the upgrade a
    claim is one CALL whose fences continue above the ones issued before, a related claim is busy while
    the first is live, and case and trailing spaces make different paths (the column's collation); a
    downgrade drops the procedure."""

    from gravimeta import errors
    from gravimeta.concurrency.scope_lease import LeaseBackend

    engine = engine_of(empty_url)
    mysql = engine.dialect.name in ("mysql", "mariadb")
    upgrade(engine, "0012")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_claim_anchor (anchor, fence) VALUES ('/', 0), ('/m', 9)"))
    upgrade(engine)
    with engine.connect() as conn:
        assert _claim_procedure_count(conn) == (1 if mysql else 0)
    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=300)
    try:
        first = claims.claim_path("/m/c")
        assert first.fence == 10, "a fence went back below one issued before the upgrade"
        with pytest.raises(errors.ScopeBusy):
            claims.claim_path("/m")
        for unrelated in ("/m/C", "/m/c ", "/M"):
            claims.claim_path(unrelated).release()
        first.release()
        assert claims.claim_path("/m").fence > 10
    finally:
        claims.heartbeat.stop()

    downgrade(engine, "0012")
    assert current_revision(engine) == "0012"
    with engine.connect() as conn:
        assert _claim_procedure_count(conn) == 0
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_a_database_at_0014_upgrades_to_the_claim_procedure_that_locks_found_keys_and_back(empty_url, engine_of):
    """Revision 0015 replaces the MariaDB claim procedure by one that locks the related claims it found by
    their keys (nothing elsewhere): after the upgrade a claim steals an expired related claim written
    before it, with a greater fence; the downgrade restores revision 0013's procedure, which still claims."""

    from gravimeta.concurrency.scope_lease import LeaseBackend

    engine = engine_of(empty_url)
    mysql = engine.dialect.name in ("mysql", "mariadb")
    upgrade(engine, "0014")
    _expired_claim(engine, "/m", "/m/c", "gone", 5)
    upgrade(engine)
    with engine.connect() as conn:
        assert _claim_procedure_body(conn) == ("locks found keys" if mysql else None)
    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=1000)
    try:
        claim = claims.claim_path("/m")
        assert claim.fence == 6, "a fence went back below one issued before the upgrade"
        with engine.connect() as conn:
            assert conn.execute(text("SELECT holder_id FROM gm_scope_lease")).scalars().all() == [claim.holder]
        claim.release()
    finally:
        claims.heartbeat.stop()

    downgrade(engine, "0014")
    assert current_revision(engine) == "0014"
    with engine.connect() as conn:
        assert _claim_procedure_body(conn) == ("locks by its IN/LIKE test" if mysql else None)
        if mysql:  # 0013's procedure still claims (called directly: this code's claims send 0021's arguments)
            row = conn.execute(text("CALL gm_claim_scope('/m/c', '/m', '/m/c', '/', '/m', NULL, NULL, '/m/c/%', "
                                    "'n', 5000)")).one()
            conn.commit()
            assert (row.status, row.fence) == ("granted", 7)
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def _expired_claim(engine, anchor: str, path: str, holder: str, fence: int) -> None:
    """The anchor rows '/' (fence 0) and `anchor` (`fence`), and an expired claim on `path` with that fence."""
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_claim_anchor (anchor, fence) VALUES ('/', 0), (:a, :f)"),
                     {"a": anchor, "f": fence})
        conn.execute(text("INSERT INTO gm_scope_lease (scope_path, holder_id, fence, lease_expires_at, acquired_at, "
                          "updated_at) VALUES (:p, :h, :f, :t, :t, :t)"),
                     {"p": path, "h": holder, "f": fence, "t": "2020-01-01 00:00:00"})


def _claim_procedure_body(conn) -> str | None:
    """Which claim procedure the database has: revision 0015's (a cursor over the found keys), 0013's, or none."""
    if conn.dialect.name not in ("mysql", "mariadb"):
        return None
    body = conn.execute(text("SELECT routine_definition FROM information_schema.routines WHERE routine_schema = "
                             "DATABASE() AND routine_name = 'gm_claim_scope' AND routine_type = 'PROCEDURE'")
                        ).scalar_one()
    return "locks found keys" if "CURSOR FOR" in body else "locks by its IN/LIKE test"


def _claim_procedure_count(conn) -> int:
    if conn.dialect.name not in ("mysql", "mariadb"):
        return 0
    return int(conn.execute(text("SELECT count(*) FROM information_schema.routines WHERE routine_schema = DATABASE() "
                                 "AND routine_name = 'gm_claim_scope' AND routine_type = 'PROCEDURE'")).scalar_one())


def _advisory_function_count(conn) -> int:
    return int(conn.execute(text("SELECT count(*) FROM pg_proc WHERE proname = 'gm_advisory_claim'")).scalar_one())


def test_a_database_at_0006_upgrades_to_owners_and_back(empty_url, engine_of):
    """Revision 0009 adds gm_principal and gm_owner, whose foreign keys delete an owner row with its
    object (here: a table deleted by plain SQL, as any code path would); a downgrade removes both."""
    from sqlalchemy import inspect

    from gravimeta.entities import Catalog, Column, Schema, Table

    engine = engine_of(empty_url)
    upgrade(engine, "0006")
    store = EntityStore(engine)
    store.commits.enabled = False  # revision 0006 has no write markers (0014)
    store.create_metalake(Metalake("m"), "old")  # data written before the revision keeps working
    upgrade(engine)
    store = EntityStore(engine)
    assert {"gm_principal", "gm_owner"} <= set(inspect(engine).get_table_names())
    store.create_catalog(Catalog("m", "c", "relational", "memory"), "u")
    store.create_schema("m", "c", Schema("s"), "u")
    store.create_table("m", "c", "s", Table("t", [Column("id", "integer")]), "u")
    with engine.begin() as conn:
        table_id, metalake_id = conn.execute(text(
            "SELECT t.id, c.metalake_id FROM gm_table t JOIN gm_schema s ON s.id = t.schema_id "
            "JOIN gm_catalog c ON c.id = s.catalog_id")).one()
        conn.execute(text("INSERT INTO gm_owner (object_kind, object_id, metalake_id, table_id, owner_type, "
                          "owner_name, version) VALUES ('TABLE', :t, :m, :t, 'USER', 'bob', 1)"),
                     {"t": table_id, "m": metalake_id})
    store.drop_table("m", "c", "s", "t")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM gm_owner")).scalar_one() == 0

    downgrade(engine, "0006")
    assert current_revision(engine) == "0006"
    assert not {"gm_principal", "gm_owner"} & set(inspect(engine).get_table_names())
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_the_roles_revision_adds_its_tables_keyed_by_id_and_goes_back(empty_url, engine_of):
    """Revision 0016 adds roles, their privileges and their grants; a dropped table takes the
    privileges on it with it (the foreign key's cascade, on every backend); a downgrade drops them."""
    engine = engine_of(empty_url)
    upgrade(engine)
    tables = set(sa_inspect(engine).get_table_names())
    assert {"gm_role", "gm_role_privilege", "gm_role_member"} <= tables
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.execute(text("PRAGMA foreign_keys=ON"))
        conn.execute(text("INSERT INTO gm_metalake (id, name, in_use, properties, version) "
                          "VALUES (1, 'm', :t, '{}', 1)"), {"t": True})
        conn.execute(text("INSERT INTO gm_catalog (id, metalake_id, name, type, provider, properties, in_use, version) "
                          "VALUES (2, 1, 'c', 'relational', 'memory', '{}', :t, 1)"), {"t": True})
        conn.execute(text("INSERT INTO gm_role (id, metalake_id, name, version) VALUES (3, 1, 'r', 1)"))
        conn.execute(text("INSERT INTO gm_role_privilege (role_id, object_kind, object_id, metalake_id, catalog_id, "
                          "privilege, effect) VALUES (3, 'CATALOG', 2, 1, 2, 'USE_CATALOG', 'ALLOW')"))
        conn.execute(text("DELETE FROM gm_catalog WHERE id = 2"))
        assert conn.scalar(text("SELECT count(*) FROM gm_role_privilege")) == 0
    downgrade(engine, "0015")
    assert not {"gm_role", "gm_role_privilege", "gm_role_member"} & set(sa_inspect(engine).get_table_names())
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_the_tag_and_role_owners_revision_keys_their_rows_by_id_and_goes_back(empty_url, engine_of):
    """Revision 0017 lets an owner row name a tag or a role; deleting the tag or the role deletes the
    row (the foreign key's cascade, on every backend); a downgrade removes the columns."""
    engine = engine_of(empty_url)
    upgrade(engine)
    assert {"tag_id", "role_id"} <= {c["name"] for c in sa_inspect(engine).get_columns("gm_owner")}
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.execute(text("PRAGMA foreign_keys=ON"))
        conn.execute(text("INSERT INTO gm_metalake (id, name, in_use, properties, version) "
                          "VALUES (1, 'm', :t, '{}', 1)"), {"t": True})
        conn.execute(text("INSERT INTO gm_tag (id, metalake_id, name, properties, version) VALUES (2, 1, 'g', '{}', 1)"))
        conn.execute(text("INSERT INTO gm_role (id, metalake_id, name, version) VALUES (3, 1, 'r', 1)"))
        conn.execute(text("INSERT INTO gm_owner (object_kind, object_id, metalake_id, tag_id, owner_type, owner_name, "
                          "version) VALUES ('TAG', 2, 1, 2, 'USER', 'bob', 1)"))
        conn.execute(text("INSERT INTO gm_owner (object_kind, object_id, metalake_id, role_id, owner_type, "
                          "owner_name, version) VALUES ('ROLE', 3, 1, 3, 'USER', 'bob', 1)"))
        conn.execute(text("DELETE FROM gm_tag WHERE id = 2"))
        assert conn.scalar(text("SELECT object_kind FROM gm_owner")) == "ROLE"
        conn.execute(text("DELETE FROM gm_role WHERE id = 3"))
        assert conn.scalar(text("SELECT count(*) FROM gm_owner")) == 0
    downgrade(engine, "0016")
    assert not {"tag_id", "role_id"} & {c["name"] for c in sa_inspect(engine).get_columns("gm_owner")}
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_the_node_revision_revision_adds_the_column_and_goes_back_and_a_worker_registers_on_either(
        empty_url, engine_of, monkeypatch):
    """Revision 0018 adds gm_node.schema_revision. A worker of this code on a store still at 0017 (booted
    before `gravimeta db upgrade`) registers without it, so its peers see it, and writes its revision at
    the first heartbeat after the upgrade; a downgrade drops the column and the worker falls back again."""
    from gravimeta.concurrency.node_registry import NodeRegistry, list_nodes

    engine = engine_of(empty_url)
    upgrade(engine, "0017")
    worker = NodeRegistry(engine, "early", False, "NONE", live_window_ms=90_000)
    worker.register()
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM gm_node")) == 1
    upgrade(engine)
    assert [n["schemaRevision"] for n in list_nodes(engine)] == [None]  # as a worker of older code leaves it
    worker.beat()
    assert [(n["node"], n["schemaRevision"], n["live"]) for n in list_nodes(engine)] == [
        (worker.row_id, head_revision(), True)]
    worker.beat()  # from now on a plain heartbeat: the revision stays
    assert [n["schemaRevision"] for n in list_nodes(engine)] == [head_revision()]

    downgrade(engine, "0017")
    assert "schema_revision" not in {c["name"] for c in sa_inspect(engine).get_columns("gm_node")}
    worker.register()
    monkeypatch.setenv("GRAVIMETA_HA_DISABLE", "node_revision_fallback")
    with pytest.raises(Exception, match="schema_revision"):
        worker.register()
    monkeypatch.delenv("GRAVIMETA_HA_DISABLE")
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_the_ids_revision_makes_sqlite_ids_never_reused_keeps_the_rows_and_goes_back(empty_url, engine_of):
    """Revision 0019 rebuilds SQLite's object tables with AUTOINCREMENT (a no-op elsewhere, where ids were
    never reused): the rows and what refers to them survive the rebuild (the foreign keys are off meanwhile,
    so no ON DELETE CASCADE fires), a catalog dropped before the upgrade whose intent is still open is not
    succeeded by a new catalog under its id, and from then on a dropped object's id is never handed out
    again, at any level. A downgrade rebuilds the tables as they were."""
    from gravimeta.entities import Catalog, Schema

    engine = engine_of(empty_url)
    sqlite = engine.dialect.name == "sqlite"
    upgrade(engine, "0018")
    store = EntityStore(engine)
    store.create_metalake(Metalake("m"), "u")
    kept = store.create_catalog(Catalog("m", "kept", "relational", "memory"), "u")
    gone = store.create_catalog(Catalog("m", "gone", "relational", "memory"), "u")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_owner (object_kind, object_id, metalake_id, catalog_id, owner_type, "
                          "owner_name, version) SELECT 'CATALOG', id, metalake_id, id, 'USER', 'bob', 1 "
                          "FROM gm_catalog WHERE name = 'kept'"))
        conn.execute(text("INSERT INTO gm_operation_journal (scope_path, operation, payload, state, holder, "
                          "created_at, catalog_id) VALUES ('/m/gone', 'drop_schema', '{}', 'pending', 'h', "
                          ":now, :c)"), {"now": "2026-12-05 09:00:00", "c": gone.id})
    assert store.drop_catalog("m", "gone", cascade=True) is True

    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT c.name, o.owner_name FROM gm_owner o JOIN gm_catalog c ON c.id = o.catalog_id"
                                 )).all() == [("kept", "bob")]
        if sqlite:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    store = EntityStore(engine)
    assert store.get_catalog("m", "kept").id == kept.id
    after = store.create_catalog(Catalog("m", "after", "relational", "memory"), "u")
    assert after.id > gone.id, "a catalog made after the upgrade took the id of a dropped catalog with an open intent"
    store.create_schema("m", "after", Schema("s"), "u")
    with store.snapshot() as s:
        first = store.schema_row(s, "m", "after", "s").id
    assert store.drop_schema("m", "after", "s", cascade=True) is True
    store.create_schema("m", "after", Schema("s"), "u")
    with store.snapshot() as s:
        assert store.schema_row(s, "m", "after", "s").id > first
    assert store.drop_catalog("m", "after", cascade=True) is True
    assert store.create_catalog(Catalog("m", "after", "relational", "memory"), "u").id > after.id
    with engine.connect() as conn:
        tables = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'table'")).all() if sqlite else []
    assert {name for name, sql in tables if "AUTOINCREMENT" in sql} == ({
        "gm_metalake", "gm_catalog", "gm_schema", "gm_table", "gm_column", "gm_tag", "gm_role", "gm_principal",
        "gm_operation_journal", "gm_retirement"} if sqlite else set())  # gm_retirement: 0022, made so

    downgrade(engine, "0018")
    assert current_revision(engine) == "0018"
    with engine.connect() as conn:
        if sqlite:
            assert not [n for n, sql in conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
                        if "AUTOINCREMENT" in sql and n != "gm_operation_journal"]
        assert conn.execute(text("SELECT count(*) FROM gm_owner")).scalar_one() == 1


def test_a_database_at_0019_upgrades_to_root_claims_that_do_not_wait_for_a_locked_claim_row_and_back(
        empty_url, engine_of):
    """Revision 0020: a root claim (it holds '/' exclusively) that meets an expired related claim whose row
    another transaction holds (a holder frozen inside its fenced store transaction) answers 'busy' at once,
    holding nothing afterwards, where revision 0019's functions (PostgreSQL gm_claim_scope and
    gm_advisory_claim, MariaDB's procedure) waited for the row until their lock-wait bound; the statement
    path does the same (its lock error counts as busy). A claim on any other scope still waits. Once the
    row is free the root claim steals it. The downgrade restores the waiting functions."""
    import time

    from sqlalchemy.exc import DBAPIError

    from gravimeta.concurrency.pg_advisory import advisory_key
    from gravimeta.concurrency.scope_lease import LeaseBackend
    from gravimeta.store import lock_waits

    engine = engine_of(empty_url)
    dialect = engine.dialect.name
    upgrade(engine, "0019")
    _expired_claim(engine, "/m4", "/m4/c/s", "frozen", 3)
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    if dialect == "sqlite":  # no row locks, no functions: only the way up and down
        downgrade(engine, "0019")
        upgrade(engine)
        return

    def lease_claim(path: str, anchor: str, wait_s: int) -> str:
        """One call of the lease claim function/procedure (recording no root wait: 0021's arguments, at
        head, are 0); its status, or the lock error's class."""
        waits = ", 0, 0" if current_revision(engine) == head_revision() else ""
        try:
            with engine.connect() as conn:
                if dialect == "postgresql":
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                    conn.execute(text(f"SET lock_timeout = '{wait_s}s'"))
                    return str(conn.execute(text(
                        "SELECT status FROM gm_claim_scope(:p, :a, :r, :d, 'r', 5000, false, NULL, NULL)"),
                        {"p": path, "a": anchor, "r": [path] if path == "/" else ["/", path],
                         "d": f"{path.rstrip('/')}/%"}).scalar_one())
                row = conn.execute(text(
                    f"SET STATEMENT innodb_lock_wait_timeout = {wait_s} FOR "
                    f"CALL gm_claim_scope(:p, :a, :r1, :r2, NULL, NULL, NULL, :d, 'r', 5000{waits})"),
                    {"p": path, "a": anchor, "r1": path, "r2": None if path == "/" else "/",
                     "d": f"{path.rstrip('/')}/%"}).one()
                conn.commit()
                return str(row.status)
        except DBAPIError as exc:
            assert lock_waits.timed_out(exc), exc
            return "lock wait ran out"

    def advisory_claim(path: str, wait_ms: int) -> tuple[str, int]:
        """gm_advisory_claim's answer, and how many advisory locks its transaction holds after it."""
        with engine.connect() as conn, conn.begin():
            status = conn.execute(text(
                "SELECT gm_advisory_claim(CAST(:s AS bigint[]), :x, CAST(:r AS text[]), :d, :w)"),
                {"s": [] if path == "/" else [advisory_key("/")], "x": advisory_key(path),
                 "r": [path] if path == "/" else ["/", path], "d": f"{path.rstrip('/')}/%", "w": wait_ms}).scalar_one()
            held = conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                                     "AND pid = pg_backend_pid()")).scalar_one()
            return str(status), int(held)

    def root_free() -> bool:
        with engine.connect() as conn, conn.begin():
            try:
                conn.execute(text("SELECT anchor FROM gm_claim_anchor WHERE anchor = '/' FOR UPDATE NOWAIT"))
            except DBAPIError:
                return False
        return True

    def timed(fn, *args):  # type: ignore[no-untyped-def]
        started = time.monotonic()
        return fn(*args), time.monotonic() - started

    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=3000)
    holder = engine.connect()
    try:
        holder.begin()  # the frozen holder's fence guard: its claim row FOR UPDATE in its store transaction
        holder.execute(text("SELECT fence FROM gm_scope_lease WHERE scope_path = '/m4/c/s' FOR UPDATE"))
        status, elapsed = timed(lease_claim, "/", "/", 3)
        assert status == "busy" and elapsed < 1, f"the root claim answered {status} after {elapsed:.1f} s"
        assert root_free(), "'/' stayed locked after the root claim answered busy"
        status, elapsed = timed(lease_claim, "/m4", "/m4", 1)
        assert status == "lock wait ran out" and elapsed >= 1, f"a metalake claim: {status} after {elapsed:.1f} s"
        with pytest.raises(DBAPIError) as raised:  # the statement path: the root's locking read does not wait
            timed(claims._try_claim_in_statements, "/", "r", ["/"], lock_waits.deadline_in(3))
        assert lock_waits.timed_out(raised.value)
        if dialect == "postgresql":
            (status, held), elapsed = timed(advisory_claim, "/", 3000)
            assert (status, held) == ("busy", 0) and elapsed < 1, (status, held, elapsed)
            assert advisory_claim("/m4", 300) == ("timeout", 2), "a metalake advisory claim no longer waits"
        holder.rollback()
        assert lease_claim("/", "/", 3) == "granted"  # the expired claim is stolen, '/' takes fence 4
        with engine.connect() as conn:
            assert conn.execute(text("SELECT scope_path, fence FROM gm_scope_lease")).all() == [("/", 4)]
            conn.execute(text("UPDATE gm_scope_lease SET lease_expires_at = :t"), {"t": "2020-01-01 00:00:00"})
            conn.commit()

        downgrade(engine, "0019")
        assert current_revision(engine) == "0019"
        holder.begin()
        holder.execute(text("SELECT fence FROM gm_scope_lease WHERE scope_path = '/' FOR UPDATE"))
        status, elapsed = timed(lease_claim, "/", "/", 1)
        assert status == "lock wait ran out" and elapsed >= 1, f"0019's root claim: {status} after {elapsed:.1f} s"
        if dialect == "postgresql":
            assert advisory_claim("/", 300) == ("timeout", 1), "0019's advisory root claim did not wait"
        holder.rollback()
    finally:
        holder.close()
        claims.heartbeat.stop()
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_a_database_at_0020_upgrades_to_root_claims_that_hold_new_claims_back_and_back(empty_url, engine_of):
    """Revision 0021: a busy root claim attempt records the claim as the waiting root claim in '/''s anchor
    row (columns root_waiter, root_wait_since/until/ends, by the database clock) and answers 'waiting'; a
    claim under a metalake then answers 'held' and writes nothing, while the record is live (PostgreSQL: an
    advisory claim under a metalake answers 'busy', holding no lock); the root claim's grant ends its record.
    The downgrade restores 0020's functions and procedure (signatures, behaviour) and drops the columns and
    gm_root_wait."""
    from gravimeta.concurrency.root_wait import RootWait
    from gravimeta.concurrency.scope_lease import LeaseBackend
    from gravimeta.store import lock_waits

    engine = engine_of(empty_url)
    dialect = engine.dialect.name
    upgrade(engine, "0020")
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    columns = {c["name"] for c in sa_inspect(engine).get_columns("gm_claim_anchor")}
    assert {"root_waiter", "root_wait_since", "root_wait_until", "root_wait_ends"} <= columns

    claims = LeaseBackend(engine, "n", ttl_ms=5000, timeout_ms=2000)

    def attempt(path: str, holder: str, wait: RootWait | None = None) -> int | None:
        return claims._try_claim(path, holder, lock_waits.deadline_in(2), wait)

    def record() -> tuple[str | None, bool]:
        with engine.connect() as conn:
            row = conn.execute(text(
                "SELECT root_waiter, root_wait_until > " + {"postgresql": "clock_timestamp()", "sqlite":
                "strftime('%Y-%m-%d %H:%M:%f', 'now')"}.get(dialect, "UTC_TIMESTAMP(6)") +
                " AS live FROM gm_claim_anchor WHERE anchor = '/'")).one()
            return row.root_waiter, bool(row.live)

    def claim_rows() -> list[str]:
        with engine.connect() as conn:
            return sorted(conn.execute(text("SELECT scope_path FROM gm_scope_lease")).scalars())

    def advisory_claim(path: str) -> tuple[str, int]:
        """PostgreSQL: gm_advisory_claim's answer on `path` under metalake /n, and the advisory locks it holds."""
        from gravimeta.concurrency.pg_advisory import advisory_key

        with engine.connect() as conn, conn.begin():
            status = conn.execute(text("SELECT gm_advisory_claim(CAST(:s AS bigint[]), :x, CAST(:r AS text[]), :d, 300)"),
                                  {"s": [advisory_key("/"), advisory_key("/n")], "x": advisory_key(path),
                                   "r": [path, "/", "/n"], "d": f"{path}/%"}).scalar_one()
            held = conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                                     "AND pid = pg_backend_pid()")).scalar_one()
            return str(status), int(held)

    try:
        held = attempt("/m/c", "h")
        assert held is not None
        wait = RootWait(hold_ms=5000, poll_ms=5000)
        assert attempt("/", "root", wait) is None and wait.waiting, "a busy root claim was not recorded as waiting"
        assert record() == ("root", True)
        assert attempt("/n/c", "other") is None, "a claim in another metalake was granted past the waiting root claim"
        assert claim_rows() == ["/m/c"], "a held-back claim wrote a claim row"
        if dialect == "postgresql":
            assert advisory_claim("/n/c") == ("busy", 0), "an advisory claim was granted past the waiting root claim"
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM gm_scope_lease WHERE scope_path = '/m/c'"))
        fence = attempt("/", "root", RootWait(hold_ms=5000, poll_ms=5000))
        assert fence is not None and fence > held, (fence, held)
        assert record() == ("root", False), "the granted root claim's record is still live"
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM gm_scope_lease"))
        assert attempt("/n/c", "other") is not None, "a claim was held back after the root claim's record ended"
    finally:
        claims.heartbeat.stop()

    downgrade(engine, "0020")
    assert current_revision(engine) == "0020"
    columns = {c["name"] for c in sa_inspect(engine).get_columns("gm_claim_anchor")}
    assert not {"root_waiter", "root_wait_since", "root_wait_until", "root_wait_ends"} & columns
    with engine.connect() as conn:
        if dialect == "postgresql":
            assert _claim_function_arities(conn) == [9]
            assert conn.execute(text("SELECT count(*) FROM pg_proc WHERE proname = 'gm_root_wait'")).scalar_one() == 0
            status = conn.execute(text("SELECT status FROM gm_claim_scope('/n/c', '/n', ARRAY['/n/c', '/', '/n'], "
                                       "'/n/c/%', 'x', 5000, false, NULL, NULL)")).scalar_one()
            conn.commit()
            assert status == "busy"  # 0020's function: "other" still holds /n/c
            assert advisory_claim("/n/d") == ("granted", 3), "0020's advisory claim"
        elif dialect in ("mysql", "mariadb"):
            row = conn.execute(text("CALL gm_claim_scope('/n', '/n', '/n', '/', NULL, NULL, NULL, '/n/%', 'x', 5000)")
                               ).one()
            conn.commit()
            assert row.status == "busy"
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_the_retirements_revision_keys_them_by_catalog_and_engine_and_moves_the_rows_both_ways(empty_url, engine_of):
    """Revision 0022 moves the pending retirements (one gm_server_setting row per catalog key) into
    gm_retirement, one row per catalog key and engine; there another engine's record of the same key is
    another row, one engine's keeps the higher token, and a delivery deletes only the row it read. The
    downgrade moves them back, one per catalog key (the highest token), and drops the table."""
    import json

    from gravimeta.store import retirements

    engine = engine_of(empty_url)
    upgrade(engine, "0021")
    old = {"provider": "hive", "properties": {"metastore.uris": "http://127.0.0.1:1"}, "token": 7,
           "locations": ["hive:127.0.0.1:1", "id:one"], "catalog": "m.h"}
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO gm_server_setting (name, value, updated_at) VALUES "
                          "('retire /c1.2026', :v, CURRENT_TIMESTAMP), ('sqlite_catalog_root', '/x', CURRENT_TIMESTAMP)"),
                     {"v": json.dumps(old)})
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    [moved] = retirements.pending(engine)
    assert (moved.catalog_key, moved.token, moved.locations) == ("/c1.2026", 7, ("hive:127.0.0.1:1", "id:one"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM gm_server_setting")).scalars().all() == ["sqlite_catalog_root"]
    retirements.record(engine, "/c1.2026", 9, "m.h", "hive", {}, ["hive:127.0.0.1:2", "id:two"])  # another engine
    retirements.record(engine, "/c1.2026", 5, "m.h", "hive", {}, ["id:one", "hive:127.0.0.1:3"])  # lower: kept 7
    assert sorted((r.token, r.locations[-1]) for r in retirements.pending(engine)) == [(7, "id:one"), (9, "id:two")]
    first = next(r for r in retirements.pending(engine) if r.token == 7)
    retirements.record(engine, "/c1.2026", 11, "m.h", "hive", {}, ["id:one"])  # raised while being delivered
    assert not retirements.delivered(engine, first), "a raised record was deleted as delivered"
    assert sorted(r.token for r in retirements.pending(engine)) == [9, 11]
    downgrade(engine, "0021")
    assert "gm_retirement" not in set(sa_inspect(engine).get_table_names())
    with engine.connect() as conn:
        [value] = conn.execute(text("SELECT value FROM gm_server_setting WHERE name = 'retire /c1.2026'")).scalars()
    assert json.loads(value)["token"] == 11
    upgrade(engine)
    assert [r.token for r in retirements.pending(engine)] == [11]
