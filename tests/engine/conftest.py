"""The engine half under the claim, with real processes: gunicorn replicas on one PostgreSQL or
MariaDB database (SQLite where a case needs it), the hive stub, `sqlite` catalog files under one root,
and failpoints (gravimeta/failpoints.py) to stop a replica exactly between two steps.

A replica is paused past its lease by stopping its whole process group (SIGSTOP: the heartbeat thread
stops too, so its lease really expires), after a failpoint or a hung stub call has put it where the
test wants it. Every wait is bounded; every process is stopped (and continued first) at the end.
GRAVIMETA_HA_DISABLE (tests/ha/conftest.py) reaches the replicas through the environment: with
`engine_fence` their engine calls carry no fence, which is how the zombie tests are shown failing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, select

from connectors.base import CatalogContext, Connector
from connectors.hive import HiveConnector
from connectors.sqlite import SQLiteCatalogConnector
from gravimeta.demo.client import COLUMNS, Replica
from gravimeta.store.database import create_store_engine
from gravimeta.store.journal import operation_journal
from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

REPO = Path(__file__).resolve().parents[2]
TTL_MS = 2000
FLAG_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": str(TTL_MS), "GRAVIMETA_CLAIM_TIMEOUT_MS": "15000"}
M, C, S = "m", "c", "s"


@pytest.fixture(params=["postgresql", "mysql"])
def shared_db(request, tmp_path) -> Iterator[str]:
    """A fresh migrated database on PostgreSQL and on MariaDB."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        yield url


def path_of(*levels: str) -> str:
    """/api/metalakes/m[/catalogs/c[/schemas/s[/tables/t]]], each name quoted."""
    kinds = ["metalakes", "catalogs", "schemas", "tables"]
    return "/api/" + "/".join(f"{kind}/{quote(name, safe='')}" for kind, name in zip(kinds, levels, strict=False))


@dataclass
class Cluster:
    """Replicas of one database with a shared sqlite catalog root, failpoints, and checks."""

    db_url: str
    tmp_path: Path
    env: dict[str, str] = field(default_factory=dict)
    servers: dict[str, ServerProcess] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.tmp_path / "sqlite-catalogs"
        self.home = self.tmp_path / "home"
        self.root.mkdir(exist_ok=True)
        self.home.mkdir(exist_ok=True)
        self.fp = Failpoints(self.tmp_path / "fp")
        self.engine: Engine = create_store_engine(self.db_url)

    def base_env(self) -> dict[str, str]:
        """The server's configuration, for the replicas and for `gravimeta repair`."""
        return {**FLAG_ON, "GRAVIMETA_SQLITE_CATALOG_ROOT": str(self.root), "GRAVIMETA_HOME": str(self.home),
                **self.env}

    def replica(self, name: str, **env: str) -> Replica:
        return self.replicas(name, **env)[0]

    def replicas(self, *names: str, **env: str) -> list[Replica]:
        """Start replicas with these names (and the same extra settings) side by side."""
        started = [ServerProcess(self.db_url, workers=1, log_path=self.tmp_path / f"{name}.log",
                                 env={**self.base_env(), "GRAVIMETA_NODE_ID": name, **self.fp.env(name), **env})
                   for name in names]
        self.servers.update(zip(names, started, strict=True))
        start_all(*started)
        return [Replica(server.url, name, timeout=60) for name, server in zip(names, started, strict=True)]

    def pause(self, name: str) -> None:
        """SIGSTOP the replica's process group, and return once every thread of it has stopped: the kernel
        stops a process's threads only as each gets to run, so one may still take a step meanwhile (get
        past a failpoint just resumed, take a lock) after killpg has returned."""
        group = self.servers[name].process.pid  # type: ignore[union-attr]
        os.killpg(group, signal.SIGSTOP)
        for pid in group_members(group):
            wait_stopped(pid)

    def resume(self, name: str) -> None:
        os.killpg(self.servers[name].process.pid, signal.SIGCONT)  # type: ignore[union-attr]

    def kill(self, name: str) -> None:
        self.servers[name].stop(signal.SIGKILL)

    def open_intents(self) -> list[Any]:
        j = operation_journal.c
        with self.engine.connect() as conn:
            return list(conn.execute(select(j.id, j.scope_path, j.operation, j.state, j.detail).order_by(j.id)))

    def repair_command(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
                       ) -> subprocess.CompletedProcess[str]:
        """`gravimeta repair` as an operator runs it: its own process, the given environment."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GRAVIMETA_")}
        environment.update(self.base_env() if env is None else env)
        environment["PYTHONPATH"] = str(REPO)
        return subprocess.run([sys.executable, "-m", "gravimeta", "--store-url", self.db_url, "repair", *args],
                              env=environment, cwd=cwd or self.tmp_path, capture_output=True, text=True, timeout=120)

    def stop(self) -> None:
        """End of the test: the replicas are killed (paused ones too), not shut down gracefully; the
        test's database is dropped next."""
        self.fp.clear()
        discard(*self.servers.values())
        self.engine.dispose()


@pytest.fixture
def cluster_of(tmp_path) -> Iterator[Callable[[str], Cluster]]:
    made: list[Cluster] = []

    def make(db_url: str, **env: str) -> Cluster:
        made.append(Cluster(db_url, tmp_path, dict(env)))
        return made[-1]

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()


@pytest.fixture
def cluster(shared_db, cluster_of) -> Cluster:
    return cluster_of(shared_db)


class Api:
    """The structural calls the tests make, each answering (status, body)."""

    def __init__(self, replica: Replica):
        self.r = replica

    def metalake(self, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("POST", "/api/metalakes", {"name": m, "properties": {}})

    def catalog(self, provider: str, properties: dict[str, str], c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("POST", f"{path_of(m)}/catalogs", {
            "name": c, "type": "relational", "provider": provider, "comment": None, "properties": properties})

    def drop_catalog(self, c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("DELETE", f"{path_of(m, c)}?force=true")

    def schema(self, s: str = S, c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("POST", f"{path_of(m, c)}/schemas", {"name": s, "comment": None, "properties": {}})

    def drop_schema(self, s: str = S, c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("DELETE", f"{path_of(m, c, s)}?cascade=true")

    def table(self, t: str, s: str = S, c: str = C, m: str = M, comment: str | None = None) -> tuple[int, dict[str, Any]]:
        return self.r.request("POST", f"{path_of(m, c, s)}/tables",
                              {"name": t, "comment": comment, "columns": COLUMNS, "properties": {}})

    def drop_table(self, t: str, s: str = S, c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("DELETE", path_of(m, c, s, t))

    def rename_table(self, t: str, new: str, s: str = S, c: str = C, m: str = M) -> tuple[int, dict[str, Any]]:
        return self.r.request("PUT", path_of(m, c, s, t), {"updates": [{"@type": "rename", "newName": new}]})

    def tables(self, s: str = S, c: str = C, m: str = M) -> list[str]:
        status, body = self.r.request("GET", f"{path_of(m, c, s)}/tables")
        assert status == 200, body
        return sorted(i["name"] for i in body["identifiers"])

    def schemas(self, c: str = C, m: str = M) -> list[str]:
        status, body = self.r.request("GET", f"{path_of(m, c)}/schemas")
        assert status == 200, body
        return sorted(i["name"] for i in body["identifiers"])


def ok(answer: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    status, body = answer
    assert status == 200, body
    return body


def sqlite_properties() -> dict[str, str]:
    return {"path": "cat.db", "busy-timeout-ms": "1000"}


def hive_properties(stub: Any) -> dict[str, str]:
    return {"metastore.uris": stub.uri, "client.timeout-ms": "1500"}


def engine_of(cluster: Cluster, provider: str, properties: dict[str, str], monkeypatch: Any, c: str = C) -> Connector:
    """A connector on the catalog's engine, to read what it really has."""
    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(cluster.root))
    context = CatalogContext(M, c, properties)
    return SQLiteCatalogConnector(context) if provider == "sqlite" else HiveConnector(context)


def in_background(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def wait_until(what: str, condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout}s")


@pytest.fixture
def stub(tmp_path) -> Iterator[Any]:
    """A hive stub of this test alone (its databases and fences start empty)."""
    from tests.connectors.stub_process import StubProcess

    process = StubProcess(tmp_path / "hive-stub").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def sqlite_db_cluster(tmp_path, cluster_of) -> Iterator[Cluster]:
    """A cluster whose replicas share one SQLite database file (the lease table works there too)."""
    with fresh_database("sqlite", tmp_path) as url:
        yield cluster_of(url)


def group_members(group: int) -> list[int]:
    """The processes of process group `group` (from /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group:  # after the command: state, ppid, pgrp
                members.append(int(entry))
    return members


def wait_stopped(pid: int, timeout: float = 10.0) -> None:
    """Until every thread of `pid` is stopped (or the process is gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = []
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/status") as status:
                    states += [line.split()[1] for line in status if line.startswith("State:")]
        except OSError:
            return
        if all(state in ("T", "t", "Z", "X") for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} not stopped within {timeout}s")


def setup_catalog(cluster: Cluster, provider: str, properties: dict[str, str]) -> tuple[Api, Api]:
    """Replicas a and b, with metalake m, catalog c of `provider` and schema s made through b."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog(provider, properties))
    ok(b.schema())
    return a, b
