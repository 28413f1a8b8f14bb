"""What the JDBC providers answer when the engine cannot or will not do a call: Gravitino-style errors that
say whether anything changed (an unreachable or busy engine: 502 "nothing was changed"; a refusal: its
4xx), waits bounded by the pool and by each call's deadline, and gravimeta's own fence schema or
database out of every user's way."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from connectors.base import CatalogContext, Fence
from connectors.jdbc.mysql import MySQLConnector
from connectors.jdbc.postgresql import PostgreSQLConnector
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table
from tests.support import jdbc
from tests.support.databases import MYSQL_ADMIN_URL
from tests.support.servers import free_port


@pytest.fixture(params=["jdbc_postgresql", "jdbc_mysql"])
def engine(request):
    return request.getfixturevalue(f"{request.param}_connector")


def another(engine, **changed):
    """A second connector on the same catalog's engine, with some properties changed."""
    kind = type(engine)
    return kind(CatalogContext("lake", "jd", {**engine.context.properties, **changed}))


def admin_run(engine, *statements):
    provider = "jdbc-postgresql" if engine.kind == "postgresql" else "jdbc-mysql"
    admin = jdbc.admin_engine(provider, engine.context.properties)
    try:
        with admin.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        admin.dispose()


def q(engine, *names):
    quote = '"' if engine.kind == "postgresql" else "`"
    return ".".join(f"{quote}{n}{quote}" for n in names)


@pytest.mark.parametrize("kind", [PostgreSQLConnector, MySQLConnector])
def test_an_engine_nobody_answers_at_is_unreachable_never_empty(kind):
    port = free_port()
    url = f"jdbc:postgresql://127.0.0.1:{port}/db" if kind is PostgreSQLConnector else f"jdbc:mysql://127.0.0.1:{port}"
    connector = kind(CatalogContext("lake", "x", {"jdbc-url": url, "jdbc-driver": "d", "jdbc-database": "db",
                                                  "jdbc-user": "u", "jdbc-password": "p"}))
    for call in (connector.list_schemas, lambda: connector.list_tables("s"), connector.test_connection,
                 lambda: connector.create_schema(Schema("s"), fence=Fence("/c1.1", 3)),
                 lambda: connector.fence_barrier(Fence("/c1.1", 3))):
        with pytest.raises(errors.EngineUnreachable, match="nothing"):
            call()
    connector.close()


def test_a_login_the_engine_refuses_is_unreachable(engine):
    if engine.kind == "postgresql":  # trust authentication here: an unknown role is what it refuses
        refused = another(engine, **{"jdbc-user": f"no_role_{uuid.uuid4().hex[:6]}"})
    else:
        refused = another(engine, **{"jdbc-password": "certainly wrong"})
    with pytest.raises(errors.EngineUnreachable, match="nothing was changed"):
        refused.list_schemas()
    refused.close()


def test_a_postgresql_database_that_does_not_exist_is_unreachable(jdbc_postgresql_connector):
    missing = f"gm_test_missing_{uuid.uuid4().hex[:8]}"
    url = jdbc_postgresql_connector.context.properties["jdbc-url"].rsplit("/", 1)[0] + f"/{missing}"
    connector = another(jdbc_postgresql_connector, **{"jdbc-url": url, "jdbc-database": missing})
    with pytest.raises(errors.EngineUnreachable, match="does not exist"):
        connector.list_schemas()
    connector.close()


def test_gravimetas_fence_schema_is_no_user_schema(engine, name):
    fence_home = "gravimeta_fence" if engine.kind == "postgresql" else engine.fence_database
    schema = name("user")
    engine.create_schema(Schema(schema))
    assert schema in engine.list_schemas() and fence_home not in engine.list_schemas()
    with pytest.raises(errors.NoSuchSchema):
        engine.load_schema(fence_home)
    with pytest.raises(errors.NoSuchSchema):
        engine.list_tables(fence_home)
    with pytest.raises(errors.NoSuchSchema):
        engine.create_table(fence_home, Table("t", [Column("id", "integer")]))
    with pytest.raises(errors.IllegalArgument, match="reserved"):
        engine.create_schema(Schema(fence_home))
    assert engine.drop_schema(fence_home, cascade=True, fence=Fence("/c1.1", 2)) is False
    engine.fence_barrier(Fence("/c1.1", 3))  # still there, still checking: a lower token is refused
    with pytest.raises(errors.StaleFence):
        engine.fence_barrier(Fence("/c1.1", 2))


def test_a_fenced_call_without_the_fence_schema_is_not_sent_until_it_is_made_again(engine, name):
    schema = name("s")
    if engine.kind == "postgresql":
        admin_run(engine, "DROP SCHEMA gravimeta_fence CASCADE")
    else:
        admin_run(engine, f"DROP DATABASE {q(engine, engine.fence_database)}")
    with pytest.raises(errors.EngineUnreachable, match="nothing was sent"):
        engine.create_schema(Schema(schema), fence=Fence("/c1.1", 4))
    assert schema not in engine.list_schemas()
    again = another(engine)  # a catalog's first use (or a change of its properties) asks for the identity
    assert again.engine_identity() is not None
    engine.create_schema(Schema(schema), fence=Fence("/c1.1", 4))
    assert schema in engine.list_schemas()
    again.close()


def test_a_user_without_the_privilege_is_forbidden(engine, name):
    role = f"gm_test_role_{uuid.uuid4().hex[:8]}"
    if engine.kind == "postgresql":
        admin_run(engine, f"CREATE ROLE {role} LOGIN", f"GRANT CONNECT ON DATABASE {q(engine, engine.settings.database)} TO {role}")
        limited = another(engine, **{"jdbc-user": role})
    else:
        admin_run(engine, f"CREATE USER '{role}'@'%' IDENTIFIED BY 'pw'", f"CREATE USER '{role}'@'localhost' IDENTIFIED BY 'pw'")
        limited = another(engine, **{"jdbc-user": role, "jdbc-password": "pw"})
    try:
        with pytest.raises(errors.Forbidden):
            limited.create_schema(Schema(name("denied")))
    finally:
        limited.close()
        if engine.kind == "postgresql":
            admin_run(engine, f"REVOKE ALL ON DATABASE {q(engine, engine.settings.database)} FROM {role}", f"DROP ROLE {role}")
        else:
            admin_run(engine, f"DROP USER '{role}'@'%'", f"DROP USER '{role}'@'localhost'")


def test_a_call_waits_for_a_free_connection_at_most_the_pool_wait_or_its_deadline(engine, name):
    small = another(engine, **{"jdbc.pool.min-size": "1", "jdbc.pool.max-size": "1", "jdbc.pool.max-wait-ms": "400"})
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with small.pool.raw(time.monotonic() + 30, "a held connection"):
            taken.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(10)
    try:
        started = time.monotonic()
        with pytest.raises(errors.EngineUnreachable, match="max-size 1"):
            small.list_schemas()
        assert 0.35 < time.monotonic() - started < 3
        started = time.monotonic()
        with pytest.raises(errors.EngineUnreachable):
            small.create_schema(Schema(name("s")), fence=Fence("/c1.1", 1, deadline=time.monotonic() + 0.1))
        assert time.monotonic() - started < 0.35  # the deadline, shorter than the pool's wait
    finally:
        release.set()
        holder.join(10)
    assert name("s") not in small.list_schemas()  # and the pool serves again
    small.close()


def test_a_statement_blocked_by_another_session_ends_by_the_calls_deadline(engine, name):
    """Another session holds the table; the call's lock wait is bounded by its deadline (PostgreSQL's
    lock_timeout; MySQL's lock_wait_timeout, in whole seconds) and nothing is changed."""
    schema = name("blocked")
    engine.create_schema(Schema(schema))
    engine.create_table(schema, Table("t", [Column("id", "integer")]))
    provider = "jdbc-postgresql" if engine.kind == "postgresql" else "jdbc-mysql"
    admin = jdbc.admin_engine(provider, engine.context.properties)
    with admin.connect() as blocker:
        if engine.kind == "postgresql":
            blocker.execute(text(f"LOCK TABLE {q(engine, schema, 't')} IN ACCESS EXCLUSIVE MODE"))
        else:
            blocker.execute(text(f"LOCK TABLES {q(engine, schema, 't')} WRITE"))
        started = time.monotonic()
        with pytest.raises(errors.GravitinoError) as ended:
            engine.drop_table(schema, "t", fence=Fence("/c1.1", 1, deadline=time.monotonic() + 1.0))
        took = time.monotonic() - started
        assert isinstance(ended.value, errors.EngineUnreachable | errors.StaleFence), ended.value
        assert took < 3.0, took  # the deadline (MySQL: up to 1.5 s more, its whole seconds) and no more
        blocker.rollback() if engine.kind == "postgresql" else blocker.execute(text("UNLOCK TABLES"))
    admin.dispose()
    assert engine.list_tables(schema) == ["t"]


def test_one_catalogs_calls_wait_for_each_other_but_not_for_another_catalogs(jdbc_mysql_connector, name):
    """MySQL: the named lock is the catalog's; a call of another catalog on the same server does not wait."""
    schema = name("locks")
    jdbc_mysql_connector.create_schema(Schema(schema))
    url = make_url(MYSQL_ADMIN_URL)
    holder = create_engine(url, poolclass=NullPool)
    from connectors.jdbc.myfences import lock_name

    with holder.connect() as conn:
        assert conn.execute(text("SELECT GET_LOCK(:n, 1)"), {"n": lock_name("/c1.1")}).scalar() == 1
        started = time.monotonic()
        with pytest.raises(errors.EngineUnreachable, match="busy with another call"):
            jdbc_mysql_connector.create_table(schema, Table("t", [Column("id", "integer")]),
                                              fence=Fence("/c1.1/s2.2", 1, deadline=time.monotonic() + 0.5))
        assert time.monotonic() - started < 2
        jdbc_mysql_connector.create_table(schema, Table("t", [Column("id", "integer")]), fence=Fence("/c9.9/s2.2", 1))
    holder.dispose()
    assert jdbc_mysql_connector.list_tables(schema) == ["t"]

