"""The failure-injection matrix: every structural operation, for each real connector, with a failure
injected at each step of the journalled order (intent -> engine -> store, docs/consistency.md).
After the repair runs where the design runs it (the reclaimer / `gravimeta repair`: `repair_pending`),
the store and the engine must agree and the journal must be empty, and the client must have got a
clear error (status, code, type, message).

Failure points:
- rejected:   the engine answers with a refusal (a 4xx-class error): nothing happened anywhere;
- refused:    the engine call fails without applying, but the dispatcher cannot know that
              (sqlite: injected ConnectionFailed; hive: the metastore answers HTTP 500);
- lost:       the engine applies the call but its answer is lost (sqlite: injected; hive: the stub
              crashes after persisting);
- timeout:    (hive) the call hangs past the client timeout and is applied later;
- died:       gravimeta dies after recording the intent, before the engine call;
- died-after: gravimeta dies after the engine applied the call, before the store step.

KNOWN_DIVERGENT lists cases the repair cannot bring into agreement (xfail, strict); it is empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from connectors.hive import HiveConnector
from connectors.registry import ConnectorRegistry
from connectors.sqlite import SQLiteCatalogConnector
from gravimeta import errors
from gravimeta.app import build_services
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table

USER = "matrix"
ENGINE_METHODS = ("create_schema", "drop_schema", "create_table", "rename_table", "drop_table", "alter_table")


class ProcessDied(BaseException):
    """Stands for the gravimeta process dying at this point: no `except Exception` sees it."""


def with_injected_faults(base: type) -> type:
    """A connector class whose next call of a method can be made to fail in-process."""

    class Faulty(base):  # type: ignore[misc, valid-type]
        plan: dict[str, str] = {}

    def wrap(method: str) -> Callable[..., object]:
        def call(self: object, *args: object, **kwargs: object) -> object:
            mode = Faulty.plan.pop(method, None)
            if mode == "died":
                raise ProcessDied(f"gravimeta died before {method}")
            if mode == "rejected":
                raise errors.IllegalArgument(f"injected: the engine rejected {method} as invalid")
            if mode == "refused":
                raise errors.ConnectionFailed(f"injected: the engine refused {method}")
            result = getattr(base, method)(self, *args, **kwargs)
            if mode == "lost":
                raise errors.ConnectionFailed(f"injected: the answer of {method} was lost")
            if mode == "died-after":
                raise ProcessDied(f"gravimeta died after {method}")
            return result

        return call

    for method in ENGINE_METHODS:
        setattr(Faulty, method, wrap(method))
    return Faulty


FaultySQLite = with_injected_faults(SQLiteCatalogConnector)
FaultyHive = with_injected_faults(HiveConnector)

OPERATIONS = ("create_schema", "drop_schema", "create_table", "rename_table", "drop_table")
POINTS = {"sqlite": ("rejected", "refused", "lost", "died", "died-after"),
          "hive": ("rejected", "refused", "lost", "timeout", "died", "died-after")}
IN_PROCESS_POINTS = ("rejected", "died", "died-after")

# (provider, operation, point) -> why store and engine still disagree after the repair. Empty: every
# case is brought into agreement (docs/consistency.md §4). A case added here must say what remains.
KNOWN_DIVERGENT: dict[tuple[str, str, str], str] = {}

# What the repair does with the intent each failure point leaves.
REPAIR_OUTCOME = {"rejected": {}, "refused": {"rolled back": 1}, "died": {"rolled back": 1},
                  "lost": {"rolled forward": 1}, "timeout": {"rolled forward": 1}, "died-after": {"rolled forward": 1}}


def matrix() -> list[object]:
    cases = []
    for provider, points in POINTS.items():
        for operation in OPERATIONS:
            for point in points:
                reason = KNOWN_DIVERGENT.get((provider, operation, point))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                cases.append(pytest.param(provider, operation, point, marks=marks,
                                          id=f"{provider}-{operation}-{point}"))
    return cases


@dataclass
class World:
    """One metalake and catalog on a fresh store, with the catalog's engine connector."""

    services: object
    provider: str
    schema: str
    stub: object | None

    @property
    def d(self):  # the dispatchers
        return self.services.dispatchers

    @property
    def engine(self):
        return self.services.connectors.for_catalog(self.services.store.get_catalog("m", "c"))

    @property
    def reconciler(self):
        return self.services.reconciler

    def views(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(store, engine): schema name -> table names, for the schemas this test uses."""
        store = {s.name: self.services.store.list_tables("m", "c", s.name)
                 for s in self.services.store.list_schemas("m", "c") if s.name.startswith(self.schema)}
        engine = {s: sorted(self.engine.list_tables(s)) for s in self.engine.list_schemas() if s.startswith(self.schema)}
        return store, engine


@pytest.fixture
def world(request, sqlite_url, sqlite_root, hive_stub, name):
    yield from make_world(request.node.callspec.params["provider"], sqlite_url, hive_stub, name)


@pytest.fixture
def world_sqlite(sqlite_url, sqlite_root, name):
    yield from make_world("sqlite", sqlite_url, None, name)


@pytest.fixture(params=[False, True], ids=["claims-off", "claims-on"])
def world_on_every_backend(request, db_url, sqlite_root, name):
    """The sqlite provider over each metadata database, with the cross-node claims off and on."""
    yield from make_world("sqlite", db_url, None, name, Settings(store_url=db_url, distributed_lock_enabled=request.param))


def make_world(provider, sqlite_url, hive_stub, name, settings=None):
    FaultySQLite.plan.clear()
    FaultyHive.plan.clear()
    stub = None
    if provider == "hive":
        if hive_stub.process is None or hive_stub.process.poll() is not None:
            hive_stub.start()
        hive_stub.clear_faults()
        stub = hive_stub
        properties = {"metastore.uris": hive_stub.uri, "client.timeout-ms": "700"}
    else:
        properties = {"path": "matrix/cat.db"}
    registry = ConnectorRegistry({"sqlite": FaultySQLite, "hive": FaultyHive})
    services = build_services(settings or Settings(store_url=sqlite_url), registry)
    services.dispatchers.metalakes.create(Metalake("m"), USER)
    services.dispatchers.catalogs.create(Catalog("m", "c", "relational", provider, properties=properties), USER)
    yield World(services, provider, name("s"), stub)
    if stub is not None and stub.process is not None and stub.process.poll() is None:
        stub.clear_faults()


def orders(table_name: str = "t") -> Table:
    return Table(table_name, [Column("id", "long", nullable=False), Column("v", "string")])


def prepare(world: World, operation: str) -> Callable[[], object]:
    """Create what the operation needs, and return the operation itself."""
    d, s = world.d, world.schema
    if operation == "create_schema":
        return lambda: d.schemas.create("m", "c", Schema(s), USER)
    d.schemas.create("m", "c", Schema(s), USER)
    if operation == "create_table":
        return lambda: d.tables.create("m", "c", s, orders(), USER)
    d.tables.create("m", "c", s, orders(), USER)
    if operation == "drop_schema":
        return lambda: d.schemas.drop("m", "c", s, cascade=True)
    if operation == "rename_table":
        return lambda: d.tables.alter("m", "c", s, "t", [{"@type": "rename", "newName": "t2"}], USER)
    return lambda: d.tables.drop("m", "c", s, "t")


STUB_OPS = {"create_schema": "create_database", "drop_schema": "drop_database", "create_table": "create_table",
            "rename_table": "rename_table", "drop_table": "drop_table"}


def inject(world: World, operation: str, point: str) -> None:
    if world.provider == "sqlite" or point in IN_PROCESS_POINTS:
        (FaultySQLite if world.provider == "sqlite" else FaultyHive).plan[operation] = point
    elif point == "refused":
        world.stub.fault("fail", ops=[STUB_OPS[operation]])
    elif point == "lost":
        world.stub.fault("crash", when="after", ops=[STUB_OPS[operation]])
    else:
        world.stub.fault("hang", seconds=5, ops=[STUB_OPS[operation]])


def settle(world: World, point: str) -> None:
    """Let the engine finish what the failure left running (restart a crashed stub, let a hung call land)."""
    if world.stub is None:
        return
    if point == "lost":
        world.stub.wait_exit()
        world.stub.start()
    elif point == "timeout":
        world.stub.release()
        world.stub.wait_idle()


def assert_clear_error(error: errors.GravitinoError, point: str) -> None:
    """A refusal comes back as the engine's own error; everything else as 502 'outcome unknown'."""
    if point == "rejected":
        expected = (400, 1001, "IllegalArgumentException")
    else:
        expected = (502, 1007, "ConnectionFailedException")
        assert "outcome of this" in error.message and "will reconcile" in error.message, error.message
    assert (error.http_status, error.code, error.type_name) == expected, error
    assert "metastore" in error.message or "injected" in error.message, error.message


@pytest.mark.parametrize("provider, operation, point", matrix())
def test_store_and_engine_agree_after_a_failure_and_its_repair(world, provider, operation, point):
    action = prepare(world, operation)
    inject(world, operation, point)
    with pytest.raises((errors.GravitinoError, ProcessDied)) as raised:
        action()
    if not isinstance(raised.value, ProcessDied):
        assert_clear_error(raised.value, point)
    assert len(world.reconciler.journal.pending()) == (0 if point == "rejected" else 1)
    settle(world, point)
    assert dict(world.reconciler.repair_pending(settle_s=0)) == REPAIR_OUTCOME[point]
    store, engine = world.views()
    assert store == engine, f"store {store} != engine {engine}"
    assert world.reconciler.journal.pending() == []


def test_the_next_structural_operation_on_a_scope_finishes_what_the_engine_applied(world_sqlite):
    world = world_sqlite
    action = prepare(world, "create_table")
    inject(world, "create_table", "died-after")
    with pytest.raises(ProcessDied):
        action()
    assert world.services.store.list_tables("m", "c", world.schema) == []
    world.d.tables.create("m", "c", world.schema, orders("t3"), USER)
    assert world.services.store.list_tables("m", "c", world.schema) == ["t", "t3"]
    assert world.reconciler.journal.pending() == []
    assert world.services.store.get_table("m", "c", world.schema, "t").columns == orders().columns


def test_an_intent_the_engine_does_not_show_is_kept_until_it_is_older_than_the_settle_time(world_sqlite):
    world = world_sqlite
    action = prepare(world, "create_table")
    inject(world, "create_table", "refused")
    with pytest.raises(errors.ConnectionFailed):
        action()
    world.d.tables.create("m", "c", world.schema, orders("t3"), USER)  # repairs first, but the intent is young
    [kept] = world.reconciler.journal.pending(settle_ms=60_000)
    assert (kept.operation, kept.state, kept.settled) == ("create_table", "pending", False)
    assert "injected: the engine refused create_table" in kept.detail
    assert world.reconciler.repair_pending(settle_s=0) == {"rolled back": 1}
    assert world.views()[0] == world.views()[1] == {world.schema: ["t3"]}


def test_a_retried_drop_after_an_unknown_outcome_succeeds_and_leaves_both_sides_empty(world_sqlite):
    world = world_sqlite
    action = prepare(world, "drop_table")
    inject(world, "drop_table", "lost")
    with pytest.raises(errors.ConnectionFailed):
        action()
    assert world.d.tables.drop("m", "c", world.schema, "t") is False  # the repair already rolled it forward
    assert world.views() == ({world.schema: []}, {world.schema: []})
    assert world.reconciler.journal.pending() == []


def test_a_rename_the_engine_shows_half_done_is_marked_stuck_not_guessed(world_sqlite):
    world = world_sqlite
    action = prepare(world, "rename_table")
    inject(world, "rename_table", "died")
    with pytest.raises(ProcessDied):
        action()
    world.engine.create_table(world.schema, orders("t2"))  # someone made the new name appear as well
    assert world.reconciler.repair_pending(settle_s=0) == {"stuck": 1}
    [stuck] = world.reconciler.journal.pending()
    assert stuck.state == "stuck" and "neither" in stuck.detail
    assert world.services.store.list_tables("m", "c", world.schema) == ["t"]


@pytest.mark.parametrize("point", ["refused", "died-after"])
def test_the_journal_runs_and_repairs_on_every_metadata_database(world_on_every_backend, point):
    world = world_on_every_backend
    action = prepare(world, "rename_table")
    inject(world, "rename_table", point)
    with pytest.raises((errors.ConnectionFailed, ProcessDied)):
        action()
    [left] = world.reconciler.journal.pending(settle_ms=60_000)
    assert (left.operation, left.scope_path, left.settled) == ("rename_table", f"/m/c/{world.schema}", False)
    if point == "died-after":  # the engine has it: rolled forward at once, claims or not
        assert world.reconciler.repair_pending() == {"rolled forward": 1}
    elif world.services.settings.distributed_lock_enabled:
        # the repair's claim is on the intent's own scope: it fences the old holder out of the sqlite file
        # first (fence_barrier), so "not applied" is final at once, however young the intent
        assert world.reconciler.repair_pending() == {"rolled back": 1}
    else:  # no claims, no fences: only the settle time says the call cannot land any more
        assert world.reconciler.repair_pending() == {"waiting": 1}
        assert world.reconciler.repair_pending(settle_s=0) == {"rolled back": 1}
    assert world.reconciler.journal.pending() == []
    assert world.views() == ({world.schema: ["t" if point == "refused" else "t2"]},) * 2
    world.d.tables.drop("m", "c", world.schema, "t" if point == "refused" else "t2")
    assert world.views() == ({world.schema: []},) * 2 and world.reconciler.journal.pending() == []


def test_gravimeta_repair_command_finishes_open_intents(world_sqlite, sqlite_url):
    from click.testing import CliRunner

    from gravimeta.cli import main

    world = world_sqlite
    action = prepare(world, "create_table")
    inject(world, "create_table", "died-after")
    with pytest.raises(ProcessDied):
        action()
    listed = CliRunner().invoke(main, ["--store-url", sqlite_url, "repair", "--list"])
    assert listed.exit_code == 0, listed.output
    assert "open: #" in listed.output and "create_table /m/c/" in listed.output
    result = CliRunner().invoke(main, ["--store-url", sqlite_url, "repair", "--settle-seconds", "0"])
    assert result.exit_code == 0, result.output
    assert "repair: 1 rolled forward" in result.output
    assert world.views() == ({world.schema: ["t"]}, {world.schema: ["t"]})


@pytest.mark.parametrize("provider", ["sqlite", "hive"])
def test_dropping_a_catalog_with_force_leaves_the_external_engine_untouched(world, provider):
    world.d.schemas.create("m", "c", Schema(world.schema), USER)
    engine = world.engine
    world.d.catalogs.drop("m", "c", force=True)
    assert world.schema in engine.list_schemas()


#: a table whose types the sqlite engine reports otherwise than gravimeta writes them (integer -> long,
#: boolean -> NUMERIC, varchar(20) -> string, a list -> string, ...); the metastore keeps them as written
MIXED = Table("t", [Column("id", "integer", nullable=False), Column("flag", "boolean"), Column("name", "varchar(20)"),
                    Column("price", "decimal(10,2)"), Column("day", "date"), Column("raw", {"type": "unparsed",
                                                                                          "unparsedType": "VARCHAR(20)"}),
                    Column("tags", {"type": "list", "elementType": "string", "containsNull": True})])


@pytest.mark.parametrize("provider", ["sqlite", "hive"])
def test_a_create_the_engine_made_is_recognised_whatever_types_it_reports(world, provider):
    """The repair compares the engine's table with the create's as the engine describes it
    (Connector.as_described), so a table gravimeta made is its own even where the engine names its types
    differently."""
    world.d.schemas.create("m", "c", Schema(world.schema), USER)
    (FaultySQLite if provider == "sqlite" else FaultyHive).plan["create_table"] = "died-after"
    with pytest.raises(ProcessDied):
        world.d.tables.create("m", "c", world.schema, MIXED, USER)
    assert dict(world.reconciler.repair_pending(settle_s=0)) == {"rolled forward": 1}
    assert world.services.store.get_table("m", "c", world.schema, "t").columns == MIXED.columns
    assert world.reconciler.journal.pending() == []


@pytest.mark.parametrize("provider", ["sqlite", "hive"])
def test_a_refused_create_whose_intent_stays_open_is_not_taken_for_the_engines_other_table(
        world, provider, monkeypatch):
    """The engine has t with other columns (made outside gravimeta) and refuses a create of t; withdrawing
    the intent fails in the store, so it stays open. The repair sees a t of another shape: not this
    create's doing. It leaves the intent stuck with both shapes in its note, and the store without t
    (before: rolled forward, the store's t(id) over the engine's t(other))."""
    world.d.schemas.create("m", "c", Schema(world.schema), USER)
    world.engine.create_table(world.schema, Table("t", [Column("other", "string")]))

    def lost(self, intent_id):
        raise errors.StoreUnavailable("injected: the withdrawal's COMMIT was lost")

    journal = type(world.reconciler.journal)
    withdraw = journal.withdraw
    monkeypatch.setattr(journal, "withdraw", lost)
    with pytest.raises(errors.OutcomeUnknown, match="pending operation"):
        world.d.tables.create("m", "c", world.schema, orders(), USER)
    monkeypatch.setattr(journal, "withdraw", withdraw)
    [preview] = world.reconciler.preview_pending(settle_s=0)
    assert preview.action == "stuck" and "other string" in preview.why, preview
    assert dict(world.reconciler.repair_pending(settle_s=0)) == {"stuck": 1}
    [stuck] = world.reconciler.journal.pending()
    described = "(id long, v string)"  # as both engines describe orders()
    assert stuck.state == "stuck" and f"has columns (other string), this create's would read {described}" in \
        stuck.detail, stuck.detail
    assert world.services.store.list_tables("m", "c", world.schema) == []
    assert [c.name for c in world.engine.load_table(world.schema, "t").columns] == ["other"]
