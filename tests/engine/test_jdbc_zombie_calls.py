"""A paused replica's late DDL cannot land after the next holder's work, on the JDBC engines gravimeta does
not own: PostgreSQL refuses it itself, in the transaction of the DDL; MySQL/MariaDB makes the barrier
wait for a call that passed its check, and ends the session of one paused there.

Replica A starts dropping table t; its call stops at a failpoint inside the JDBC connector; A is
SIGSTOPped past its lease. Replica B then drops t (its repair first makes the engine see B's fence,
then looks: A's drop has not landed, so A's intent is rolled back) and creates t again. When A goes on,
its drop must not remove B's t: the store and the engine keep B's table, no intent is left, and A's
answer is true (502 "outcome unknown": a repair settled its intent, A cannot tell which way).

Where A stops, and what keeps its drop out:
  jdbc.before_begin   (both) before its transaction or named lock: the fence check in the engine refuses
                      it (StaleFence from the database, named in A's answer). GRAVIMETA_HA_DISABLE=
                      jdbc_fence_check (the engines neither check nor record fences) makes A's drop land:
                      the store has t, the engine does not.
  jdbc.before_commit  (PostgreSQL) past its check and its DROP, before COMMIT, holding the fence rows' and
                      the table's locks: PostgreSQL ends A's session when it has been idle in its
                      transaction as long as A's claim had left (idle_in_transaction_session_timeout),
                      the transaction rolls back, B's barrier gets the locks. jdbc_session_timeout (no
                      such limit) leaves B waiting behind A until its own claim runs out: B's drop fails.
  jdbc.after_check    (MariaDB) holding the catalog's named lock, its fence recorded, its DROP not sent:
                      the server ends A's session after wait_timeout (what A's claim had left, whole
                      seconds), which releases the lock; A's DROP, sent later, finds no session.
                      jdbc_session_timeout leaves B's barrier waiting for the lock until its claim runs out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from connectors.base import CatalogContext
from connectors.jdbc.mysql import MySQLConnector
from connectors.jdbc.postgresql import PostgreSQLConnector
from tests.conftest import require_backend
from tests.engine.conftest import Api, in_background, ok
from tests.engine.test_zombie_engine_calls import assert_a_true_unknown_outcome
from tests.support import jdbc
from tests.support.databases import fresh_database

ENGINE_NAME = {"jdbc-postgresql": "PostgreSQL", "jdbc-mysql": "MySQL"}


@pytest.fixture(params=jdbc.PROVIDERS)
def provider(request) -> str:
    require_backend(jdbc.BACKEND[request.param])
    return request.param


@pytest.fixture
def store_and_engine(provider, tmp_path, cluster_of) -> Iterator[tuple]:
    """Replicas on a store of the engine's own backend, the catalog properties of a fresh engine, and the
    schema of the test (on MariaDB a database of the whole server: a name of its own, dropped after)."""
    schema = "s" if provider == "jdbc-postgresql" else f"zombie_{uuid.uuid4().hex[:12]}"
    with fresh_database(jdbc.BACKEND[provider], tmp_path) as url, jdbc.target(provider, tmp_path) as properties:
        try:
            yield cluster_of(url), properties, schema
        finally:
            if provider == "jdbc-mysql":
                jdbc.drop_mysql_databases(schema)


def engine_of(provider: str, properties: dict[str, str]):
    kind = PostgreSQLConnector if provider == "jdbc-postgresql" else MySQLConnector
    return kind(CatalogContext("m", "c", properties))


def zombie_drop(cluster, provider: str, properties: dict[str, str], point: str, schema: str) -> tuple[list, object]:
    """A's drop of t, stopped at `point` and paused; B drops t and creates it again; then A goes on. Checks
    that the store and the engine keep B's t and that no intent is left; (A's answer, replica b)."""
    a, b = setup_catalog_in(cluster, provider, properties, schema)
    ok(b.table("t", s=schema))
    cluster.fp.arm(point, tag="a")
    thread, late = in_background(lambda: a.drop_table("t", s=schema))
    reached = cluster.fp.wait_reached(point, tag="a")
    cluster.pause("a")
    cluster.fp.resume(reached)  # it goes on only once continued
    try:
        assert ok(b.drop_table("t", s=schema))["dropped"] is True  # waits out A's lease, fences A out
        ok(b.table("t", s=schema))
    finally:
        cluster.resume("a")
    thread.join(60)
    assert late, "A never answered"
    engine = engine_of(provider, properties)
    try:
        assert b.tables(s=schema) == engine.list_tables(schema) == ["t"]
    finally:
        engine.close()
    assert cluster.open_intents() == []
    return late, b


def setup_catalog_in(cluster, provider, properties, schema):
    """Replicas a and b, with metalake m, catalog c of `provider` and `schema` made through b."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog(provider, properties))
    ok(b.schema(schema))
    return a, b


@pytest.mark.slow
def test_a_zombie_drop_paused_before_its_check_is_refused_by_the_engine_itself(store_and_engine, provider):
    cluster, properties, schema = store_and_engine
    late, _ = zombie_drop(cluster, provider, properties, "jdbc.before_begin", schema)
    assert_a_true_unknown_outcome(late[0])
    message = late[0][1]["message"]
    assert f"{ENGINE_NAME[provider]} at" in message and "refused a call on" in message, message  # the engine's StaleFence


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["jdbc-postgresql"], indirect=True)  # MySQL has no transaction around DDL
def test_a_zombie_paused_before_its_commit_is_rolled_back_by_postgresql(store_and_engine, provider):
    cluster, properties, schema = store_and_engine
    late, _ = zombie_drop(cluster, provider, properties, "jdbc.before_commit", schema)
    assert_a_true_unknown_outcome(late[0])  # its COMMIT found its session ended


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["jdbc-mysql"], indirect=True)  # PostgreSQL checks in the DDL's transaction
def test_a_zombie_paused_after_its_check_loses_its_session_and_its_lock_on_mariadb(store_and_engine, provider):
    cluster, properties, schema = store_and_engine
    late, _ = zombie_drop(cluster, provider, properties, "jdbc.after_check", schema)
    assert_a_true_unknown_outcome(late[0])  # its DROP found its session ended
