"""Chaos tests: real gunicorn replicas on one PostgreSQL or MariaDB database, with a replica killed,
paused, or cut off from the database (tests/support/tcp_proxy.py), and the history checker
(gravimeta/demo/history.py) on what the clients were told. Loopback only; every wait is bounded and
every process is killed in `finally`.

How a structural operation is held open on purpose: the claim is taken before the operation reads
its catalog (claim, TreeLock, then the work), so a test that holds an exclusive table
lock on gm_catalog (PostgreSQL LOCK TABLE ... ACCESS EXCLUSIVE, MariaDB LOCK TABLES ... WRITE) in its
own database makes the replica hold its claim while it waits. No test-only code in the server.

Every replica notes the fence of each claim its operations run under (failpoint `claim.after_grant`,
action `note`: it does not change the timing), so a test can tell a resumed holder's commit under its
stolen claim (a zombie) from a commit under a claim it took again after the stealer (judge_resumed_holder).
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
from tests.support.failpoints import Failpoints
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
        self.fp = Failpoints(self.tmp_path / "fp")
        self.fp.arm("claim.after_grant", "note", once=False)  # every replica notes its claims' fences

    def replica(self, name: str, store_url: str | None = None, **env: str) -> tuple[ServerProcess, Replica]:
        server = ServerProcess(store_url or self.db_url, workers=1, log_path=self.tmp_path / f"{name}.log",
                               env={**FLAG_ON, "GRAVIMETA_NODE_ID": name, **self.fp.env(name), **env})
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

    def fences(self, node: str, scope: str) -> list[int]:
        """The fences of the claims on `scope` that replica `node`'s operations ran under, oldest first
        (its notes at claim.after_grant: a grant given back as spent is not handed to an operation)."""
        return [int(n["fence"]) for n in self.fp.notes("claim.after_grant", node) if n["scope"] == scope]

    def final_check(self, replica: Replica):
        state = CatalogState("memory", engine_note="memory catalog: no external engine")
        read_api(replica, METALAKE, CATALOG, state)
        read_sql(self.engine, METALAKE, CATALOG, state)
        return check(self.history, {CATALOG: state}), state

    def stop(self) -> None:
        """End of the test: the replicas are killed (paused ones too); the database is dropped next."""
        self.fp.clear()
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


def judge_resumed_holder(late: Op, holder_fences: list[int], stealer_fence: int, tables: list[str],
                         own: str, stealers: str) -> str:
    """What makes a resumed holder's answer safe, judged by the fence its commit carried, not by the
    order of the answers: its claim was stolen (by the claim of fence `stealer_fence`, which created
    table `stealers`) while it was paused, so its create of `own` either
    - is refused, 409 FenceLost, and the store has only the stealer's table ("refused"); or
    - committed under a claim granted AFTER the stealer's (a greater fence: on resuming it found its
      grant spent, gave it back and claimed again once the stealer was done, scope_lease._born_spent),
      so it is ordered after the stealer, and both tables stand ("claimed again").
    An acknowledged commit under the stolen claim (its fence below the stealer's) is a zombie commit:
    AssertionError. `holder_fences`: the fences of the claims its operation ran under (Cluster.fences)."""
    if late.status == 409:
        assert late.body is not None and late.body.get("type") == "FenceLostException", late.describe()
        assert tables == [stealers], f"refused, yet the store has {tables}"
        return "refused"
    assert late.status == 200, late.describe()
    assert holder_fences, "an acknowledged create ran under no claim"
    fence = holder_fences[-1]
    assert fence > stealer_fence, (f"ZOMBIE COMMIT: {late.describe()} was acknowledged under fence {fence}, the "
                                   f"claim taken over by fence {stealer_fence}")
    assert sorted(tables) == sorted([own, stealers]), f"claimed again and acknowledged, yet the store has {tables}"
    return "claimed again"


def in_background(fn: Callable[[], Op]) -> tuple[threading.Thread, list[Op]]:
    """Run one recorded request in a thread; the list receives its Op."""
    out: list[Op] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out
