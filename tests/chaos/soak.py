"""A bounded randomized soak with a nemesis: 3 gunicorn replicas on one fresh database, the
distributed lock ON with a short lease, a mixed structural workload, faults at random, and the history
checker (gravimeta/demo/history.py) on the final state.

    python -m tests.chaos.soak --db postgresql|mysql --seconds N --seed S --lock LEASE_TABLE|PG_ADVISORY|AUTO

The world: two metalakes (identities MA, MB), MA with a memory, a sqlite and a hive catalog (a hive stub
process), MB with a sqlite and a memory catalog, each with schemas s0..s2. Every metalake and catalog
carries its identity in its comment, so a name can always be mapped back to the object it names.

- Workload threads send to random replicas (directly, so conflicting requests run on different nodes):
  table creates, drops, renames (same and cross schema), table property updates, schema creates and
  cascade drops, each on a catalog picked by identity and addressed by its current name.
- A structure thread swaps catalog names inside a metalake and swaps the two metalakes' names (each swap
  is three renames through a temporary name), then reads the names back from the API: it knows which
  identity each (metalake, catalog) name denoted over time.
- The nemesis SIGSTOPs a worker past the lease TTL and SIGCONTs it, kill -9s a worker (gunicorn starts a
  new one), slows the hive stub down or holds its calls beyond the hive catalog's client timeout, cuts
  the last replica's database connection at a COMMIT (tests/support/tcp_proxy.py), and arms a random
  failpoint (gravimeta/failpoints.py: sleep, pause, fail, raise ScopeBusy, exit) in one replica or all.
- A frozen holder in the other metalake (freeze_holder): pauses armed for one replica at a claim-held
  point for claims in MB only (the first freeze of a run: inside the fenced store transaction, its claim
  row locked) and at claim.after_grant for claims in MA only, one request of each sent through it, and once
  a worker stands at the MB point holding its claim, every worker of that replica SIGSTOPped past the lease
  TTL while the workload (routed around that replica) goes on claiming in MA, and a probe steals the frozen
  MA claim through another replica. It is the nemesis's second action (again until one happened, 3 tries
  at most) and one of its random ones; the summary says how often it happened (or that it never did), what
  the probe and the MA requests overlapping a freeze were answered.
- Every worker runs the background journal repair every BACKGROUND_REPAIR_MS (its passes claim scopes
  and judge intents while the workload and the nemesis run).
- An outsider creates tables and schemas directly in the sqlite and hive engines and GETs them (import);
  the workload drops such objects through gravimeta and drops and re-creates sqlite schemas.
- A mover moves catalogs between engines (tests/chaos/catalog_moves.py): in a metalake of its own, a hive
  catalog is pointed at another hive stub of a pool of its own and dropped (a sqlite catalog, whose path
  is immutable, is dropped on its file), with a drop held in the engine left past its client timeout,
  engines missing their barriers, and a successor catalog on the engine left importing the table the
  held drop is about; then the held drop is let go. Each engine of the pool is compared with the store
  after each cycle and at the end.

At the end: every fault is lifted, `gravimeta repair` settles open journal intents (one left open fails
the run), each sqlite and hive engine is compared with the store's rows (tests/chaos/engine_check.py,
before any API read can import a difference away; the mover's pool too, each engine against every catalog
the store points at it), the final state of
every catalog is read three ways (API, SQL, the engine for sqlite and hive), and the checker runs on
the history attributed to identities. An operation whose interval overlapped a rename of its name may
have hit either object: it counts as a possible removal in each (never as an acknowledged create:
those are checked only when unambiguous). Because kill -9 leaves outcomes unknown, the checker runs with
`uncertain_may_apply` (an uncertain removal may explain a missing result); the strict verdict is printed
too, for information. Latencies are collected per request (p50/p99/max, count over 3 s).

Replay: the seed is printed first; the interleaving still depends on timing, the choices do not.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from connectors.base import CatalogContext, Connector
from connectors.hive_stub.storage import METASTORE_FILE
from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.demo.client import Recorder, Replica, catalog_path
from gravimeta.demo.history import DEFINITE_FAILURE_TYPES, CatalogState, History, Op, Report, Violation, check
from gravimeta.demo.state import MEMORY_NOTE, read_api, read_sql, read_sqlite_engine
from gravimeta.entities import Column, Schema, Table
from gravimeta.store.database import create_store_engine
from gravimeta.store.entity_store import EntityStore
from gravimeta.store.models import CatalogRow, SchemaRow, TableRow
from tests.chaos import catalog_moves, fence_check
from tests.chaos.engine_check import Difference, EngineCatalog, Settled, compare, settle, sqlite_root
from tests.chaos.fence_check import EngineFile, FenceReport, FenceWatch
from tests.connectors.stub_process import StubProcess
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints, Reached
from tests.support.servers import ServerProcess
from tests.support.tcp_proxy import TcpProxy

SCHEMAS = ("s0", "s1", "s2")
TABLES = ("t0", "t1", "t2", "t3")
LOCKS = ("LEASE_TABLE", "PG_ADVISORY", "AUTO")
#: (metalake identity, initial name, [(catalog identity, provider, initial name)])
WORLD = (("MA", "ma", (("MA.memory", "memory", "c0"), ("MA.sqlite", "sqlite", "c1"), ("MA.hive", "hive", "c2"))),
         ("MB", "mb", (("MB.sqlite", "sqlite", "c0"), ("MB.memory", "memory", "c1"))))
REMOVALS = ("drop_table", "drop_schema", "rename_table")
#: names the outsider creates directly in the sqlite and hive engines (never created through gravimeta)
ENGINE_TABLES = ("e0", "e1")
ENGINE_SCHEMAS = ("x0",)
#: statements whose transaction's COMMIT the nemesis cuts (on the replica behind the TCP proxy)
COMMIT_CUTS = (b"INSERT INTO gm_table", b"DELETE FROM gm_table", b"UPDATE gm_table", b"INSERT INTO gm_schema",
               b"DELETE FROM gm_schema", b"UPDATE gm_catalog", b"UPDATE gm_metalake")
#: the hive catalog's client timeout; the nemesis's hive latency and hangs go beyond it
HIVE_TIMEOUT_MS = 1000
SLOW_S = 3.0
#: the background repair's interval (gravimeta.journal.repair-interval-ms): short, so passes meet the nemesis
BACKGROUND_REPAIR_MS = 2000
#: how often the fence check reads the engines' fence records (SoakConfig.fence_check)
FENCE_READ_S = 0.25
#: failpoints the nemesis fires, and what it makes them do
NEMESIS_POINTS = ("claim.before_grant", "claim.after_grant", "renew.before_commit", "guard.after_lock",
                  "advisory.before_lock", "advisory.after_lock", "store.before_commit", "engine.before_call",
                  "engine.after_call", "sqlite.before_begin", "node.before_beat")
NEMESIS_ACTIONS = ("sleep 300", "sleep 2500", "pause", "fail", "raise ScopeBusy", "exit")
#: where the frozen-holder action stops a replica while it holds a claim in MB: inside its fenced store
#: transaction (the claim row locked FOR UPDATE by the guard; its writes done, before COMMIT), the claim
#: granted and nothing done yet, or an engine operation's intent recorded (before or after its engine call).
#: The first freeze of a run is always the first (what a steal in the other metalake must not wait for)
HOLDER_POINTS = ("guard.after_lock", "store.before_commit", "claim.after_grant", "engine.before_call",
                 "engine.after_call")
#: the nemesis's actions, drawn at random; its second action is always a frozen holder (FROZEN), and so is
#: each later one until a freeze happened (FORCED_HOLDER_TRIES at most): a short run reaches it for sure
NEMESIS_CHOICES = ("stop", "stop", "kill", "hive", "hive", "commit", "failpoint", "failpoint", "failpoint", "holder")
FORCED_HOLDER_TRIES = 3
#: the nemesis_counts key of a frozen holder (and of one armed whose replica held no claim in MB in time)
FROZEN, NOT_FROZEN = "frozen MB holder", "frozen MB holder (not reached)"


@dataclass
class SoakConfig:
    db: str = "postgresql"
    seconds: float = 60.0
    seed: int | None = None
    lock: str = "AUTO"
    replicas: int = 3
    workers: int = 2
    threads: int = 6
    ttl_ms: int = 1500
    nemesis: bool = True
    structure: bool = True
    outsider: bool = True
    #: self-check of the final engine check: drop one table gravimeta acknowledged straight from a sqlite
    #: engine after the load; the run must then report that divergence (--plant-divergence)
    plant_divergence: bool = False
    progress_every_s: float = 5.0
    #: an existing, migrated store instead of a fresh database (a Patroni cluster's multi-host URL,
    #: tests/ha/test_failover_soak.py); the commit-cutting proxy is then left out
    store_url: str | None = None
    #: a thread of its own that takes the store away while the load runs (a failover), given the world
    store_nemesis: Callable[[World], None] | None = None
    #: PostgreSQL: check that no fence an engine accepted is granted again (tests/chaos/fence_check.py:
    #: a grant ledger in the store, the engines' fence records read every FENCE_READ_S)
    fence_check: bool = False
    #: the mover thread (tests/chaos/catalog_moves.py): catalogs moved between engines and dropped
    moves: bool = True
    work_dir: Path | None = None
    #: copy the run's directory (the replicas' logs, the failpoint files) there at the end (--keep-logs)
    keep_logs: Path | None = None
    say: Callable[[str], None] = print


@dataclass
class Latency:
    kind: str
    seconds: float
    status: int | None


@dataclass
class SoakResult:
    seed: int
    report: Report
    strict: Report
    latencies: list[Latency]
    nemesis: Counter[str]
    ambiguous: int
    repair: Settled
    elapsed: float
    refusals: Counter[str] = field(default_factory=Counter)
    outsider: Counter[str] = field(default_factory=Counter)
    witnesses: list[str] = field(default_factory=list)  # on a violation: what may explain it (see witnesses())
    fences: FenceReport | None = None  # SoakConfig.fence_check
    frozen: str = ""  # what the frozen-holder action did (freeze_summary)
    moves: str = ""  # what the mover did and found (catalog_moves.Mover.summary), and the pool compared

    @property
    def ok(self) -> bool:
        return self.report.ok


def latency_summary(latencies: list[Latency], kinds: tuple[str, ...] | None = None) -> dict[str, float]:
    values = sorted(x.seconds for x in latencies if kinds is None or x.kind in kinds)
    if not values:
        return {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0, "over_3s": 0}

    def pct(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))]

    return {"n": len(values), "p50": pct(0.50), "p99": pct(0.99), "max": values[-1],
            "over_3s": sum(1 for v in values if v > SLOW_S)}


# ------------------------------------------------------------------------------------- names over time


@dataclass
class Snapshot:
    since: float
    until: float | None
    names: dict[tuple[str, str], str]


class Names:
    """Which catalog identity each (metalake, catalog) name denoted over time. One writer (the structure
    thread): a change covers [start of its first rename, the moment the new names were read back]."""

    def __init__(self, names: dict[tuple[str, str], str]):
        self._lock = threading.Lock()
        self.snapshots = [Snapshot(0.0, None, dict(names))]

    def current(self, identity: str) -> tuple[str, str] | None:
        with self._lock:
            for name, ident in self.snapshots[-1].names.items():
                if ident == identity:
                    return name
        return None

    def names(self) -> dict[tuple[str, str], str]:
        with self._lock:
            return dict(self.snapshots[-1].names)

    def changed(self, began: float, names: dict[tuple[str, str], str]) -> None:
        with self._lock:
            self.snapshots[-1].until = time.monotonic()
            self.snapshots.append(Snapshot(began, None, dict(names)))

    def candidates(self, name: tuple[str, str], start: float, end: float | None) -> set[str]:
        end = end if end is not None else time.monotonic()
        with self._lock:
            return {s.names[name] for s in self.snapshots
                    if name in s.names and s.since <= end and (s.until is None or s.until >= start)}


# ------------------------------------------------------------------------------------------- the world


@dataclass(frozen=True)
class Freeze:
    """One frozen holder: `replica`'s workers SIGSTOPped from `began` to `ended` (monotonic) while one of
    them stood at `point` holding its claim on `scope`, a path in catalog `identity` of metalake MB;
    `ma_scope`: the MA claim another held meanwhile ('' when none), `probe`: what its stealer was answered."""

    began: float
    ended: float
    replica: str
    point: str
    scope: str
    identity: str = ""
    ma_scope: str = ""
    probe: str = ""


@dataclass
class World:
    cfg: SoakConfig
    db_url: str
    tmp: Path
    rng: random.Random
    servers: list[ServerProcess] = field(default_factory=list)
    replicas: list[Replica] = field(default_factory=list)
    history: History = field(default_factory=History)
    op_names: dict[int, tuple[str, str]] = field(default_factory=dict)
    latencies: list[Latency] = field(default_factory=list)
    nemesis_counts: Counter[str] = field(default_factory=Counter)
    nemesis_log: list[str] = field(default_factory=list)  # "[t0-t1] action replica", in order
    stop: threading.Event = field(default_factory=threading.Event)
    providers: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    stub: StubProcess | None = None
    #: the last replica reaches the database through it (the nemesis cuts connections at COMMIT)
    proxy: TcpProxy | None = None
    fp: Failpoints | None = None
    names: Names | None = None
    #: outsider objects (identity, schema, table or None) whose import answered nothing definite
    unimported: set[tuple[str, str, str | None]] = field(default_factory=set)
    outsider_counts: Counter[str] = field(default_factory=Counter)
    #: engine-only outsider objects the engine check excused (identity, schema, table or None)
    excused: list[tuple[str, str, str | None]] = field(default_factory=list)
    outsider_log: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    #: what the final engine check found (tests/chaos/engine_check.py)
    engine_diffs: list[Difference] = field(default_factory=list)
    #: the frozen-holder action's freezes: (began, ended, replica, failpoint, claimed scope path)
    freezes: list[Freeze] = field(default_factory=list)
    #: the requests the frozen-holder action sends through the replica it freezes (joined before the checks)
    driven: list[threading.Thread] = field(default_factory=list)
    driven_ops: list[Op] = field(default_factory=list)
    #: the replicas the frozen-holder action holds or freezes right now (World.pick leaves them out)
    avoid: set[str] = field(default_factory=set)
    outsider_lock: threading.Lock = field(default_factory=threading.Lock)
    #: the mover's pool and record (SoakConfig.moves)
    mover: catalog_moves.Mover | None = None
    _lat_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sqlite_root(self) -> Path:
        return self.tmp / "sqlite-root"

    def server_env(self, name: str) -> dict[str, str]:
        assert self.fp is not None
        return {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": self.cfg.lock,
                "GRAVIMETA_LEASE_TTL_MS": str(self.cfg.ttl_ms), "GRAVIMETA_NODE_ID": name,
                "GRAVIMETA_SQLITE_CATALOG_ROOT": str(self.sqlite_root),
                # the background repair runs during the workload and the nemesis, not only at the end
                "GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS": str(BACKGROUND_REPAIR_MS), **self.fp.env(name)}

    def pick(self, rng: random.Random) -> Replica:
        """A random replica for a request; not one the frozen-holder action has frozen (as a balancer's
        health check would leave it out), so that the load goes on elsewhere while a holder is frozen."""
        replica = rng.choice(self.replicas)
        if replica.name in self.avoid:
            replica = next((r for r in self.replicas if r.name not in self.avoid), replica)
        return replica

    def record(self, kind: str, seconds: float, status: int | None) -> None:
        with self._lat_lock:
            self.latencies.append(Latency(kind, seconds, status))

    def request(self, replica: Replica, kind: str, method: str, path: str, body: Any = None) -> tuple[int | None, Any]:
        began = time.monotonic()
        try:
            status, payload = replica.request(method, path, body)
        except Exception as exc:  # noqa: BLE001 - no answer: recorded as such
            self.record(kind, time.monotonic() - began, None)
            return None, {"error": f"{type(exc).__name__}: {exc}"}
        self.record(kind, time.monotonic() - began, status)
        return status, payload

    def recorded(self, op: Op) -> Op:
        if op.end is not None:
            self.record(op.kind, op.end - op.start, op.status)
        return op

    def any_replica(self, method: str, path: str, body: Any = None, timeout: float = 90.0) -> Any:
        """A request that must succeed (setup, reading names back): retried on replicas in turn."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            replica = self.rng.choice(self.replicas)
            try:
                status, payload = replica.request(method, path, body)
            except Exception as exc:  # noqa: BLE001 - retried
                last = exc
                time.sleep(0.2)
                continue
            if status == 200:
                return payload
            last = (status, payload)
            time.sleep(0.2)
        raise RuntimeError(f"{method} {path} did not succeed within {timeout}s: {last}")

    def read_names(self) -> dict[tuple[str, str], str]:
        names: dict[tuple[str, str], str] = {}
        for metalake in self.any_replica("GET", "/api/metalakes")["metalakes"]:
            if metalake.get("comment") not in ("MA", "MB"):
                continue
            body = self.any_replica("GET", f"/api/metalakes/{quote(metalake['name'], safe='')}/catalogs?details=true")
            for catalog in body["catalogs"]:
                names[(metalake["name"], catalog["name"])] = catalog["comment"]
        return names


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/task/{current}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        found += children
        todo += children
    return found


def worker_pids(server: ServerProcess) -> list[int]:
    """The gunicorn workers of a replica: the processes under its master."""
    if server.process is None or server.process.poll() is not None:
        return []
    return _descendants(server.process.pid)


# ------------------------------------------------------------------------------------------------ setup


def setup(world: World) -> None:
    initial: dict[tuple[str, str], str] = {}
    for ml_ident, ml_name, catalogs in WORLD:
        world.any_replica("POST", "/api/metalakes", {"name": ml_name, "comment": ml_ident, "properties": {}})
        for ident, provider, name in catalogs:
            if provider == "sqlite":
                properties = {"path": f"soak/{ident}.db"}
            elif provider == "hive":
                assert world.stub is not None
                properties = {"metastore.uris": world.stub.uri, "client.timeout-ms": str(HIVE_TIMEOUT_MS)}
            else:
                properties = {}
            world.any_replica("POST", f"/api/metalakes/{ml_name}/catalogs", {
                "name": name, "type": "relational", "provider": provider, "comment": ident,
                "properties": properties})
            world.providers[ident] = (provider, properties)
            initial[(ml_name, name)] = ident
            for schema in SCHEMAS:
                world.any_replica("POST", f"{catalog_path(ml_name, name)}/schemas",
                                  {"name": schema, "comment": None, "properties": {}})
    world.names = Names(initial)


# --------------------------------------------------------------------------------------------- workload


def workload(world: World, index: int) -> None:
    rng = random.Random(world.rng.random() + index)
    names = world.names
    assert names is not None
    identities = sorted(world.providers)
    kinds = ("create_table",) * 6 + ("drop_table",) * 3 + ("rename_table",) * 4 + ("set_property",) * 3 + \
            ("create_schema",) * 2 + ("drop_schema",) + ("drop_engine_object",) * 2 + ("recreate_schema",)
    while not world.stop.is_set():
        ident = rng.choice(identities)
        name = names.current(ident)
        if name is None:
            time.sleep(0.05)
            continue
        metalake, catalog = name
        replica = world.pick(rng)
        rec = Recorder(world.history, metalake)
        s, s2 = rng.sample(SCHEMAS, 2)
        t, t2 = rng.sample(TABLES, 2)
        kind = rng.choice(kinds)
        external = world.providers[ident][0] in ("sqlite", "hive")
        if kind in ("drop_engine_object", "recreate_schema") and not external:
            kind = "create_table"
        if kind == "recreate_schema" and world.providers[ident][0] == "sqlite":
            # a sqlite schema dropped and created again under its name, then filled: the new incarnation's
            # file must never be touched by a late drop of the old one
            for op in (rec.drop_schema(replica, catalog, s, cascade=True), rec.create_schema(replica, catalog, s),
                       rec.create_table(replica, catalog, s, t)):
                world.op_names[op.id] = name
                world.recorded(op)
            continue
        if kind in ("drop_engine_object", "recreate_schema"):
            # an object the outsider made in the engine, dropped through gravimeta (imported or not)
            if rng.random() < 0.75:
                op = rec.drop_table(replica, catalog, rng.choice(SCHEMAS + ENGINE_SCHEMAS), rng.choice(ENGINE_TABLES))
            else:
                op = rec.drop_schema(replica, catalog, rng.choice(ENGINE_SCHEMAS), cascade=True)
            world.op_names[op.id] = name
            world.recorded(op)
            continue
        if kind == "set_property":
            path = f"{catalog_path(metalake, catalog)}/schemas/{s}/tables/{t}"
            world.request(replica, kind, "PUT", path,
                          {"updates": [{"@type": "setProperty", "property": "soak", "value": str(rng.random())}]})
            continue
        if kind == "create_table":
            op = rec.create_table(replica, catalog, s, t)
        elif kind == "drop_table":
            op = rec.drop_table(replica, catalog, s, t)
        elif kind == "rename_table":
            op = rec.rename_table(replica, catalog, s, t, s2 if rng.random() < 0.4 else s, t2)
        elif kind == "create_schema":
            op = rec.create_schema(replica, catalog, s)
        else:
            op = rec.drop_schema(replica, catalog, s, cascade=True)
        world.op_names[op.id] = name
        world.recorded(op)


def _rename(world: World, kind: str, path: str, new_name: str) -> str:
    """One rename; "ok", "failed" (definitely not applied) or "uncertain"."""
    status, body = world.request(world.pick(world.rng), kind, "PUT", path,
                                 {"updates": [{"@type": "rename", "newName": new_name}]})
    if status == 200:
        return "ok"
    if status is not None and (status < 500 or (body or {}).get("type") in DEFINITE_FAILURE_TYPES):
        return "failed"
    return "uncertain"


def structure(world: World) -> None:
    """Swap catalog names inside a metalake, or the two metalakes' names (three renames each). The names
    after a swap follow from the answers; after an uncertain answer they are read back from the API."""
    rng = random.Random(world.rng.random())
    names = world.names
    assert names is not None
    while not world.stop.wait(rng.uniform(0.5, 2.0)):
        current = names.names()
        began = time.monotonic()
        tmp = f"tmp{uuid.uuid4().hex[:6]}"
        metalakes = sorted({m for m, _ in current})
        outcome = "ok"
        if rng.random() < 0.7:
            metalake = rng.choice(metalakes)
            catalogs = sorted(c for m, c in current if m == metalake)
            if len(catalogs) < 2:
                continue
            a, b = rng.sample(catalogs, 2)
            for old, new in [(a, tmp), (b, a), (tmp, b)]:
                outcome = _rename(world, "rename_catalog", catalog_path(metalake, old), new)
                if outcome != "ok":
                    break
                current[(metalake, new)] = current.pop((metalake, old))
        elif len(metalakes) >= 2:
            a, b = metalakes[:2]
            for old, new in [(a, tmp), (b, a), (tmp, b)]:
                outcome = _rename(world, "rename_metalake", f"/api/metalakes/{quote(old, safe='')}", new)
                if outcome != "ok":
                    break
                current = {((new if m == old else m), c): ident for (m, c), ident in current.items()}
        if outcome == "uncertain":
            current = world.read_names()
        names.changed(began, current)


# --------------------------------------------------------------------------------------------- outsider


def outsider(world: World) -> None:
    """Someone beside gravimeta: creates tables (ENGINE_TABLES) and schemas (ENGINE_SCHEMAS) directly in
    the sqlite and hive engines, through the connector alone (outside a server the door guard is off),
    then GETs each through a random replica, which imports it (again under the current name when a swap
    made the first GET miss). Then it looks: an object that the store's rows do not hold and the engine
    still does (or whose creation in the engine timed out) stays in world.unimported: the final engine
    check may find it only in the engine without that being a divergence (it says so)."""
    rng = random.Random(world.rng.random())
    names = world.names
    assert names is not None
    registry = ConnectorRegistry()
    store_engine = create_store_engine(world.db_url)
    identities = sorted(i for i, (p, _) in world.providers.items() if p in ("sqlite", "hive"))
    while not world.stop.wait(rng.uniform(0.2, 0.8)):
        ident = rng.choice(identities)
        current = names.current(ident)
        if current is None:
            continue
        metalake, catalog = current
        provider, properties = world.providers[ident]
        connector = registry.get(provider)(CatalogContext(metalake, catalog, dict(properties)))
        table: str | None = None
        if rng.random() < 0.3:
            schema = rng.choice(ENGINE_SCHEMAS)
        else:
            schema, table = rng.choice(SCHEMAS + ENGINE_SCHEMAS), rng.choice(ENGINE_TABLES)
        key = (ident, schema, table)
        began = time.monotonic()
        with world.outsider_lock:
            known = key in world.unimported
            world.unimported.add(key)  # before the call: a call timed out may still land in the engine later
        try:
            if table is None:
                connector.create_schema(Schema(schema))
            else:
                connector.create_table(schema, Table(table, [Column("id", "integer")]))
            world.outsider_counts["created in engine"] += 1
        except errors.AlreadyExists:  # there already: import it all the same
            world.outsider_counts["already in engine"] += 1
        except errors.NotFound:  # definitely nothing made (no such schema in the engine)
            if not known:
                with world.outsider_lock:
                    world.unimported.discard(key)
            continue
        except Exception as exc:  # noqa: BLE001 - the engine slowed down (a nemesis fault): outcome unknown
            world.outsider_counts[f"engine {type(exc).__name__}"] += 1
            world.outsider_log.append((ident, schema, table, f"[{began:.3f}-{time.monotonic():.3f}] made "
                                       f"{schema}{'.' + table if table else ''} in the engine: {type(exc).__name__}"))
            continue
        for _ in range(3):  # the name may have moved on (a swap): GET again under the current name
            status, body = _import(world, rng, ident, schema, table, began)
            if status is not None and status < 500 and (body or {}).get("type") not in WRONG_NAME:
                break
        # An answer alone does not say which catalog the name denoted (a swap may be in flight), nor
        # whether a 404 means "gone from the engine" (a create of the schema may be in flight): look.
        try:
            settled = in_store(store_engine, ident, schema, table) or not in_engine(connector, schema, table)
        except OperationalError:  # the store is away (a failover under the soak): still unknown
            continue
        if settled:
            with world.outsider_lock:  # imported, or the engine no longer has it
                world.unimported.discard(key)
    store_engine.dispose()


def in_store(engine: Engine, ident: str, schema: str, table: str | None) -> bool:
    """Whether the store has the schema (or table) in the catalog whose comment is `ident`, by its rows."""
    query = select(SchemaRow.id).join(CatalogRow, SchemaRow.catalog_id == CatalogRow.id) \
        .where(CatalogRow.comment == ident, SchemaRow.name == schema)
    if table is not None:
        query = select(TableRow.id).join(SchemaRow, TableRow.schema_id == SchemaRow.id) \
            .join(CatalogRow, SchemaRow.catalog_id == CatalogRow.id) \
            .where(CatalogRow.comment == ident, SchemaRow.name == schema, TableRow.name == table)
    with engine.connect() as conn:
        return conn.execute(query).first() is not None


def in_engine(connector: Connector, schema: str, table: str | None) -> bool:
    """Whether the engine has it; True when it cannot tell (the object then stays excusable)."""
    try:
        return schema in connector.list_schemas() if table is None else table in connector.list_tables(schema)
    except errors.NotFound:
        return False
    except Exception:  # noqa: BLE001 - the engine is slowed down by the nemesis: cannot tell
        return True


#: a 404 that says nothing of the object: the catalog's name denoted another catalog, or none, meanwhile
WRONG_NAME = ("NoSuchMetalakeException", "NoSuchCatalogException")


def _import(world: World, rng: random.Random, ident: str, schema: str, table: str | None,
            began: float) -> tuple[int | None, Any]:
    assert world.names is not None
    current = world.names.current(ident)
    if current is None:
        return None, {}
    path = f"{catalog_path(*current)}/schemas/{quote(schema)}" + (f"/tables/{quote(table)}" if table else "")
    replica = world.pick(rng)
    start = time.monotonic()
    status, body = world.request(replica, "import", "GET", path)
    if world.names.candidates(current, start, time.monotonic()) != {ident}:
        status, body = None, {"type": "the name denoted another catalog meanwhile"}
    kind = (body or {}).get("type", "")
    world.outsider_counts[f"import {status} {kind}".strip()] += 1
    world.outsider_log.append((ident, schema, table, f"[{began:.3f}-{time.monotonic():.3f}] made "
                               f"{schema}{'.' + table if table else ''} in the engine, GET {path} @{replica.name} -> "
                               f"{status} {kind} {(body or {}).get('message', '')[:200]}"))
    return status, body


# ---------------------------------------------------------------------------------------------- nemesis


def nemesis(world: World) -> None:
    rng = random.Random(world.rng.random())
    assert world.fp is not None and world.stub is not None
    ttl_s = world.cfg.ttl_ms / 1000
    forced = 0
    for round_ in itertools.count():
        if world.stop.wait(rng.uniform(0.5, 2.0)):
            break
        action = rng.choice(NEMESIS_CHOICES)
        if round_ >= 1 and not world.nemesis_counts[FROZEN] and forced < FORCED_HOLDER_TRIES:
            action, forced = "holder", forced + 1
        index = rng.randrange(len(world.servers))
        server = world.servers[index]
        began = time.monotonic()
        try:
            if action == "holder":
                action = freeze_holder(world, rng, index, first=not world.freezes)
            elif action in ("stop", "kill"):
                pids = worker_pids(server)
                if not pids:
                    continue
                pid = rng.choice(pids)
                if action == "kill":
                    os.kill(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGSTOP)
                    try:
                        world.stop.wait(rng.uniform(0.3, 2 * ttl_s + 0.5))
                    finally:
                        os.kill(pid, signal.SIGCONT)
            elif action == "commit" and world.proxy is not None:
                # the next COMMIT of such a transaction on the proxied replica: delivered and its answer
                # lost, or dropped (rolled back); the server must look before it answers
                statement, deliver = rng.choice(COMMIT_CUTS), rng.random() < 0.5
                index = len(world.servers) - 1
                cut = world.proxy.lose_commit(statement, deliver=deliver)
                world.stop.wait(rng.uniform(1.0, 3.0))
                world.proxy.disarm()
                action = f"commit {'answer lost' if deliver else 'dropped'} after {statement.decode()}" + \
                    ("" if cut.is_set() else " (not reached)")
            elif action == "hive":
                # latency up to beyond the hive catalog's client timeout (HIVE_TIMEOUT_MS), or calls held
                # past it and then let through: the late call must meet the fences
                if rng.random() < 0.5:
                    world.stub.fault("latency", ms=rng.choice((100, 500, 1200, 2500)))
                    action = "hive latency"
                else:
                    world.stub.fault("hang", count=rng.randint(1, 3), seconds=rng.uniform(1.5, 4.0),
                                     ops=["create_table", "drop_table", "rename_table", "create_database",
                                          "drop_database"])
                    action = "hive hang"
                world.stop.wait(rng.uniform(1.0, 4.0))
                world.stub.clear_faults()
            else:
                point, what = rng.choice(NEMESIS_POINTS), rng.choice(NEMESIS_ACTIONS)
                tag = world.replicas[index].name if rng.random() < 0.7 else ""
                world.fp.arm(point, what, tag=tag)
                action = f"fp {point} {what}"
                world.stop.wait(rng.uniform(0.5, 3.0))
                world.fp.clear()
        except (ProcessLookupError, OSError):
            continue
        world.nemesis_counts[" ".join(action.split(" ")[:2]) if action.startswith("hive") else
                             ("commit cut" if "(not reached)" not in action else "commit armed") if
                             action.startswith("commit") else
                             (NOT_FROZEN if "(not reached)" in action else FROZEN) if action.startswith("frozen") else
                             action.split(" ")[0] if not action.startswith("fp") else "failpoint"] += 1
        world.nemesis_log.append(f"[{began:.3f}-{time.monotonic():.3f}] {action} on {world.replicas[index].name}")


def freeze_holder(world: World, rng: random.Random, index: int, first: bool) -> str:
    """A frozen holder in the other metalake. For replica `index`, arm a pause at a claim-held point
    (HOLDER_POINTS; the first of a run inside the fenced store transaction) for claims under MB's current
    name only, and one at claim.after_grant for claims under MA's (engine.before_call when the MB point is
    that one); send one MB and one MA request through that replica (the workload is routed around it from
    now on) and, once a worker stands at the MB point holding its claim, SIGSTOP every worker of the
    replica past the lease TTL. Meanwhile the workload goes on claiming in MA, and a probe steals the
    frozen MA claim (a request on the same scope through another replica, once that claim expired): it
    must not wait for the frozen MB holder. Then SIGCONT and let both held requests go on. Returns the
    nemesis log's text ("... (not reached)" when no worker stood at the MB point in MB in time: a swap
    moved the name, or the request was refused before its claim)."""
    assert world.fp is not None and world.names is not None
    replica, server = world.replicas[index], world.servers[index]
    ttl_s = world.cfg.ttl_ms / 1000
    point = HOLDER_POINTS[0] if first else rng.choice(HOLDER_POINTS)
    # an engine operation (sqlite) reaches every point; the memory catalog's run whole in one store step
    mb = rng.choice(("MB.sqlite", "MB.memory")) if point == "claim.after_grant" else "MB.sqlite"
    ma_point = "engine.before_call" if point == "claim.after_grant" else "claim.after_grant"
    ma = "MA.sqlite" if ma_point.startswith("engine.") else rng.choice(("MA.memory", "MA.sqlite", "MA.hive"))
    mb_name, ma_name = world.names.current(mb), world.names.current(ma)
    if mb_name is None or ma_name is None:
        return f"frozen holder at {point} in {mb}: no name (not reached)"
    armed_at = time.monotonic()
    world.avoid.add(replica.name)
    try:
        world.fp.arm(point, "pause", tag=replica.name, scope=f"/{mb_name[0]}/")
        world.fp.arm(ma_point, "pause", tag=replica.name, scope=f"/{ma_name[0]}/")
        for name in (mb_name, ma_name):
            _drive(world, rng, replica, name, rng.choice(("create_table", "drop_table", "rename_table")))
        what = f"frozen holder at {point} in {mb} as /{'/'.join(mb_name)}"
        try:
            held = world.fp.wait_reached(point, tag=replica.name, timeout=3.0)
        except AssertionError:
            return f"{what} (not reached)"
        finally:
            world.fp.disarm(point, tag=replica.name)  # a `once` arming not taken yet: no later hit pauses
        scope, pids = held.context.get("scope", ""), worker_pids(server)
        if _identities(world, scope, armed_at) != {mb} or held.pid not in pids:
            world.fp.resume(held)  # the name moved on meanwhile (a swap), or a pause of a worker killed since
            return f"{what}: held {scope or 'no scope'} of pid {held.pid}, not {mb}'s then (not reached)"
        try:
            ma_held: Reached | None = world.fp.wait_reached(ma_point, tag=replica.name, timeout=1.0)
        except AssertionError:
            ma_held = None
        finally:
            world.fp.disarm(ma_point, tag=replica.name)
        began = time.monotonic()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        probe = "no MA holder"
        try:
            until = began + rng.uniform(ttl_s + 0.5, 2 * ttl_s + 1.0)
            if ma_held is not None and not world.stop.wait(ttl_s + 0.3):
                probe = _steal_probe(world, rng, ma_held)
            world.stop.wait(max(0.0, until - time.monotonic()))
        finally:
            for reached in (held, ma_held):
                if reached is not None:
                    world.fp.resume(reached)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        ma_scope = ma_held.context.get("scope", "") if ma_held is not None else ""
        world.freezes.append(Freeze(began, time.monotonic(), replica.name, point, scope, mb, ma_scope, probe))
        return f"{what}: pid {held.pid} held {scope}, {len(pids)} worker(s) stopped " \
               f"{time.monotonic() - began:.1f}s; MA holder {ma_scope or '-'}: {probe}"
    finally:
        world.avoid.discard(replica.name)


def _identities(world: World, scope: str, since: float) -> set[str]:
    """The catalog identities the (metalake, catalog) names of a scope path denoted since `since`."""
    assert world.names is not None
    parts = scope.split("/")
    return world.names.candidates((parts[1], parts[2]), since, time.monotonic()) if len(parts) > 2 else set()


def _drive(world: World, rng: random.Random, replica: Replica, name: tuple[str, str], kind: str) -> None:
    """One recorded request on a catalog through `replica`, in a thread of its own (joined before the checks)."""
    s, s2 = rng.sample(SCHEMAS, 2)
    t, t2 = rng.sample(TABLES, 2)

    def send() -> None:
        rec = Recorder(world.history, name[0])
        if kind == "create_table":
            op = rec.create_table(replica, name[1], s, t)
        elif kind == "drop_table":
            op = rec.drop_table(replica, name[1], s, t)
        else:
            op = rec.rename_table(replica, name[1], s, t, s, t2)
        world.op_names[op.id] = name
        world.driven_ops.append(world.recorded(op))

    thread = threading.Thread(target=send, daemon=True)
    world.driven.append(thread)
    thread.start()


def _steal_probe(world: World, rng: random.Random, held: Reached) -> str:
    """A create on the frozen MA holder's scope (its schema, or a schema in its catalog) through another
    replica, once that claim expired: it steals the claim, and must not wait for the frozen MB holder
    (STALLED: refused busy or not answered; SLOW: answered after more than a lease TTL)."""
    assert world.names is not None
    scope = held.context.get("scope", "")
    parts = scope.split("/")
    if len(parts) not in (3, 4):
        return f"no probe (a claim on {scope})"
    # the claim is on a path of names: the probe claims that path, whichever catalog its names denote now,
    # as long as it is one of MA's (a swap of the metalakes' names may have made it MB's meanwhile)
    name = (parts[1], parts[2])
    now = world.names.names().get(name, "")
    if not now.startswith("MA."):
        return f"no probe ({scope} denotes {now or 'no catalog'} now)"
    rec, replica = Recorder(world.history, name[0]), world.pick(rng)
    table = f"probe{len(world.freezes)}"
    op = rec.create_table(replica, name[1], parts[3], table) if len(parts) == 4 else \
        rec.create_schema(replica, name[1], f"probe{len(world.freezes)}")
    world.op_names[op.id] = name
    world.recorded(op)
    took = (op.end or time.monotonic()) - op.start
    busy = (op.body or {}).get("type") == "ScopeBusyException"
    return f"probe {op.kind} @{replica.name} -> {op.status} {(op.body or {}).get('type', '')}".rstrip() + \
        f" in {took:.2f}s" + (" STALLED" if busy or op.status is None else
                              " SLOW" if took > world.cfg.ttl_ms / 1000 else "")


def lift_faults(world: World) -> None:
    for server in world.servers:
        for pid in worker_pids(server):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    if world.fp is not None:
        world.fp.clear()
    if world.stub is not None:
        try:
            world.stub.clear_faults()
        except OSError:
            pass
    if world.mover is not None:
        catalog_moves.lift(world.mover)


# ------------------------------------------------------------------------------------------------ check


#: final repairs before an intent still open counts as a violation: a repair leaves an intent open when its
#: engine did not answer within the catalog's client timeout (1 s for the soak's hive catalog), which a
#: loaded machine can exceed once; an intent that no repair can settle stays open through all of them
FINAL_REPAIRS = 3


def repair(world: World) -> Settled:
    """`gravimeta repair --settle-seconds 0` with the servers' configuration (no failpoints), then what
    the journal still holds open; again (up to FINAL_REPAIRS) while intents stay open."""
    env = {**os.environ, **world.server_env("soak-repair")}
    env.pop("GRAVIMETA_FAILPOINTS_DIR", None)
    for attempt in range(1, FINAL_REPAIRS + 1):
        settled = settle(world.db_url, env)
        if not settled.open and settled.returncode == 0:
            return settled
        if attempt < FINAL_REPAIRS:
            world.cfg.say(f"[soak] repair {attempt}/{FINAL_REPAIRS} left {len(settled.open)} intent(s) open; again")
            time.sleep(2.0)
    return settled


def plant_divergence(world: World) -> str:
    """Drop one table the store holds straight from a sqlite engine (outside gravimeta)."""
    engine = create_store_engine(world.db_url)
    try:
        store = EntityStore(engine)
        for (metalake, catalog), ident in sorted(world.read_names().items()):
            if world.providers[ident][0] != "sqlite":
                continue
            for schema in store.list_schemas(metalake, catalog):
                for table in store.list_tables(metalake, catalog, schema.name):
                    connector = ConnectorRegistry().get("sqlite")(
                        CatalogContext(metalake, catalog, dict(world.providers[ident][1])))
                    connector.drop_table(schema.name, table)
                    return f"{ident} {schema.name}.{table} dropped from the engine only"
    finally:
        engine.dispose()
    return "nothing to plant (no table in any sqlite catalog)"


def engines_against_store(world: World) -> list[str]:
    """Each sqlite and hive catalog's engine against the store's rows (tests/chaos/engine_check.py)."""
    catalogs = []
    for (metalake, catalog), ident in sorted(world.read_names().items()):
        provider, properties = world.providers[ident]
        if provider in ("sqlite", "hive"):
            catalogs.append(EngineCatalog(ident, metalake, catalog, provider, properties))
    engine = create_store_engine(world.db_url)
    try:
        found = compare(engine, catalogs, world.sqlite_root)
    finally:
        engine.dispose()
    problems = []
    for d in found:
        if d.only_in == "engine" and (d.identity, d.schema, d.table) in world.unimported | {
                (i, s, None) for i, s, _ in world.unimported}:
            world.cfg.say(f"[soak] not a divergence (the outsider's import of it got no answer): {d.text}")
            world.excused.append((d.identity, d.schema, d.table))
            continue
        problems.append(d.text)
        world.engine_diffs.append(d)
    return problems


def divergence_witnesses(world: World) -> list[str]:
    """For each difference the engine check found: every recorded request on that schema (or table) of
    that catalog identity (whatever its name was then), the outsider's actions on it, and the nemesis
    timeline: what a failure message needs when the run cannot be replayed exactly."""
    assert world.names is not None
    lines = []
    for d in world.engine_diffs:
        lines.append(f"{d.text}:")
        for op in world.history.ops:
            name = world.op_names.get(op.id)
            if name is None or d.identity not in world.names.candidates(name, op.start, op.end):
                continue
            touched = {(op.schema, op.table), (op.new_schema or op.schema, op.new_name)}
            if op.schema == d.schema and (d.table is None or op.table is None or (d.schema, d.table) in touched) or \
                    (d.table is not None and (d.schema, d.table) in touched):
                lines.append(f"    {op.describe()} {(op.body or {}).get('type', '')} (as {name[0]}.{name[1]})")
        lines += [f"    outsider {line}" for i, sc, t, line in world.outsider_log
                  if i == d.identity and sc == d.schema and (d.table is None or t in (None, d.table))]
    if lines:
        lines += ["nemesis timeline:"] + [f"    {line}" for line in world.nemesis_log]
    return lines


def final_state(world: World) -> dict[str, CatalogState]:
    engine = create_store_engine(world.db_url)
    states: dict[str, CatalogState] = {}
    try:
        replica = world.replicas[0]
        for (metalake, catalog), ident in sorted(world.read_names().items()):
            provider, properties = world.providers[ident]
            state = CatalogState(provider)
            read_api(replica, metalake, catalog, state)
            read_sql(engine, metalake, catalog, state)
            if provider == "sqlite":
                state.engine = read_sqlite_engine(world.sqlite_root / properties["path"])
            elif provider == "hive":
                state.engine = read_hive(world)
            else:
                state.engine_note = MEMORY_NOTE
            states[ident] = state
    finally:
        engine.dispose()
    for ident, schema, table in world.excused:
        _leave_out(states[ident], schema, table)
    return states


def _leave_out(state: CatalogState, schema: str, table: str | None) -> None:
    """Leave an outsider's object that was never imported (the engine check excused it) out of the API's
    and the engine's view: the REST list is the union of store and engine, so it lists the object with
    no row in SQL, which the history checker would take for an orphan."""
    views = [state.api] + ([state.engine] if state.engine is not None else [])
    if table is None:
        state.api_schema_listing = [s for s in state.api_schema_listing if s != schema]
        for view in views:
            view.pop(schema, None)
        return
    for view in views:
        if schema in view:
            view[schema] = [t for t in view[schema] if t != table]


def read_hive(world: World) -> dict[str, list[str]]:
    assert world.stub is not None
    result: dict[str, list[str]] = {}
    status, body = world.stub.raw("GET", "/databases")
    assert status == 200, body
    for database in body["databases"]:
        status, tables = world.stub.raw("GET", f"/databases/{quote(database, safe='')}/tables")
        result[database] = sorted(tables.get("tables", [])) if status == 200 else []
    return result


def attribute(world: World) -> tuple[list[Op], int]:
    """Each recorded op on the catalog identity its name denoted; an ambiguous one (its interval overlaps
    a rename of its name) only as a possible removal in each candidate. Returns (ops, ambiguous count)."""
    assert world.names is not None
    out: list[Op] = []
    ambiguous = 0
    for op in world.history.ops:
        name = world.op_names.get(op.id)
        if name is None:
            continue
        candidates = sorted(world.names.candidates(name, op.start, op.end))
        if len(candidates) == 1:
            out.append(replace(op, catalog=candidates[0]))
            continue
        if not candidates:
            continue  # the name denoted no catalog: a 404 (an acknowledged one is listed by nothing)
        ambiguous += 1
        if op.kind in REMOVALS and op.outcome in ("ok", "uncertain"):
            removal = "drop_table" if op.kind == "rename_table" else op.kind
            out += [replace(op, catalog=c, kind=removal, new_schema=None, new_name=None) for c in candidates]
    return out, ambiguous


def unresolved_names(world: World) -> list[str]:
    """Acknowledged operations whose name denoted no catalog at any time of their interval."""
    assert world.names is not None
    found = []
    for op in world.history.ops:
        name = world.op_names.get(op.id)
        if name is not None and op.outcome == "ok" and not world.names.candidates(name, op.start, op.end):
            found.append(f"{op.describe()} on {name[0]}.{name[1]}, a name that denoted no catalog then")
    return found


# -------------------------------------------------------------------------------------------------- run


@contextmanager
def _cluster(cfg: SoakConfig, rng: random.Random) -> Iterator[World]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-", dir=cfg.work_dir)))
        db_url = cfg.store_url or stack.enter_context(fresh_database(cfg.db, tmp))
        world = World(cfg, db_url, tmp, rng)
        world.sqlite_root.mkdir()
        stack.enter_context(sqlite_root(world.sqlite_root))  # the outsider and the engine check use connectors
        world.fp = Failpoints(tmp / "failpoints")
        world.stub = StubProcess(tmp / "hive-stub").start()
        stack.callback(world.stub.stop)
        if cfg.moves:
            world.mover = catalog_moves.start(tmp)
            stack.callback(catalog_moves.stop, world.mover)

        proxied = db_url
        if cfg.store_url is None:
            url = make_url(db_url)
            world.proxy = TcpProxy(url.host or "127.0.0.1", url.port or (5432 if cfg.db == "postgresql" else 3306)).start()
            stack.callback(world.proxy.stop)
            proxied = url.set(port=world.proxy.port).render_as_string(hide_password=False)

        def stop_servers() -> None:
            lift_faults(world)
            for server in world.servers:
                server.stop(timeout=10)

        stack.callback(stop_servers)
        for i in range(cfg.replicas):
            name = f"r{i + 1}"
            server = ServerProcess(proxied if i == cfg.replicas - 1 else db_url, workers=cfg.workers,
                                   log_path=tmp / f"{name}.log", env=world.server_env(name))
            world.servers.append(server)
            server.start(timeout=60)
            world.replicas.append(Replica(server.url, name, timeout=60))
        try:
            yield world
            if cfg.keep_logs is not None:
                subprocess.run(["cp", "-r", str(tmp), str(cfg.keep_logs)], check=False)
                cfg.say(f"[soak] logs copied to {cfg.keep_logs}")
        except BaseException:
            cfg.say(f"[soak] logs kept in {tmp}.kept")
            subprocess.run(["cp", "-r", str(tmp), f"{tmp}.kept"], check=False)
            raise


def run(cfg: SoakConfig) -> SoakResult:
    seed = cfg.seed if cfg.seed is not None else random.randrange(1 << 31)
    say = cfg.say
    args = f"--db {cfg.db} --lock {cfg.lock} --seconds {cfg.seconds:g} --seed {seed}" + \
        ("" if cfg.nemesis else " --no-nemesis")
    say(f"[soak] seed {seed} (replay: python -m tests.chaos.soak {args})")
    rng = random.Random(seed)
    with _cluster(cfg, rng) as world:
        watch = FenceWatch(lambda: engine_files(world)) if cfg.fence_check else None
        if watch is not None:
            with _store(world) as engine:
                fence_check.install(engine)  # before the first grant
        setup(world)
        if world.mover is not None:
            catalog_moves.setup(world, world.mover)
        say(f"[soak] {cfg.replicas} replicas x {cfg.workers} workers on {cfg.db}, lock ON ({cfg.lock}), "
            f"lease TTL {cfg.ttl_ms} ms, nemesis {'ON' if cfg.nemesis else 'OFF'}")
        started = time.monotonic()
        threads = [threading.Thread(target=workload, args=(world, i), daemon=True) for i in range(cfg.threads)]
        if cfg.structure:
            threads.append(threading.Thread(target=structure, args=(world,), daemon=True))
        if cfg.outsider:
            threads.append(threading.Thread(target=outsider, args=(world,), daemon=True))
        if world.mover is not None:
            threads.append(threading.Thread(target=catalog_moves.mover_thread, args=(world, world.mover), daemon=True))
        chaos = threading.Thread(target=nemesis, args=(world,), daemon=True) if cfg.nemesis else None
        if cfg.store_nemesis is not None:
            threads.append(threading.Thread(target=cfg.store_nemesis, args=(world,), daemon=True))
        if watch is not None:
            threads.append(threading.Thread(target=watch.watch, args=(world.stop, FENCE_READ_S), daemon=True))
        for thread in threads + ([chaos] if chaos else []):
            thread.start()
        deadline = started + cfg.seconds
        while time.monotonic() < deadline:
            world.stop.wait(min(cfg.progress_every_s, max(0.0, deadline - time.monotonic())))
            say(progress_line(world, started))
        world.stop.set()
        if chaos is not None:
            chaos.join(15)
        lift_faults(world)
        for thread in threads + world.driven:
            thread.join(90)
        if world.mover is not None:
            catalog_moves.lift(world.mover, force=True)  # its last cycle let its own go (or failed to)
        elapsed = time.monotonic() - started
        say(progress_line(world, started) + "  (load stopped)")
        if cfg.keep_logs is not None:
            say("[soak] nemesis timeline (monotonic):\n" + "\n".join(f"[soak]   {line}" for line in world.nemesis_log))
        for server in world.servers:
            server.wait_ready(60)
        settled = repair(world)
        say(f"[soak] {settled.output}")
        if cfg.plant_divergence:
            say(f"[soak] planted: {plant_divergence(world)}")
        engine_problems = settled.problems + engines_against_store(world)  # before any API read imports
        moves = ""
        if world.mover is not None:
            moved, compared = catalog_moves.check(world, world.mover)
            engine_problems += moved
            moves = world.mover.summary() + "; the pool at the end: " + "; ".join(compared)
            say(f"[soak] {moves}")
        fences = None
        if watch is not None:
            watch.sample()  # after the repair's barriers, the last grants of the run
            with _store(world) as engine:
                fences = watch.check(engine)
            say(f"[soak] {fences.summary()}")
        state = final_state(world)
        ops, ambiguous = attribute(world)
        report = check(ops, state, uncertain_may_apply=True)
        report.outcomes = Counter(op.outcome for op in world.history.ops)
        report.violations += [Violation("lost-write", "?", detail) for detail in unresolved_names(world)]
        report.violations += [Violation("open-intent" if p.startswith(("intent", "`gravimeta repair`")) else
                                        "divergence", "engine vs store", p) for p in engine_problems]
        tracked, final = world.names.names() if world.names else {}, world.read_names()
        if tracked != final:
            report.violations.append(Violation("lost-write", "?", f"the names the rename answers imply "
                                               f"{sorted(tracked.items())} are not the final names {sorted(final.items())}"))
        if fences is not None:
            report.violations += [Violation("fence-reissue", "engines vs store", p) for p in fences.problems]
        strict = check(ops, state)
        refusals = Counter(f"{op.status} {(op.body or {}).get('type', '')}".strip() for op in world.history.ops
                       if op.outcome in ("failed", "uncertain"))
    return SoakResult(seed, report, strict, list(world.latencies), Counter(world.nemesis_counts), ambiguous,
                      settled, elapsed, refusals, Counter(world.outsider_counts),
                      witnesses(report, ops, world.nemesis_log) + divergence_witnesses(world)
                      + (moves_log(world) if moves and not report.ok else []), fences, freeze_summary(world), moves)


def moves_log(world: World) -> list[str]:
    """Each mover cycle, in order, and the nemesis timeline: what a divergence in the pool needs."""
    if world.mover is None:
        return []
    return (["catalog moves:"] + [f"    {line}" for line in world.mover.log]
            + ["nemesis timeline:"] + [f"    {line}" for line in world.nemesis_log])


def freeze_summary(world: World) -> str:
    """The frozen holders of the run (FROZEN in the nemesis counts), and what the requests on MA's catalogs
    whose interval overlapped a freeze were answered: MA must go on while a replica holding a claim in
    MB is frozen. Says so when no freeze happened."""
    if not world.cfg.nemesis:
        return "frozen MB holder: none (nemesis off)"
    missed = world.nemesis_counts[NOT_FROZEN]
    if not world.freezes:
        return f"frozen MB holder: NEVER HAPPENED in this run ({missed} armed, no worker held a claim in MB there in time)"
    assert world.names is not None
    during: Counter[str] = Counter()
    inside = 0
    for op in list(world.history.ops):
        name = world.op_names.get(op.id)
        if name is None or op.end is None:
            continue
        meant = world.names.candidates(name, op.start, op.end)
        if not meant or not all(i.startswith("MA.") for i in meant):
            continue
        for freeze in world.freezes:
            if op.start < freeze.ended and op.end > freeze.began:
                busy = (op.body or {}).get("type") == "ScopeBusyException"
                during[f"{op.outcome}{' (busy)' if busy else ''}"] += 1
                inside += op.outcome == "ok" and freeze.began <= op.start and op.end <= freeze.ended
                break
    driven = Counter(f"{op.status} {(op.body or {}).get('type', '')}".strip() for op in world.driven_ops)
    return (f"frozen MB holder: {len(world.freezes)} time(s) ({missed} more armed, not reached): "
            + "; ".join(f"{f.replica} at {f.point} holding {f.scope} ({f.identity}) for {f.ended - f.began:.1f}s, "
                        f"MA holder {f.ma_scope or '-'}: {f.probe}" for f in world.freezes)
            + f". MA requests overlapping a freeze: {dict(during) or 'none'}, {inside} begun and acknowledged inside one"
            + f"; the MB and MA requests held in the frozen replica answered {dict(driven)}")


def engine_files(world: World) -> list[EngineFile]:
    """Where the run's engines keep their fence records: each sqlite catalog file, the hive stub's file."""
    files = [EngineFile(f"sqlite catalog {ident}", "sqlite", world.sqlite_root / properties["path"])
             for ident, (provider, properties) in sorted(world.providers.items()) if provider == "sqlite"]
    if world.stub is not None:
        files.append(EngineFile("hive stub", "hive", world.stub.data_dir / METASTORE_FILE))
    return files


@contextmanager
def _store(world: World) -> Iterator[Engine]:
    engine = create_store_engine(world.db_url)
    try:
        yield engine
    finally:
        engine.dispose()


def progress_line(world: World, started: float) -> str:
    outcomes = world.history.outcomes()
    lat = latency_summary(list(world.latencies))
    nem = " ".join(f"{k} {v}" for k, v in sorted(world.nemesis_counts.items())) or "-"
    busy = sum(1 for op in list(world.history.ops) if op.body and op.body.get("type") == "ScopeBusyException")
    return (f"[soak] {time.monotonic() - started:6.1f}s  requests {lat['n']:>5}  ok {outcomes.get('ok', 0):>4} "
            f"noop {outcomes.get('noop', 0):>3} refused {outcomes.get('failed', 0):>4} "
            f"uncertain {outcomes.get('uncertain', 0):>3} (busy {busy})  p99 {lat['p99']:.2f}s max {lat['max']:.2f}s "
            f">3s {lat['over_3s']}  nemesis: {nem}")


def slow_requests(latencies: list[Latency]) -> str:
    """The requests over SLOW_S by kind and answer, e.g. "rename_catalog 503 x2"."""
    slow = Counter(f"{x.kind} {x.status if x.status is not None else 'no answer'}" for x in latencies
                   if x.seconds > SLOW_S)
    return ", ".join(f"{k} x{n}" for k, n in slow.most_common()) or "none"


_LOST = re.compile(r"^(?:table (?P<schema>[^.\s]+)\.(?P<table>\S+)|schema (?P<only>\S+)) missing at the end")


def witnesses(report: Report, ops: list[Op], nemesis_log: list[str]) -> list[str]:
    """For a lost write, every op that was answered anything but success and, had it applied, would have
    removed the lost object (a false "not applied" answer is the usual cause), then the nemesis timeline:
    what a failure message needs so that a CI run that cannot be replayed can still be diagnosed."""
    lines = []
    for violation in report.violations:
        lost = _LOST.match(violation.detail) if violation.kind == "lost-write" else None
        if lost is None:
            continue
        schema, table = (lost["schema"], lost["table"]) if lost["schema"] else (lost["only"], None)
        suspects = [op for op in ops if op.catalog == violation.catalog and op.outcome != "ok"
                    and (_removes_named(op, schema, table))]
        lines.append(f"{violation.catalog} {schema}{'.' + table if table else ''}: "
                     f"{len(suspects)} unacknowledged op(s) that would remove it")
        lines += [f"    {op.describe()} {(op.body or {}).get('type', '')}" for op in suspects[:12]]
    if lines:
        lines += ["nemesis timeline:"] + [f"    {line}" for line in nemesis_log]
    return lines


def _removes_named(op: Op, schema: str, table: str | None) -> bool:
    if op.kind == "drop_schema":
        return op.schema == schema
    return table is not None and op.kind in ("drop_table", "rename_table") and (op.schema, op.table) == (schema, table)


def render(result: SoakResult) -> str:
    lat = latency_summary(result.latencies)
    by_kind = Counter(x.kind for x in result.latencies)
    lines = [f"[soak] seed {result.seed}: {len(result.latencies)} requests in {result.elapsed:.1f}s "
             f"({', '.join(f'{k} {n}' for k, n in sorted(by_kind.items()))})",
             f"[soak] latency p50 {lat['p50']:.3f}s p99 {lat['p99']:.3f}s max {lat['max']:.3f}s, "
             f"{lat['over_3s']} over {SLOW_S:g}s (nemesis pauses included): {slow_requests(result.latencies)}",
             f"[soak] nemesis: {dict(result.nemesis)}; {result.ambiguous} ops overlapped a rename of their "
             "catalog or metalake name (checked only as possible removals)",
             f"[soak] outsider (objects made in the engines, then imported): {dict(result.outsider)}",
             f"[soak] {result.frozen}",
             f"[soak] {result.moves or 'catalog moves: off'}",
             "[soak] refused or uncertain: " + ", ".join(f"{k} {n}" for k, n in result.refusals.most_common(8)),
             "[soak] checker (uncertain ops may have applied):", result.report.render()]
    if result.fences is not None:
        lines.append(f"[soak] {result.fences.summary()}")
    if result.witnesses:
        lines += ["[soak] what may explain the lost writes or divergences:"] + [f"[soak]   {line}" for line in result.witnesses]
    if not result.strict.ok:
        lines.append(f"[soak] for information, the strict checker (uncertain ops explain nothing) finds "
                     f"{len(result.strict.violations)}: " + "; ".join(v.detail for v in result.strict.violations[:3]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("postgresql", "mysql"), default="postgresql")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--lock", choices=LOCKS, default="AUTO")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per replica")
    parser.add_argument("--threads", type=int, default=6, help="workload client threads")
    parser.add_argument("--ttl-ms", type=int, default=1500)
    parser.add_argument("--no-nemesis", action="store_true")
    parser.add_argument("--plant-divergence", action="store_true",
                        help="self-check: drop one table from a sqlite engine after the load; the run must fail")
    parser.add_argument("--keep-logs", type=Path, metavar="DIR",
                        help="copy the replicas' logs there at the end and print the nemesis timeline")
    parser.add_argument("--no-moves", action="store_true", help="no catalogs moved between engines")
    parser.add_argument("--fence-check", action="store_true",
                        help="PostgreSQL: no fence an engine accepted is granted again (tests/chaos/fence_check.py)")
    args = parser.parse_args(argv)
    result = run(SoakConfig(args.db, args.seconds, args.seed, args.lock, args.replicas, args.workers, args.threads,
                            args.ttl_ms, nemesis=not args.no_nemesis, plant_divergence=args.plant_divergence,
                            fence_check=args.fence_check, moves=not args.no_moves, keep_logs=args.keep_logs,
                            say=lambda line: print(line, flush=True)))
    print(render(result), flush=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
