"""`gravimeta demo race`: conflicting structural operations fired at several replicas at once, then
the history checker on the final state.

Setup (through the first replica): a fresh metalake with a `sqlite` catalog (a real SQLite file that
every replica shares: store and engine can really diverge) and a `memory` catalog, each with schemas
s0..s7 holding a table t0. Then `threads` // 3 workers send conflicts, each request to a random replica
(directly, not through the load balancer, so that conflicting requests really run on different nodes).
Bounded by `ops` and `seconds`.

The workload aims at the window that only the distributed lock closes. A `sqlite` catalog's schema drop
is journalled: intent, engine call, store step. With the lock off, any other structural request in that
catalog (each first repairs the open intents it finds there) can find the drop's intent after its engine
call and before its store step: the engine no longer has the schema, so it rolls the drop forward. The
drop then finds nothing to delete and answers `dropped: false`, and a create of the same name on a third
replica succeeds: two acknowledged creates of one schema with no acknowledged removal in between (or a
table acknowledged, then gone). So each conflict is a schema drop fired together with creates of that
schema (or of a table in it) on the other replicas. Each worker has schemas of its own in the shared
catalog, so that another worker's acknowledged drop cannot excuse what its conflict left. One conflict in
five goes to the `memory` catalog, whose operations are each one store transaction that the store's row
locks serialise: the control, clean either way.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from gravimeta.demo.client import Recorder, Replica
from gravimeta.demo.history import History, Report, check
from gravimeta.demo.state import read_state

SCHEMAS = tuple(f"s{i}" for i in range(8))
TABLES = ("t0", "t1", "t2", "t3")


@dataclass
class RaceConfig:
    replicas: list[Replica]
    engine: Engine
    sqlite_root: Path | None
    ops: int = 400
    seconds: float = 40.0
    threads: int = 12
    seed: int | None = None
    catalogs: tuple[str, ...] = ("sqlite", "memory")


@dataclass
class RaceResult:
    metalake: str
    history: History
    report: Report
    elapsed: float


def setup(recorder: Recorder, replica: Replica, run_id: str, providers: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Create the metalake, one catalog per provider, schemas and tables; return the catalog map."""
    status, body = replica.request("POST", "/api/metalakes", {"name": recorder.metalake, "properties": {}})
    if status != 200:
        raise RuntimeError(f"cannot create metalake {recorder.metalake}: {status} {body}")
    catalogs: dict[str, dict[str, str]] = {}
    for provider in providers:
        name = f"{provider}_cat"
        properties = {"path": f"race-{run_id}/{name}.db"} if provider == "sqlite" else {}
        status, body = replica.request("POST", f"/api/metalakes/{recorder.metalake}/catalogs", {
            "name": name, "type": "relational", "provider": provider, "comment": None, "properties": properties})
        if status != 200:
            raise RuntimeError(f"cannot create catalog {name}: {status} {body}")
        catalogs[name] = {"provider": provider, **properties}
        for schema in SCHEMAS:
            _must(recorder.create_schema(replica, name, schema))
            _must(recorder.create_table(replica, name, schema, TABLES[0]))
    return catalogs


def _must(op: object) -> None:
    if getattr(op, "outcome", None) != "ok":
        raise RuntimeError(f"setup step failed: {op}")


Step = Callable[[Replica], object]


def _scenario(rng: random.Random, rec: Recorder, catalog: str, schemas: tuple[str, ...]) -> tuple[list[Step], list[Step]]:
    """One conflict on one of `schemas`: (preparation steps run one after the other, so that the conflict
    is real; operations then fired at the same moment on different replicas)."""
    s = rng.choice(schemas)
    t, t2 = rng.sample(TABLES, 2)

    def schema(name: str) -> Step:
        return lambda r: rec.create_schema(r, catalog, name)

    def table(name: str) -> Step:
        return lambda r: rec.create_table(r, catalog, s, name)

    def drop_schema(r: Replica) -> object:
        return rec.drop_schema(r, catalog, s, cascade=True)

    # name: (weight, preparation, the conflict): a drop and, on other replicas, creates of the same name
    scenarios: dict[str, tuple[int, list[Step], list[Step]]] = {
        "drop vs re-create schema": (2, [schema(s), table(t)], [drop_schema, schema(s), table(t2)]),
        "drop vs two re-creates": (1, [schema(s)], [drop_schema, schema(s), schema(s)]),
        "drop vs create table in it": (1, [schema(s)], [drop_schema, table(t2), schema(s)]),
    }
    names = sorted(scenarios)
    _, prepare, conflict = scenarios[rng.choices(names, weights=[scenarios[n][0] for n in names])[0]]
    return prepare, conflict


def _catalog(rng: random.Random, catalogs: dict[str, dict[str, str]]) -> str:
    """The catalog of the next conflict: a `sqlite` one four times in five (its operations have the
    windows), another one otherwise (the `memory` control)."""
    names = sorted(catalogs)
    journalled = [n for n in names if catalogs[n]["provider"] == "sqlite"]
    if journalled and (len(journalled) == len(names) or rng.random() < 0.8):
        return rng.choice(journalled)
    return rng.choice([n for n in names if n not in journalled])


def _fire(steps: list[Step], replicas: list[Replica], rng: random.Random) -> None:
    """Run the steps in parallel threads released together, each on a different replica when possible."""
    chosen = rng.sample(replicas, len(steps)) if len(replicas) >= len(steps) else [rng.choice(replicas) for _ in steps]
    barrier = threading.Barrier(len(steps))

    def run(step: Step, replica: Replica) -> None:
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:
            pass
        step(replica)

    threads = [threading.Thread(target=run, args=(st, rep), daemon=True) for st, rep in zip(steps, chosen, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def run_race(cfg: RaceConfig, progress: Callable[[str], None] | None = None) -> RaceResult:
    """Set up, race, read the final state, check it."""
    rng = random.Random(cfg.seed)
    run_id = uuid.uuid4().hex[:8]
    history = History()
    recorder = Recorder(history, f"race_{run_id}")
    catalogs = setup(recorder, cfg.replicas[0], run_id, cfg.catalogs)
    setup_ops = len(history.ops)
    issued = 0
    issued_lock = threading.Lock()
    started = time.monotonic()
    deadline = started + cfg.seconds

    runners = max(1, cfg.threads // 3)  # each runner fires 3 requests at once

    def worker(index: int) -> None:
        nonlocal issued
        local = random.Random(rng.random() + index)
        mine = SCHEMAS[index::runners] or SCHEMAS  # its own schemas: another worker's drop excuses nothing
        while time.monotonic() < deadline:
            prepare, steps = _scenario(local, recorder, _catalog(local, catalogs), mine)
            with issued_lock:
                if issued + len(prepare) + len(steps) > cfg.ops:
                    return
                issued += len(prepare) + len(steps)
            first = local.choice(cfg.replicas)
            for step in prepare:
                step(first)
            _fire(steps, cfg.replicas, local)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(runners)]
    for thread in threads:
        thread.start()
    show = progress or (lambda line: None)
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline + 60:
        show(_progress_line(history, setup_ops, cfg, started))
        time.sleep(0.2)
    for thread in threads:
        thread.join(timeout=max(0.0, deadline + 60 - time.monotonic()))
    show(_progress_line(history, setup_ops, cfg, started))
    elapsed = time.monotonic() - started
    state = read_state(cfg.replicas[0], cfg.engine, recorder.metalake, catalogs, cfg.sqlite_root)
    return RaceResult(recorder.metalake, history, check(history, state), elapsed)


def _progress_line(history: History, setup_ops: int, cfg: RaceConfig, started: float) -> str:
    outcomes = history.outcomes()
    done = sum(outcomes.values()) - setup_ops
    return (f"[race] {done:>4}/{cfg.ops} ops  ok {outcomes.get('ok', 0) - setup_ops:>4}  noop {outcomes.get('noop', 0):>4}"
            f"  refused {outcomes.get('failed', 0):>4}  uncertain {outcomes.get('uncertain', 0):>3}"
            f"  {time.monotonic() - started:5.1f}s")
