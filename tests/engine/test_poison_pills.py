"""A value the store cannot hold must not block a catalog forever.

The store here refuses a value through a trigger (what the edge's own checks cannot know about: an
operator's rule, a column the edge does not model): a table whose comment is 'poison-pill' (a data
exception, SQLSTATE 22023 on PostgreSQL, error 1406 on MariaDB, RAISE(ABORT) on SQLite), and the drop of
a table named 'keep'. Before, the engine created the table, the store refused it with a 500, the intent
stayed open, and every later operation on that schema (and `gravimeta repair`) failed on it.

Now a store error that proves the change cannot apply settles the intent: the engine step is undone
(the created table dropped) and the client gets a 400. Where the engine step cannot be undone (a drop),
the intent is marked stuck and reported, and neither later operations nor the repair of other intents
stop on it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, engine_of, ok, sqlite_properties
from tests.support.databases import BACKENDS, fresh_database

POISON = "poison-pill"
TRIGGERS = {
    "postgresql": [
        """CREATE FUNCTION gm_test_refuse() RETURNS trigger AS $$ BEGIN
             IF TG_OP = 'INSERT' AND NEW.comment = 'poison-pill' THEN
               RAISE EXCEPTION 'this store refuses the comment poison-pill' USING ERRCODE = '22023'; END IF;
             IF TG_OP = 'DELETE' AND OLD.name = 'keep' THEN
               RAISE EXCEPTION 'this store refuses to drop keep' USING ERRCODE = '22023'; END IF;
             IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
             RETURN NEW; END $$ LANGUAGE plpgsql""",
        "CREATE TRIGGER gm_test_refuse BEFORE INSERT OR DELETE ON gm_table FOR EACH ROW EXECUTE FUNCTION gm_test_refuse()",
    ],
    "mysql": [
        """CREATE TRIGGER gm_test_refuse_insert BEFORE INSERT ON gm_table FOR EACH ROW BEGIN
             IF NEW.comment = 'poison-pill' THEN
               SIGNAL SQLSTATE '22001' SET MYSQL_ERRNO = 1406, MESSAGE_TEXT = 'this store refuses the comment';
             END IF; END""",
        """CREATE TRIGGER gm_test_refuse_delete BEFORE DELETE ON gm_table FOR EACH ROW BEGIN
             IF OLD.name = 'keep' THEN
               SIGNAL SQLSTATE '22001' SET MYSQL_ERRNO = 1406, MESSAGE_TEXT = 'this store refuses to drop keep';
             END IF; END""",
    ],
    "sqlite": [
        """CREATE TRIGGER gm_test_refuse_insert BEFORE INSERT ON gm_table WHEN NEW.comment = 'poison-pill'
           BEGIN SELECT RAISE(ABORT, 'this store refuses the comment poison-pill'); END""",
        """CREATE TRIGGER gm_test_refuse_delete BEFORE DELETE ON gm_table WHEN OLD.name = 'keep'
           BEGIN SELECT RAISE(ABORT, 'this store refuses to drop keep'); END""",
    ],
}


@pytest.fixture(params=BACKENDS)
def refusing_cluster(request, tmp_path, cluster_of) -> Iterator[Cluster]:
    """Replicas on a database whose gm_table refuses the poison comment and the drop of 'keep'."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        cluster = cluster_of(url)
        with cluster.engine.begin() as conn:
            for statement in TRIGGERS[request.param]:
                conn.execute(text(statement))
        yield cluster


def setup(cluster: Cluster, *schemas: str) -> Api:
    api = Api(cluster.replica("a"))
    ok(api.metalake())
    ok(api.catalog("sqlite", sqlite_properties()))
    for schema in schemas:
        ok(api.schema(schema))
    return api


def crash_after_the_engine(cluster: Cluster, api: Api, call) -> None:
    """The worker dies once the engine has done the call (before its store step): its intent stays."""
    cluster.fp.arm("engine.after_call", "exit", tag="a")
    with pytest.raises(OSError):
        call()


def test_a_create_the_store_refuses_is_undone_in_the_engine_and_answered_400(refusing_cluster, monkeypatch):
    cluster = refusing_cluster
    api = setup(cluster, "s")
    status, body = api.table("p", comment=POISON)
    assert (status, body["type"]) == (400, "IllegalArgumentException"), body
    assert "refused a value" in body["message"] and "undone" in body["message"], body
    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert api.tables() == engine.list_tables("s") == []
    assert cluster.open_intents() == []
    ok(api.table("t"))  # the schema is not blocked
    assert ok(api.drop_table("t"))["dropped"] is True
    assert api.tables() == engine.list_tables("s") == []


def test_gravimeta_repair_settles_what_it_can_reports_what_it_cannot_and_blocks_nothing(refusing_cluster, monkeypatch):
    cluster = refusing_cluster
    api = setup(cluster, "s1", "s2", "s3")
    ok(api.table("keep", s="s3"))
    crash_after_the_engine(cluster, api, lambda: api.table("p", s="s1", comment=POISON))
    crash_after_the_engine(cluster, api, lambda: api.table("q", s="s2"))
    crash_after_the_engine(cluster, api, lambda: api.drop_table("keep", s="s3"))
    assert [i.scope_path for i in cluster.open_intents()] == ["/m/c/s1", "/m/c/s2", "/m/c/s3"]

    result = cluster.repair_command("--settle-seconds", "0")
    assert result.returncode == 1, result.stdout + result.stderr  # it ran to the end, and says one is stuck
    assert "repair: 1 rolled forward, 1 stuck, 1 undone" in result.stdout, result.stdout
    [stuck] = cluster.open_intents()
    assert (stuck.scope_path, stuck.state) == ("/m/c/s3", "stuck") and "cannot be undone" in stuck.detail
    assert f"open: #{stuck.id} drop_table /m/c/s3 stuck" in result.stdout

    engine = engine_of(cluster, "sqlite", sqlite_properties(), monkeypatch)
    assert api.tables("s1") == engine.list_tables("s1") == []  # the poisoned create, undone
    assert api.tables("s2") == engine.list_tables("s2") == ["q"]  # the unrelated intent, rolled forward
    assert (api.tables("s3"), engine.list_tables("s3")) == (["keep"], [])  # stuck: an operator must look

    ok(api.table("t", s="s3"))  # the stuck intent blocks nothing, not even its own scope
    ok(api.table("t", s="s1"))
    assert engine.list_tables("s3") == ["t"]
