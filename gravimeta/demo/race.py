"""`gravimeta demo race`: conflicting structural operations fired at several replicas at once, then
the history checker on the final state.

Setup (through the first replica): a fresh metalake with a `sqlite` catalog (a real SQLite file that
every replica shares: store and engine can really diverge) and a `memory` catalog, each with schemas
s0..s2 holding tables t0, t1. Then `threads` workers send, each to a random replica (directly, not
through the load balancer, so that conflicting requests really run on different nodes), operations
drawn from a small name space so that they collide: cross-schema and same-schema table renames,
drop-cascade of a schema against creates of tables in it, renames against drops, same-name creates,
schema re-creates. Bounded by `ops` and `seconds`.
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

SCHEMAS = ("s0", "s1", "s2")
TABLES = ("t0", "t1", "t2", "t3")


@dataclass
class RaceConfig:
    replicas: list[Replica]
    engine: Engine
    sqlite_root: Path | None
    ops: int = 600
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
            for table in TABLES[:2]:
                _must(recorder.create_table(replica, name, schema, table))
    return catalogs


def _must(op: object) -> None:
    if getattr(op, "outcome", None) != "ok":
        raise RuntimeError(f"setup step failed: {op}")


Step = Callable[[Replica], object]


def _scenario(rng: random.Random, rec: Recorder, catalog: str) -> tuple[list[Step], list[Step]]:
    """One conflict: (preparation steps run one after the other, so that the conflict is real;
    operations then fired at the same moment on different replicas)."""
    s, s2 = rng.sample(SCHEMAS, 2)
    t, t2 = rng.sample(TABLES, 2)
    prepare: list[Step] = [lambda r: rec.create_schema(r, catalog, s), lambda r: rec.create_schema(r, catalog, s2),
                           lambda r: rec.create_table(r, catalog, s, t)]
    scenarios: dict[str, list[Step]] = {
        "rename vs drop": [lambda r: rec.rename_table(r, catalog, s, t, s2 if rng.random() < 0.5 else s, t2),
                           lambda r: rec.drop_table(r, catalog, s, t)],
        "drop-cascade vs create table": [lambda r: rec.drop_schema(r, catalog, s, cascade=True),
                                         lambda r: rec.create_table(r, catalog, s, t2),
                                         lambda r: rec.rename_table(r, catalog, s, t, s, t2)],
        "same-name creates": [lambda r: rec.create_table(r, catalog, s2, t) for _ in range(3)],
        "cross-schema renames": [lambda r: rec.rename_table(r, catalog, s, t, s2, t),
                                 lambda r: rec.create_table(r, catalog, s2, t),
                                 lambda r: rec.drop_schema(r, catalog, s2, cascade=True)],
        "rename vs rename": [lambda r: rec.rename_table(r, catalog, s, t, s, t2),
                             lambda r: rec.rename_table(r, catalog, s, t, s2, t2)],
        "drop vs re-create schema": [lambda r: rec.drop_schema(r, catalog, s, cascade=True),
                                     lambda r: rec.create_schema(r, catalog, s),
                                     lambda r: rec.create_table(r, catalog, s, t2)],
    }
    return prepare, scenarios[rng.choice(sorted(scenarios))]


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
    names = sorted(catalogs)
    issued = 0
    issued_lock = threading.Lock()
    started = time.monotonic()
    deadline = started + cfg.seconds

    def worker(index: int) -> None:
        nonlocal issued
        local = random.Random(rng.random() + index)
        while time.monotonic() < deadline:
            prepare, steps = _scenario(local, recorder, local.choice(names))
            with issued_lock:
                if issued + len(prepare) + len(steps) > cfg.ops:
                    return
                issued += len(prepare) + len(steps)
            first = local.choice(cfg.replicas)
            for step in prepare:
                step(first)
            _fire(steps, cfg.replicas, local)

    runners = max(1, cfg.threads // 3)  # each runner fires 2-3 requests at once
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
