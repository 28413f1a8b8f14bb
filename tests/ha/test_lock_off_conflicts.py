"""Lock off, the store still decides (a claim-layer bug degrades to a clear conflict
error). Without the distributed lock two replicas can each record the intent of the same structural
change before either applies it. The apply step of the second one then finds the change already in the
store, and it must answer what a request arriving after the first one gets: 409 XAlreadyExists for a
create, 404 for a rename whose table is gone, `dropped: false` for a drop. Only when the change found
is this request's own (a repair on another replica rolled its intent forward) does it answer success.
docs/consistency.md §3.

Two "replicas" are two service stacks (each with its own TreeLock, connectors and reconciler, lock off)
on one metadata database and one SQLite catalog file. A hook runs replica B's request at an exact
point of replica A's engine call (`Hooked.plan`, `elsewhere`: in its own thread, joined), so each
interleaving is deterministic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from connectors.registry import ConnectorRegistry
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector
from gravimeta import errors
from gravimeta.app import Services, build_services
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table

U = "u"
ENGINE_METHODS = ("create_schema", "drop_schema", "create_table", "rename_table", "drop_table")


class ProcessDied(BaseException):
    """Stands for replica A dying at this point."""


class Hooked(SQLiteCatalogConnector):
    """The sqlite connector; `plan[method] = (before, after)` runs those callbacks (None: nothing)
    around the next real call of that engine method, once."""

    plan: dict[str, tuple[Callable[[], object] | None, Callable[[], object] | None]] = {}


def _hooked(method: str) -> Callable[..., object]:
    def call(self: Hooked, *args: object, **kwargs: object) -> object:
        before, after = Hooked.plan.pop(method, (None, None))
        if before:
            before()
        result = getattr(SQLiteCatalogConnector, method)(self, *args, **kwargs)
        if after:
            after()
        return result

    return call


for _method in ENGINE_METHODS:
    setattr(Hooked, _method, _hooked(_method))


def elsewhere(*actions: Callable[[], object]) -> tuple[Callable[[], None], list[Any]]:
    """A callback that runs `actions` (other replicas' requests) one after the other in a thread of
    their own and waits for them; their outcomes (a result or the exception raised) fill the list."""
    outcomes: list[Any] = []

    def run() -> None:
        for action in actions:
            try:
                outcomes.append(action())
            except Exception as exc:
                outcomes.append(exc)

    def callback() -> None:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join(30)

    return callback, outcomes


def t(name: str = "t", *extra: str) -> Table:
    return Table(name, [Column("id", "long", nullable=False), *(Column(c, "string") for c in extra)])


@pytest.fixture
def replicas(db_url, tmp_path, monkeypatch) -> Iterator[tuple[Services, Services]]:
    """Replicas A and B, lock off, sharing the database and catalog m.c (sqlite) with schema s."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "engines"))
    registry = ConnectorRegistry({"sqlite": Hooked})
    a, b = (build_services(Settings(store_url=db_url), registry) for _ in range(2))
    assert a.coordinator.claims is None and b.coordinator.claims is None  # the lock is off
    a.dispatchers.metalakes.create(Metalake("m"), U)
    a.dispatchers.catalogs.create(Catalog("m", "c", "relational", "sqlite", properties={"path": "c.db"}), U)
    a.dispatchers.schemas.create("m", "c", Schema("s"), U)
    yield a, b
    Hooked.plan.clear()
    for services in (a, b):
        services.coordinator.runtime.heartbeat.stop()  # type: ignore[union-attr]
        services.store.engine.dispose()


def views(services: Services) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(store, engine) of catalog m.c: schema -> table names."""
    store = {s.name: services.store.list_tables("m", "c", s.name) for s in services.store.list_schemas("m", "c")}
    engine = services.connectors.for_catalog(services.store.get_catalog("m", "c"))
    return store, {s: sorted(engine.list_tables(s)) for s in engine.list_schemas()}


def settled(a: Services) -> None:
    """Store and engine agree, and no intent is left open."""
    store, engine = views(a)
    assert store == engine, f"store {store} != engine {engine}"
    assert a.reconciler.journal.pending() == []


@pytest.mark.parametrize("kind", ["table", "schema"])
def test_a_create_that_another_replica_made_while_it_ran_is_409(replicas, kind):
    a, b = replicas
    if kind == "table":
        create = lambda d: d.tables.create("m", "c", "s", t(), U)  # noqa: E731
        method, expected = "create_table", errors.TableAlreadyExists
    else:
        create = lambda d: d.schemas.create("m", "c", Schema("s2"), U)  # noqa: E731
        method, expected = "create_schema", errors.SchemaAlreadyExists
    b_creates, theirs = elsewhere(lambda: create(b.dispatchers))
    Hooked.plan[method] = (b_creates, None)  # B runs its whole create while A is at its engine call
    with pytest.raises(expected) as refused:
        create(a.dispatchers)
    assert (refused.value.http_status, refused.value.code) == (409, 1004)
    assert "already exists" in refused.value.message
    assert not isinstance(theirs[0], Exception), theirs  # B's create is the one acknowledged
    settled(a)
    assert views(a)[0] == ({"s": ["t"]} if kind == "table" else {"s": [], "s2": []})


def test_a_create_whose_intent_another_replica_rolled_forward_is_still_acknowledged(replicas):
    # B's request, after A's engine call, first repairs A's open intent (the engine has the table:
    # roll forward) and is then refused itself; A's apply finds its own change made and answers 200.
    a, b = replicas
    b_creates, theirs = elsewhere(lambda: b.dispatchers.tables.create("m", "c", "s", t(), U))
    Hooked.plan["create_table"] = (None, b_creates)
    assert a.dispatchers.tables.create("m", "c", "s", t(), U).name == "t"
    assert [type(o) for o in theirs] == [errors.TableAlreadyExists]
    settled(a)


def test_a_repair_leaves_a_superseded_young_intent_to_its_request_which_answers_409(replicas):
    # B creates the table while A is at its engine call; after the call a repair (the next structural
    # operation of any replica, or `gravimeta repair`) meets A's intent. It must not end it: A's request
    # would then take the change for its own and answer 200 as well.
    a, b = replicas
    b_creates, theirs = elsewhere(lambda: b.dispatchers.tables.create("m", "c", "s", t(), U))
    b_repairs, repaired = elsewhere(lambda: b.reconciler.repair_pending())
    Hooked.plan["create_table"] = (b_creates, b_repairs)
    with pytest.raises(errors.TableAlreadyExists):
        a.dispatchers.tables.create("m", "c", "s", t(), U)
    assert not isinstance(theirs[0], Exception), theirs
    assert repaired == [{"waiting": 1}]
    settled(a)


def test_a_superseded_intent_of_a_replica_that_died_is_discarded_once_settled(replicas):
    a, b = replicas
    b_creates, theirs = elsewhere(lambda: b.dispatchers.tables.create("m", "c", "s", t(), U))

    def die() -> None:
        raise ProcessDied("replica A died after its engine call")

    Hooked.plan["create_table"] = (b_creates, die)
    with pytest.raises(ProcessDied):
        a.dispatchers.tables.create("m", "c", "s", t(), U)
    assert not isinstance(theirs[0], Exception), theirs
    assert b.reconciler.repair_pending() == {"waiting": 1}  # young: its request might still be running
    assert b.reconciler.repair_pending(settle_s=0) == {"rolled forward": 1}  # store and engine have it
    settled(a)
    assert views(a)[0] == {"s": ["t"]}


@pytest.mark.parametrize("kind", ["table", "schema"])
def test_a_drop_that_finds_it_already_dropped_by_another_replica_answers_false(replicas, kind):
    a, b = replicas
    if kind == "table":
        a.dispatchers.tables.create("m", "c", "s", t(), U)
        b_drops, theirs = elsewhere(lambda: b.dispatchers.tables.drop("m", "c", "s", "t"))
        Hooked.plan["drop_table"] = (b_drops, None)
        dropped = a.dispatchers.tables.drop("m", "c", "s", "t")
    else:
        b_drops, theirs = elsewhere(lambda: b.dispatchers.schemas.drop("m", "c", "s", cascade=True))
        Hooked.plan["drop_schema"] = (b_drops, None)
        dropped = a.dispatchers.schemas.drop("m", "c", "s", cascade=True)
    assert (theirs, dropped) == ([True], False)
    settled(a)


def test_a_rename_another_replica_made_first_is_404_and_both_sides_agree(replicas):
    a, b = replicas
    a.dispatchers.tables.create("m", "c", "s", t(), U)
    rename = [{"@type": "rename", "newName": "t2"}]
    b_renames, theirs = elsewhere(lambda: b.dispatchers.tables.alter("m", "c", "s", "t", rename, U))
    Hooked.plan["rename_table"] = (b_renames, None)
    with pytest.raises(errors.NoSuchTable) as refused:
        a.dispatchers.tables.alter("m", "c", "s", "t", rename, U)
    assert refused.value.http_status == 404 and "m.c.s.t does not exist" in refused.value.message
    assert [type(o) for o in theirs] == [Table]
    settled(a)
    assert views(a)[0] == {"s": ["t2"]}


def test_a_rename_overtaken_by_a_different_one_keeps_its_intent_for_an_operator(replicas):
    # B renames t to t2 AND adds a column; A only renames. A cannot tell which shape the engine ended
    # with (that depends on the order of the two engine calls), so its intent must stay open, and the
    # repair marks it stuck instead of ending it as "already applied".
    a, b = replicas
    a.dispatchers.tables.create("m", "c", "s", t(), U)
    add = [{"@type": "rename", "newName": "t2"},
           {"@type": "addColumn", "fieldName": ["extra"], "type": "string", "nullable": True}]
    b_renames, theirs = elsewhere(lambda: b.dispatchers.tables.alter("m", "c", "s", "t", add, U))
    Hooked.plan["rename_table"] = (b_renames, None)
    with pytest.raises(errors.NoSuchTable, match="not as this rename would have made it"):
        a.dispatchers.tables.alter("m", "c", "s", "t", [{"@type": "rename", "newName": "t2"}], U)
    assert [type(o) for o in theirs] == [Table]
    [left] = a.reconciler.journal.pending()
    assert left.operation == "rename_table"
    assert a.reconciler.repair_pending(settle_s=0) == {"stuck": 1}
    assert "not as this rename would have made it" in a.reconciler.journal.pending()[0].detail
