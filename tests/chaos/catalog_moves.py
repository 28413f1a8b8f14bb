"""Catalogs moved between engines during a soak (tests/chaos/soak.py): the mover thread and its checks.

Metalake `mm` (comment MM, which the soak's history checker does not follow) has one hive and one sqlite
catalog at a time. Their engines are a pool: two hive stubs of their own (not the nemesis's stub) and two
sqlite catalog files. One cycle takes one of the two catalogs, X on engine E, and:

  1. makes sure X has schema m0 with table t0 (through gravimeta, on any replica);
  2. hive: sends one drop of m0.t0 through a replica A while E holds drop calls past the client timeout
     (A answers 502, outcome unknown; its intent stays open, and the call stays inside E);
  3. hive: sometimes makes E refuse its next fence barrier (a retirement E misses);
  4. then one of: moves X to the other engine E2 (a change of metastore.uris through another replica; E2
     sometimes missing its own next barrier), then drops X (force); moves X twice (to E2 and back to E,
     then drops it: two retirements of one catalog key on one engine); or drops X where it is (a sqlite
     catalog always: its `path` is immutable, so it leaves its file only by its drop);
  5. creates the successor catalog Y on E and loads m0.t0 through it on a random replica (an import,
     after that replica's first use of Y delivered what E missed);
  6. releases the held drop and waits until E has judged it.

Whatever the held drop did, E and Y's store rows must agree: checked at once (a finding names the cycle)
and, at the end of the run, for every engine of the pool against every catalog of `mm` the store points
at it (engine_check.compare_pool). The nemesis (SIGSTOP, kill -9, failpoints, cut COMMITs) runs meanwhile,
so any step may fail: each cycle reads what the store holds before it goes on, and a cycle whose step
could not be made is abandoned and counted (a catalog moved and left undropped then is not compared with
the engine it is on: gravimeta moves no data). sqlite catalogs get drops, but no held call or missed
barrier (their files are always reachable; the zombie tests hold sqlite calls).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gravimeta.demo.client import COLUMNS, catalog_path
from gravimeta.entities import Catalog
from gravimeta.store.database import create_store_engine
from gravimeta.store.entity_store import EntityStore
from tests.chaos.engine_check import (
    EngineCatalog,
    PoolEngine,
    compare_pool,
    differences,
    engine_tree,
    store_tree,
)
from tests.connectors.stub_process import StubProcess

if TYPE_CHECKING:
    from tests.chaos.soak import World

METALAKE, IDENTITY = "mm", "MM"
SCHEMA, TABLE = "m0", "t0"
#: the stubs hold a drop this long at most; every cycle releases it explicitly long before
HOLD_S = 120
#: how long one step of a cycle may keep retrying through the nemesis
STEP_S = 60.0
HIVE_TIMEOUT_MS = 1000


@dataclass
class Mover:
    """The pool, the current catalog of each provider, and what the cycles did."""

    stubs: list[StubProcess]
    files: list[str]
    current: dict[str, tuple[str, int]] = field(default_factory=dict)  # provider -> (catalog name, engine index)
    counts: Counter[str] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    #: successors whose load of m0.t0 imported nothing (no answer, a refusal, or 404: the table was gone from
    #: the engine, e.g. a held drop let go before a retirement's delivery, which is seen like a change made
    #: outside gravimeta): m0 (and t0) may be in their engine and not in the store without that being a
    #: divergence (nothing imported them). What the store has and the engine lacks is always one.
    unimported: set[str] = field(default_factory=set)
    #: catalogs moved and then not dropped (the nemesis kept the drop from being made): their rows are the
    #: engine's they left, gravimeta moves no data, so they are not compared with the engine they are on
    moved: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    serial: int = 0
    #: a cycle is under way: its stubs' faults and held call are its own to lift (lift() leaves them), so a
    #: held drop is never let go before the successor's import, also when the run stops meanwhile
    busy: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pool(self) -> list[PoolEngine]:
        return ([PoolEngine(f"hive stub {i + 1}", "hive", "metastore.uris", stub.uri) for i, stub in enumerate(self.stubs)]
                + [PoolEngine(f"sqlite file {path}", "sqlite", "path", path) for path in self.files])

    def properties(self, provider: str, index: int) -> dict[str, str]:
        if provider == "hive":
            return {"metastore.uris": self.stubs[index].uri, "client.timeout-ms": str(HIVE_TIMEOUT_MS)}
        return {"path": self.files[index]}

    def engine_of(self, catalog: Catalog) -> int | None:
        key, values = (("metastore.uris", [s.uri for s in self.stubs]) if catalog.provider == "hive"
                       else ("path", self.files))
        value = catalog.properties.get(key)
        return values.index(value) if value in values else None

    def summary(self) -> str:
        counted = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "none"
        return (f"catalog moves: {self.counts['cycles']} cycles ({counted}); "
                f"{len(self.findings)} finding(s)" + (": " + "; ".join(self.findings[:5]) if self.findings else ""))


def start(tmp: Path) -> Mover:
    stubs = [StubProcess(tmp / f"move-stub-{i + 1}").start() for i in range(2)]
    return Mover(stubs, ["moves/f0.db", "moves/f1.db"])


def stop(mover: Mover) -> None:
    for stub in mover.stubs:
        stub.stop()


def lift(mover: Mover, force: bool = False) -> None:
    """End of the load: every fault of the pool's stubs cleared and every held call let go; while a cycle
    is under way only with `force` (the cycle lets its own go, in its order)."""
    if mover.busy and not force:
        return
    for stub in mover.stubs:
        try:
            stub.clear_faults()
            stub.release()
        except OSError:
            pass


def path_of(catalog: str, schema: str | None = None, table: str | None = None) -> str:
    path = catalog_path(METALAKE, catalog)
    if schema is not None:
        path += f"/schemas/{quote(schema, safe='')}"
    if table is not None:
        path += f"/tables/{quote(table, safe='')}"
    return path


def setup(world: World, mover: Mover) -> None:
    world.any_replica("POST", "/api/metalakes", {"name": METALAKE, "comment": IDENTITY, "properties": {}})
    for provider in ("hive", "sqlite"):
        name = f"{provider}-0"
        world.any_replica("POST", f"/api/metalakes/{METALAKE}/catalogs", {
            "name": name, "type": "relational", "provider": provider, "comment": f"{IDENTITY}.{provider}",
            "properties": mover.properties(provider, 0)})
        mover.current[provider] = (name, 0)


def until(world: World, rng: random.Random, kind: str, method: str, path: str, body: Any = None,
          accept: tuple[int, ...] = (200,), finish: bool = False) -> tuple[int | None, Any]:
    """Send until a replica answers one of `accept` or another definite refusal (a 4xx), retrying through
    the nemesis (5xx, no answer) for at most STEP_S; the last answer. Not once the run is stopping,
    unless `finish` (the steps after a move: a cycle begun ends with its catalog dropped)."""
    deadline = time.monotonic() + STEP_S
    answer: tuple[int | None, Any] = (None, {})
    while time.monotonic() < deadline and (finish or not world.stop.is_set()):
        answer = world.request(world.pick(rng), kind, method, path, body)
        if answer[0] in accept or (answer[0] is not None and 400 <= answer[0] < 500):
            return answer
        time.sleep(0.2)
    return answer


def stored(world: World, name: str) -> Catalog | None:
    engine = create_store_engine(world.db_url)
    try:
        return next((c for c in EntityStore(engine).list_catalogs(METALAKE) if c.name == name), None)
    finally:
        engine.dispose()


def mover_thread(world: World, mover: Mover) -> None:
    rng = random.Random(world.rng.random())
    while not world.stop.wait(rng.uniform(0.05, 0.2)):
        provider = rng.choice(("hive", "hive", "sqlite"))  # hive: held calls and missed barriers
        mover.busy = True
        try:
            cycle(world, mover, rng, provider)
        except Exception as exc:  # noqa: BLE001 - a cycle the nemesis broke: counted, the next one goes on
            mover.counts[f"cycle error {type(exc).__name__}"] += 1
            detail = getattr(exc, "detail", None) or exc.__cause__
            mover.log.append(f"cycle error: {type(exc).__name__}: {exc} ({str(detail)[:300]})")
            world.stop.wait(1.0)
        finally:
            mover.busy = False


def cycle(world: World, mover: Mover, rng: random.Random, provider: str) -> None:
    name, here = mover.current[provider]
    there = 1 - here
    mover.serial += 1
    n = mover.serial
    began = time.monotonic()
    steps: list[str] = [f"cycle {n} [{began:.3f}] {name} on engine {here}"]
    if stored(world, name) is None:  # an earlier cycle could not create it (the nemesis): now
        until(world, rng, "move_create", "POST", f"/api/metalakes/{METALAKE}/catalogs", {
            "name": name, "type": "relational", "provider": provider, "comment": f"{IDENTITY}.{provider}",
            "properties": mover.properties(provider, here)}, accept=(200, 409))
    # 1. m0.t0 in X
    until(world, rng, "move_setup", "POST", f"{path_of(name)}/schemas",
          {"name": SCHEMA, "comment": None, "properties": {}}, accept=(200, 409))
    until(world, rng, "move_setup", "POST", f"{path_of(name, SCHEMA)}/tables",
          {"name": TABLE, "comment": None, "columns": COLUMNS, "properties": {}}, accept=(200, 409))
    # 2. a drop held in E
    held: threading.Thread | None = None
    stub = mover.stubs[here] if provider == "hive" else None
    if stub is not None and rng.random() < 0.8:
        stub.fault("hang", seconds=HOLD_S, ops=["drop_table"])
        answers: list[Any] = []
        a = world.pick(rng)
        held = threading.Thread(target=lambda: answers.append(world.request(a, "held_drop", "DELETE",
                                                                           path_of(name, SCHEMA, TABLE))), daemon=True)
        held.start()
        try:
            stub.wait_hung(timeout=20)
            mover.counts["drops held"] += 1
            steps.append(f"drop of {SCHEMA}.{TABLE} held in engine {here} (by {a.name})")
        except TimeoutError:  # it failed before reaching the engine (the nemesis): nothing held
            stub.clear_faults()
            held.join(90)
            held = None
            steps.append(f"the drop to hold got {answers[0][0] if answers else 'no answer'} before the engine")
    # 3. E misses its next barrier
    if stub is not None and rng.random() < 0.75:
        stub.fault("fail", count=1, mode="500", ops=["fence"])
        mover.counts["barriers missed"] += 1
        steps.append(f"engine {here} refuses its next barrier")
    # 4. move and drop, move twice and drop, or drop
    # a sqlite catalog's `path` is immutable: it leaves its file only by its drop
    how = rng.choice(("move", "move", "move twice", "drop")) if provider == "hive" else "drop"
    if how in ("move", "move twice"):
        if provider == "hive" and rng.random() < 0.5:
            mover.stubs[there].fault("fail", count=1, mode="500", ops=["fence"])
            mover.counts["barriers missed"] += 1
            steps.append(f"engine {there} refuses its next barrier")
        key = "metastore.uris"
        targets = [there] if how == "move" else [there, here]
        for target in targets:
            status, body = until(world, rng, "move_catalog", "PUT", path_of(name), {"updates": [
                {"@type": "setProperty", "property": key, "value": mover.properties(provider, target)[key]}]})
            mover.counts[f"moves {status}"] += 1
            steps.append(f"moved to engine {target}: {status} {(body or {}).get('type', '')}")
            if status == 200 and target != here:
                mover.moved.add(name)
            elif status == 200:
                mover.moved.discard(name)
    status, body = until(world, rng, "move_drop", "DELETE", f"{path_of(name)}?force=true", finish=True)
    mover.counts[f"drops {status}"] += 1
    steps.append(f"dropped: {status} {body if status == 200 else (body or {}).get('type', '')}")
    left = stored(world, name)
    if left is not None:  # the nemesis kept it from being dropped: abandon the cycle
        mover.counts["cycles abandoned"] += 1
        _release(stub, held)
        on = mover.engine_of(left)
        mover.current[provider] = (name, here if on is None else on)
        mover.log.append("; ".join(steps + ["abandoned: not dropped"]))
        return
    # 5. the successor on E imports m0.t0
    successor = f"{provider}-{n}"
    status, body = until(world, rng, "move_create", "POST", f"/api/metalakes/{METALAKE}/catalogs", {
        "name": successor, "type": "relational", "provider": provider, "comment": f"{IDENTITY}.{provider}",
        "properties": mover.properties(provider, here)}, accept=(200, 409), finish=True)
    mover.current[provider] = (successor, here)  # made by the next cycle if this one could not
    if stored(world, successor) is None:
        mover.counts["cycles abandoned"] += 1
        _release(stub, held)
        mover.log.append("; ".join(steps + [f"abandoned: successor not created ({status})"]))
        return
    status, body = until(world, rng, "move_import", "GET", path_of(successor, SCHEMA, TABLE), accept=(200, 404),
                         finish=True)
    steps.append(f"{successor} loads {SCHEMA}.{TABLE}: {status} {(body or {}).get('type', '')}")
    mover.counts[f"imports {status}"] += 1
    if status != 200:
        mover.unimported.add(successor)
    # 6. the held drop goes on
    _release(stub, held)
    if held is not None:
        steps.append("held drop released")
    mover.counts["cycles"] += 1
    found = _agree(world, mover, provider, successor, here)
    for text in found:
        mover.findings.append(f"{text} (after {'; '.join(steps)})")
    mover.log.append("; ".join(steps) + (f"; FOUND {found}" if found else "; agree"))


def _release(stub: StubProcess | None, held: threading.Thread | None) -> None:
    if stub is None:
        return
    stub.release()
    stub.wait_idle(30)
    stub.clear_faults()
    if held is not None:
        held.join(90)


def _agree(world: World, mover: Mover, provider: str, name: str, index: int) -> list[str]:
    """The successor's store rows against its engine, now."""
    engine = create_store_engine(world.db_url)
    try:
        from connectors.registry import ConnectorRegistry

        cat = EngineCatalog(f"{IDENTITY}.{provider}", METALAKE, name, provider, mover.properties(provider, index))
        store = store_tree(EntityStore(engine), METALAKE, name)
        return [d.text for d in differences(cat, store, engine_tree(ConnectorRegistry(), cat))
                if not (d.only_in == "engine" and name in mover.unimported)]
    finally:
        engine.dispose()


def check(world: World, mover: Mover) -> tuple[list[str], list[str]]:
    """At the end (after the final repair, before any API read): every engine of the pool against the
    catalogs of `mm` the store points at it. (problems, one line per engine saying what it was compared with)"""
    engine = create_store_engine(world.db_url)
    try:
        found, compared = compare_pool(engine, METALAKE, mover.pool(), world.sqlite_root)
    finally:
        engine.dispose()
    excused = [d for d in found if d.only_in == "engine" and d.identity in mover.unimported
               or d.identity in mover.moved]
    for d in excused:
        why = "moved, not dropped: its rows are the engine's it left" if d.identity in mover.moved else \
            "the successor's load of it got no answer"
        world.cfg.say(f"[soak] not a divergence ({why}): {d.text}")
    return ([d.text for d in found if d not in excused] + [f"during the run: {text}" for text in mover.findings],
            compared)

