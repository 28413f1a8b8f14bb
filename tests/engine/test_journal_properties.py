"""A property test of the operation journal (hypothesis): random sequences of schema and table creates,
renames and drops on a `sqlite` catalog, with the engine failing at each step (refused, answer lost, the
process dying before or after the engine call), repairs by another replica, late engine calls of dead
holders, and the catalog dropped and re-created under the same name (on a new file, or as a memory
catalog). Two replicas (two service stacks on one SQLite store, cross-node claims on) take turns.

After every step, and after a final repair, it checks:
- an acknowledged operation is in the store right away, and the engine got it;
- a definite refusal (4xx, FenceLost) changed nothing in the engine and left no intent that could still
  apply it;
- a late call of a dead holder whose intent a repair has already settled is refused by the engine;
- a catalog re-created under the same name holds only what was done to it (no old intent applied);
- at the end the journal is empty or only holds intents marked stuck, and store and engine agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connectors.registry import ConnectorRegistry
from connectors.sqlite import SQLiteCatalogConnector
from gravimeta import errors
from gravimeta.app import build_services
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table

SCHEMAS, TABLES = ("s0", "s1"), ("t0", "t1")
FAULTS = (None, None, "rejected", "refused", "lost", "died", "died", "died-after")
ENGINE_METHODS = ("create_schema", "drop_schema", "create_table", "rename_table", "drop_table", "alter_table")


class ProcessDied(BaseException):
    """The replica dying at this point (no `except Exception` sees it)."""


@dataclass
class Faults:
    """The next engine call's fault, and the calls of dead holders that may still land."""

    next: str | None = None
    applied: int = 0  # engine calls that changed the engine in this operation
    #: (method, args, kwargs, intent id) of calls whose holder died before sending them
    zombies: list[tuple[str, tuple[Any, ...], dict[str, Any], int]] = field(default_factory=list)
    died_with: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None


FAULT = Faults()


class Faulty(SQLiteCatalogConnector):
    pass


def _wrap(method: str) -> Callable[..., object]:
    def call(self: Faulty, *args: Any, **kwargs: Any) -> object:
        mode, FAULT.next = FAULT.next, None
        if mode == "died":  # died before sending: its call may still be made later, by a paused holder
            FAULT.died_with = (method, (self, *args), kwargs)
            raise ProcessDied(method)
        if mode == "rejected":
            raise errors.IllegalArgument(f"injected: {method} rejected")
        if mode == "refused":
            raise errors.ConnectionFailed(f"injected: {method} refused")
        result = getattr(SQLiteCatalogConnector, method)(self, *args, **kwargs)
        FAULT.applied += 1
        if mode == "lost":
            raise errors.ConnectionFailed(f"injected: the answer of {method} was lost")
        if mode == "died-after":
            raise ProcessDied(method)
        return result

    return call


for _method in ENGINE_METHODS:
    setattr(Faulty, _method, _wrap(_method))

op_names = (st.sampled_from(SCHEMAS), st.sampled_from(TABLES))
operations = st.one_of(
    st.tuples(st.just("create_schema"), st.sampled_from(SCHEMAS), st.sampled_from(FAULTS)),
    st.tuples(st.just("drop_schema"), st.sampled_from(SCHEMAS), st.sampled_from(FAULTS)),
    st.tuples(st.just("create_table"), *op_names, st.sampled_from(FAULTS)),
    st.tuples(st.just("create_table"), *op_names, st.sampled_from(FAULTS)),
    st.tuples(st.just("rename_table"), *op_names, *op_names, st.sampled_from(FAULTS)),
    st.tuples(st.just("drop_table"), *op_names, st.sampled_from(FAULTS)),
)
# operations three times as often as each of the other steps
steps = st.one_of(operations, operations, operations,
                  st.tuples(st.just("repair_by_other_replica")),
                  st.tuples(st.just("dead_holders_calls_land")),
                  st.tuples(st.just("recreate_catalog"), st.sampled_from(["sqlite", "memory"])))


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """Two replicas' service stacks on one SQLite store, claims on, the faulty sqlite connector."""
    import os

    from tests.support.databases import fresh_database

    directory = tmp_path_factory.mktemp("journal-properties")
    old_root = os.environ.get("GRAVIMETA_SQLITE_CATALOG_ROOT")
    os.environ["GRAVIMETA_SQLITE_CATALOG_ROOT"] = str(directory / "root")
    with fresh_database("sqlite", directory) as url:
        stacks = [build_services(Settings(store_url=url, distributed_lock_enabled=True),
                                 ConnectorRegistry({"sqlite": Faulty})) for _ in range(2)]
        yield stacks
        for stack in stacks:
            stack.store.engine.dispose()
    if old_root is None:
        os.environ.pop("GRAVIMETA_SQLITE_CATALOG_ROOT", None)
    else:
        os.environ["GRAVIMETA_SQLITE_CATALOG_ROOT"] = old_root


class Run:
    """One example: its own metalake `m<n>` with catalog `c`."""

    count = 0

    def __init__(self, replicas: list[Any]):
        Run.count += 1
        self.a, self.b = replicas
        self.m, self.incarnation, self.provider = f"m{Run.count}", 0, "sqlite"
        FAULT.zombies.clear()
        self.a.dispatchers.metalakes.create(Metalake(self.m), "u")
        self.create_catalog("sqlite")

    def create_catalog(self, provider: str) -> None:
        self.incarnation += 1
        self.provider = provider
        properties = {"path": f"{self.m}/c-{self.incarnation}.db"} if provider == "sqlite" else {}
        self.a.dispatchers.catalogs.create(Catalog(self.m, "c", "relational", provider, properties=properties), "u")
        FAULT.zombies.clear()
        self.a.dispatchers.schemas.create(self.m, "c", Schema("s0"), "u")  # something to work on at once
        self.a.dispatchers.tables.create(self.m, "c", "s0", Table("t0", [Column("id", "long")]), "u")  # calls of the old catalog's holders land in its old file, if at all

    # ---------------------------------------------------------------- views

    def engine(self) -> dict[str, list[str]]:
        connector = self.a.connectors.for_catalog(self.a.store.get_catalog(self.m, "c"))
        return {s: sorted(connector.list_tables(s)) for s in connector.list_schemas()}

    def store(self) -> dict[str, list[str]]:
        return {s.name: self.a.store.list_tables(self.m, "c", s.name) for s in self.a.store.list_schemas(self.m, "c")}

    # ---------------------------------------------------------------- steps

    def operation(self, kind: str, args: tuple[Any, ...]) -> None:
        d, m = self.a.dispatchers, self.m
        fault = args[-1] if self.provider == "sqlite" else None
        calls: dict[str, Callable[[], Any]] = {
            "create_schema": lambda: d.schemas.create(m, "c", Schema(args[0]), "u"),
            "drop_schema": lambda: d.schemas.drop(m, "c", args[0], cascade=True),
            "create_table": lambda: d.tables.create(m, "c", args[0], Table(args[1], [Column("id", "long")]), "u"),
            "rename_table": lambda: d.tables.alter(m, "c", args[0], args[1], [
                {"@type": "rename", "newName": args[3], **({"newSchemaName": args[2]} if args[2] != args[0] else {})}], "u"),
            "drop_table": lambda: d.tables.drop(m, "c", args[0], args[1]),
        }
        before_engine = self.engine() if self.provider == "sqlite" else None
        open_before = {i.id for i in self.a.reconciler.journal.pending()}
        FAULT.next, FAULT.applied, FAULT.died_with = fault, 0, None
        try:
            result = calls[kind]()
            outcome = "ok"
        except ProcessDied:
            outcome = "died"
        except errors.GravitinoError as exc:
            outcome = "unknown" if exc.http_status >= 500 else "refused"
        FAULT.next = None
        new_intents = {i.id for i in self.a.reconciler.journal.pending()} - open_before
        if outcome == "ok":
            self.check_acknowledged(kind, args, result)
        if outcome == "refused":  # a definite refusal: nothing happened, nothing can happen later
            assert FAULT.applied == 0 and new_intents == set(), f"refused {kind} {args}"
            if before_engine is not None:
                assert self.engine() == before_engine, f"a refused {kind} changed the engine"
        if FAULT.died_with is not None:
            [intent] = new_intents
            FAULT.zombies.append((*FAULT.died_with, intent))

    def check_acknowledged(self, kind: str, args: tuple[Any, ...], result: Any) -> None:
        store = self.store()
        if kind == "create_schema":
            assert args[0] in store
        elif kind == "drop_schema":
            assert args[0] not in store
        elif kind == "create_table":
            assert args[1] in store.get(args[0], [])
        elif kind == "rename_table":
            assert args[3] in store.get(args[2], [])
            assert (args[0], args[1]) == (args[2], args[3]) or args[1] not in store.get(args[0], [])
        elif kind == "drop_table":
            assert args[1] not in store.get(args[0], [])
        if self.provider != "sqlite":
            return
        engine = self.engine()  # the engine got it too
        if kind == "create_schema":
            assert args[0] in engine
        elif kind == "drop_schema":
            assert args[0] not in engine
        elif kind == "create_table":
            assert args[1] in engine.get(args[0], [])
        elif kind == "rename_table":
            assert args[3] in engine.get(args[2], [])
        elif kind == "drop_table":
            assert args[1] not in engine.get(args[0], [])

    def dead_holders_calls_land(self) -> None:
        """The calls holders were about to send when they died reach the engine now. If an intent was
        settled since (rolled back by a repair that fenced its holder out), the engine must refuse it."""
        while FAULT.zombies:
            self.a_dead_holders_call_lands(*FAULT.zombies.pop(0))

    def a_dead_holders_call_lands(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], intent: int) -> None:
        still_open = intent in {i.id for i in self.a.reconciler.journal.pending()}
        try:
            getattr(SQLiteCatalogConnector, method)(*args, **kwargs)
            landed = True
        except errors.StaleFence:
            landed = False
        except errors.GravitinoError:
            return  # refused by the engine for what it has (gone, exists): nothing changed
        # a late call may land only while its intent is open (a repair will then see it)
        assert still_open or not landed, f"a late {method} landed after its intent {intent} was settled"

    def repair_by_other_replica(self) -> None:
        self.b.reconciler.repair_pending(settle_s=0)

    def finish(self) -> None:
        self.dead_holders_calls_land()
        self.b.reconciler.repair_pending(settle_s=0)
        left = [i for i in self.b.reconciler.journal.pending() if i.scope_path.startswith(f"/{self.m}/")]
        assert all(i.state == "stuck" for i in left), left
        if self.provider == "sqlite":
            assert self.store() == self.engine(), "store and engine disagree after the final repair"
        for intent in left:  # what an operator would look at; later examples need not re-examine it
            self.b.reconciler.journal.withdraw(intent.id)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.lists(steps, min_size=3, max_size=20))
@example([("create_table", "s0", "t1", "died"), ("repair_by_other_replica",), ("dead_holders_calls_land",)])
@example([("drop_table", "s0", "t0", "died"), ("create_table", "s0", "t1", None), ("dead_holders_calls_land",)])
@example([("rename_table", "s0", "t0", "s1", "t0", "died"), ("create_schema", "s1", "lost"),
          ("repair_by_other_replica",), ("dead_holders_calls_land",), ("recreate_catalog", "memory"),
          ("create_table", "s0", "t1", None)])
def test_store_and_engine_agree_and_every_answer_is_explained(replicas, sequence):
    run = Run(replicas)
    for step in sequence:
        kind, args = step[0], step[1:]
        if kind == "repair_by_other_replica":
            run.repair_by_other_replica()
        elif kind == "dead_holders_calls_land":
            run.dead_holders_calls_land()
        elif kind == "recreate_catalog":
            run.a.dispatchers.catalogs.drop(run.m, "c", force=True)
            run.create_catalog(args[0])
            assert run.store() == {"s0": ["t0"]}, "a re-created catalog inherited something"
        else:
            run.operation(kind, args)
    run.finish()
