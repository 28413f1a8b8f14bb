"""Which gravimeta each replica runs: every worker writes the schema revision of its code (its Alembic
head) into its node row, and /api/admin/locks, `gravimeta locks` and the console show it; live replicas
at different revisions (a rolling upgrade under way, or a worker of code from before the registry
recorded it) are a warning until they agree."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import insert

from gravimeta.app import create_app
from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.node_registry import NodeRegistry, list_nodes
from gravimeta.concurrency.replica_safety import store_warnings
from gravimeta.concurrency.tables import node
from gravimeta.config import Settings
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import head_revision
from tests.ops.test_store_target import gravimeta

ON = {"distributed_lock_enabled": True, "distributed_lock_backend": "LEASE_TABLE"}


def _old_code_row(engine, node_id: str) -> None:
    """The row a worker of code before the revision column writes: no schema_revision."""
    now = db_now(dialect_of(engine))
    with engine.begin() as conn:
        conn.execute(insert(node).values(node_id=node_id, host="h", pid=1, lock_enabled=True, backend="LEASE_TABLE",
                                         heartbeat_at=now, started_at=now))


def test_the_admin_endpoint_shows_each_workers_revision_and_warns_while_they_differ(sqlite_url):
    client = create_app(Settings(store_url=sqlite_url, **ON)).test_client()
    body = client.get("/api/admin/locks").get_json()
    assert [n["schemaRevision"] for n in body["nodes"]] == [head_revision()]
    assert body["warnings"] == []  # one replica: nothing to disagree with

    engine = create_store_engine(sqlite_url)
    try:
        NodeRegistry(engine, "replica-old", True, "LEASE_TABLE", 90_000, schema_revision="0017").register()
        _old_code_row(engine, "replica-older:7")
        body = client.get("/api/admin/locks").get_json()
        this = next(n["node"].rsplit(":", 1)[0] for n in body["nodes"] if n["schemaRevision"] == head_revision())
        assert sorted((n["node"].rsplit(":", 1)[0], n["schemaRevision"]) for n in body["nodes"]) == sorted(
            [(this, head_revision()), ("replica-old", "0017"), ("replica-older", None)])
        [warning] = body["warnings"]
        assert warning.startswith(f"mixed rollout: live replicas run code of different schema revisions (0017 on "
                                  f"replica-old; {head_revision()} on {this}; before 0018 on replica-older)"), warning
        assert store_warnings([n for n in list_nodes(engine) if n["schemaRevision"] == head_revision()]) == []
    finally:
        engine.dispose()


def test_gravimeta_locks_prints_each_workers_revision(sqlite_url, tmp_path: Path):
    engine = create_store_engine(sqlite_url)
    try:
        for name, revision in (("new", head_revision()), ("old", "0017")):
            NodeRegistry(engine, name, False, "NONE", 90_000, schema_revision=revision).register()
    finally:
        engine.dispose()
    shown = gravimeta("--store-url", sqlite_url, "locks", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any(line.startswith("mixed rollout: live replicas run code of different schema revisions") for line in lines)
    workers = [line.split() for line in lines if line.startswith("  new:") or line.startswith("  old:")]
    assert [(w[0].split(":")[0], w[4]) for w in workers] == [("new", f"revision={head_revision()}"),
                                                             ("old", "revision=0017")], shown.stdout
