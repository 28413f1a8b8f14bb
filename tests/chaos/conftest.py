"""Chaos tests: real gunicorn replicas on one PostgreSQL or MariaDB database, with a replica killed,
paused, or cut off from the database (tests/support/tcp_proxy.py), and the history checker
(gravimeta/demo/history.py) on what the clients were told. Loopback only; every wait is bounded and
every process is killed in `finally`.

How a structural operation is held open on purpose: the claim is taken before the operation reads
its catalog (claim, TreeLock, then the work), so a test that holds an exclusive table
lock on gm_catalog (PostgreSQL LOCK TABLE ... ACCESS EXCLUSIVE, MariaDB LOCK TABLES ... WRITE) in its
own database makes the replica hold its claim while it waits. No test-only code in the server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, select, text

from gravimeta.concurrency.tables import scope_lease
from gravimeta.demo.client import Recorder, Replica
from gravimeta.demo.history import CatalogState, History, Op, check
from gravimeta.demo.state import read_api, read_sql
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.servers import ServerProcess, discard

TTL_MS = 2000
HEARTBEAT_S = TTL_MS / 3000
FLAG_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": str(TTL_MS), "GRAVIMETA_CLAIM_TIMEOUT_MS": "10000"}
METALAKE, CATALOG, SCHEMA = "m", "c", "s"


def wait_until(what: str, condition: Callable[[], Any], timeout: float = 15.0, every: float = 0.05) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout}s")


@pytest.fixture(params=["postgresql", "mysql"])
def chaos_db(request, tmp_path) -> Iterator[str]:
    """A fresh migrated database on PostgreSQL and on MariaDB (the chaos tests skip SQLite)."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


@dataclass
class Cluster:
    """Replicas started by a test, a history, and helpers; everything is stopped at the end."""

    db_url: str
    tmp_path: Any
    servers: list[ServerProcess] = field(default_factory=list)
    history: History = field(default_factory=History)

    def __post_init__(self) -> None:
        self.recorder = Recorder(self.history, METALAKE)
        self.engine: Engine = create_store_engine(self.db_url)

    def replica(self, name: str, store_url: str | None = None, **env: str) -> tuple[ServerProcess, Replica]:
        server = ServerProcess(store_url or self.db_url, workers=1, log_path=self.tmp_path / f"{name}.log",
                               env={**FLAG_ON, "GRAVIMETA_NODE_ID": name, **env})
        self.servers.append(server)
        server.start()
        return server, Replica(server.url, name, timeout=30)

    def setup_tree(self, replica: Replica) -> None:
        assert replica.request("POST", "/api/metalakes", {"name": METALAKE, "properties": {}})[0] == 200
        status, body = replica.request("POST", f"/api/metalakes/{METALAKE}/catalogs", {
            "name": CATALOG, "type": "relational", "provider": "memory", "comment": None, "properties": {}})
        assert status == 200, body
        assert self.recorder.create_schema(replica, CATALOG, SCHEMA).outcome == "ok"

    def claims_of(self, node: str) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.scalars(select(scope_lease.c.scope_path).where(scope_lease.c.holder_id.like(f"{node}:%"))))

    def final_check(self, replica: Replica):
        state = CatalogState("memory", engine_note="memory catalog: no external engine")
        read_api(replica, METALAKE, CATALOG, state)
        read_sql(self.engine, METALAKE, CATALOG, state)
        return check(self.history, {CATALOG: state}), state

    def stop(self) -> None:
        """End of the test: the replicas are killed (paused ones too); the database is dropped next."""
        discard(*self.servers)
        self.engine.dispose()


@pytest.fixture
def cluster(chaos_db, tmp_path) -> Iterator[Cluster]:
    c = Cluster(chaos_db, tmp_path)
    try:
        yield c
    finally:
        c.stop()


@contextmanager
def catalog_table_locked(db_url: str) -> Iterator[Callable[[], None]]:
    """Hold an exclusive lock on gm_catalog (reads wait too) until the yielded release() or the end."""
    engine = create_engine(db_url)
    conn = engine.connect()
    released = threading.Event()

    def release() -> None:
        if released.is_set():
            return
        released.set()
        if engine.dialect.name == "postgresql":
            conn.rollback()
        else:
            conn.exec_driver_sql("UNLOCK TABLES")
            conn.commit()

    try:
        if engine.dialect.name == "postgresql":
            conn.execute(text("LOCK TABLE gm_catalog IN ACCESS EXCLUSIVE MODE"))
        else:
            conn.exec_driver_sql("LOCK TABLES gm_catalog WRITE")
        yield release
    finally:
        try:
            release()
        finally:
            conn.close()
            engine.dispose()


def in_background(fn: Callable[[], Op]) -> tuple[threading.Thread, list[Op]]:
    """Run one recorded request in a thread; the list receives its Op."""
    out: list[Op] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out
