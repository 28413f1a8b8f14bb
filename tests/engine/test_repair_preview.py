"""The repair's dry run (`gravimeta repair --dry-run`, /api/admin/repair-preview) says what the repair
would do with each open intent, and changes nothing: no claim, no barrier, no note, no store or engine
write.

In one process, with the cross-node claims on (lease claims with tokens, a sqlite engine that checks
them, so the repair fences the old holder out before it looks): three table creates of one catalog
(one schema each) were left open by a "dying" process, one after its engine call (t1 is in the engine), one before it
(t2 is not), and one whose schema is held right now by another claim. The dry run says: finish t1 in
the store, discard t2's intent, wait for the claim; the real repair then does exactly that. With
GRAVIMETA_HA_DISABLE=repair_preview the "dry run" runs the real repair, and the no-write test fails.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import MetaData, select

from connectors.registry import ConnectorRegistry
from connectors.sqlite.paths import ROOT_ENV
from gravimeta.app import Services, build_services
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, NameIdentifier, Schema, Table
from tests.conftest import require_backend
from tests.connectors.test_failure_matrix import FaultySQLite, ProcessDied
from tests.support.databases import fresh_database

REPO = Path(__file__).resolve().parents[2]
USER = "u"


@dataclass
class World:
    url: str
    root: Path
    services: Services
    landed: int  # create of t1 in s1: the engine has it
    not_landed: int  # create of t2 in s2: the engine does not
    held: int  # create of t3 in s3, whose scope another claim holds


def _left_open(services: Services, schema: str, table: str, point: str) -> int:
    FaultySQLite.plan["create_table"] = point
    with pytest.raises(ProcessDied):
        services.dispatchers.tables.create("m", "c", schema, Table(table, [Column("id", "long")]), USER)
    return max(i.id for i in services.reconciler.journal.pending())


def _world(url: str, root: Path, lock: bool = True) -> World:
    FaultySQLite.plan.clear()
    services = build_services(Settings(store_url=url, distributed_lock_enabled=lock),
                              ConnectorRegistry({"sqlite": FaultySQLite}))
    d = services.dispatchers
    d.metalakes.create(Metalake("m"), USER)
    d.catalogs.create(Catalog("m", "c", "relational", "sqlite", properties={"path": "cat.db"}), USER)
    for schema in ("s1", "s2", "s3"):  # one scope each: an operation first repairs the intents of its scope
        d.schemas.create("m", "c", Schema(schema), USER)
    return World(url, root, services, _left_open(services, "s1", "t1", "died-after"),
                 _left_open(services, "s2", "t2", "died"), _left_open(services, "s3", "t3", "died"))


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    made = tmp_path / "catalogs"
    made.mkdir()
    monkeypatch.setenv(ROOT_ENV, str(made))
    return made


def _world_on(backend: str, tmp_path: Path, root: Path) -> Iterator[World]:
    require_backend(backend)
    with fresh_database(backend, tmp_path) as url:
        world = _world(url, root)
        try:
            yield world
        finally:
            world.services.store.engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def world_on_both(request, tmp_path, root) -> Iterator[World]:
    yield from _world_on(request.param, tmp_path, root)


@pytest.fixture
def world(tmp_path, root) -> Iterator[World]:
    yield from _world_on("sqlite", tmp_path, root)


def everything(world: World) -> tuple[dict[str, list[tuple[object, ...]]], dict[str, tuple[str, int]]]:
    """Every row of every store table (journal, claims, fences, metadata) and every engine file's
    content hash and modification time."""
    engine = world.services.store.engine
    tables = MetaData()
    tables.reflect(engine)
    with engine.connect() as conn:
        rows = {name: sorted((tuple(r) for r in conn.execute(select(table))), key=repr)
                for name, table in tables.tables.items() if name != "gm_node"}  # gm_node: heartbeats
    files = {str(p.relative_to(world.root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
             for p in sorted(world.root.rglob("*")) if p.is_file()}
    return rows, files


def by_id(world: World) -> dict[int, object]:
    return {p.id: p for p in world.services.reconciler.preview_pending()}


def test_the_dry_run_changes_nothing_in_the_journal_the_store_or_the_engine(world_on_both):
    world = world_on_both
    before = everything(world)
    assert len(before[0]["gm_operation_journal"]) == 3 and before[1], before
    previews = world.services.reconciler.preview_pending()
    after = everything(world)
    assert after[0] == before[0], "the store changed"
    assert after[1] == before[1], "the engine's files changed"
    assert sorted(p.id for p in previews) == [world.landed, world.not_landed, world.held]


def test_the_dry_run_says_what_the_repair_then_does(world):
    claims = world.services.coordinator.claims
    assert claims is not None
    holder = claims.claim(NameIdentifier(("m", "c", "s3")))  # another operation on s2, right now
    try:
        previews = by_id(world)
    finally:
        holder.release()
    landed, not_landed, held = previews[world.landed], previews[world.not_landed], previews[world.held]

    assert landed.action == "roll forward", landed
    [fence] = landed.first
    assert fence.startswith("would fence the operation out of the engine first (a barrier on /c") and \
        fence.endswith(" with its own claim's token) and look after it"), fence
    assert landed.why.startswith("the engine shows the change made (as of now, before the barrier), so it would "
                                 "finish the table creation in the store"), landed.why
    assert not_landed.action == "roll back", not_landed
    assert not_landed.why.startswith("the engine does not show the change (as of now, before the barrier), so it "
                                     "would discard the intent, the store keeps what it has"), not_landed.why
    assert held.first[0].startswith("waits for the claim on /m/c/s3 held by "), held.first
    left = float(held.first[0].split(" s left")[0].rsplit(", ", 1)[1])  # by the database clock
    assert 0 < left <= claims.ttl_ms / 1000, held.first
    assert held.action == "roll back" and held.waits and not landed.waits, held

    outcomes = world.services.reconciler.repair_pending()  # the claim is gone: the real repair
    assert outcomes == {"rolled forward": 1, "rolled back": 2}, outcomes
    assert world.services.store.list_tables("m", "c", "s1") == ["t1"]
    assert world.services.reconciler.preview_pending() == []


def test_without_claims_the_dry_run_waits_for_the_settle_time_like_the_repair(tmp_path, root):
    with fresh_database("sqlite", tmp_path) as url:
        world = _world(url, root, lock=False)
        try:
            young = by_id(world)[world.not_landed]
            assert young.action == "wait", young
            assert young.first[0].startswith("no cross-node claims: a look is final once the intent is 30 s old ("), young
            assert "would leave it open for now" in young.why, young
            settled = {p.id: p.action for p in world.services.reconciler.preview_pending(settle_s=0)}
            assert settled == {world.landed: "roll forward", world.not_landed: "roll back", world.held: "roll back"}
            assert world.services.reconciler.repair_pending(settle_s=0) == {"rolled forward": 1, "rolled back": 2}
        finally:
            world.services.store.engine.dispose()


def test_a_dry_run_of_a_catalog_that_is_gone_says_discard(world):
    from sqlalchemy import update

    from gravimeta.store.journal import operation_journal

    with world.services.store.engine.begin() as conn:  # an intent of a catalog id that no longer exists
        conn.execute(update(operation_journal).where(operation_journal.c.id == world.held).values(catalog_id=999))
    held = by_id(world)[world.held]
    assert (held.action, held.why) == ("discard", "would discard the intent (its catalog #999 (m.c) is gone)")


def test_repair_dry_run_prints_each_intent_and_exits_0(world):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GRAVIMETA_")}
    environment.update({ROOT_ENV: str(world.root), "GRAVIMETA_DISTRIBUTED_LOCK": "true", "PYTHONPATH": str(REPO)})
    before = everything(world)
    run = subprocess.run([sys.executable, "-m", "gravimeta", "--store-url", world.url, "repair", "--dry-run"],
                         env=environment, capture_output=True, text=True, timeout=60, cwd=world.root.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert "dry run, nothing is changed: 3 open intent(s)" in lines, run.stdout
    at = lines.index(f"#{world.landed} create_table /m/c/s1 (pending): roll forward")
    assert lines[at + 1].startswith("  - would fence the operation out of the engine first (a barrier on /c"), run.stdout
    assert lines[at + 2].startswith("  - the engine shows the change made (as of now, before the barrier), so it "
                                    "would finish the table creation in the store"), run.stdout
    assert f"#{world.not_landed} create_table /m/c/s2 (pending): roll back" in lines, run.stdout
    assert everything(world) == before


def test_for_an_engine_that_cannot_refuse_late_calls_the_dry_run_says_the_repair_waits_out_the_call_window(
        world, monkeypatch):
    monkeypatch.setattr(FaultySQLite, "checks_fences", False)  # as the hive metastore: no barrier possible
    before = everything(world)
    previews = by_id(world)
    assert everything(world) == before  # not even the first look is recorded
    not_landed, landed = previews[world.not_landed], previews[world.landed]
    assert not_landed.first == ["the engine cannot refuse late calls: would record its first look now, final only "
                                "30 s later"], not_landed.first
    assert (not_landed.action, landed.action) == ("wait", "roll forward")
    assert world.services.reconciler.repair_pending() == {"rolled forward": 1, "waiting": 2}
    again = by_id(world)[world.not_landed]  # the repair recorded its first look: the window counts from there
    assert again.first[0].startswith("the engine cannot refuse late calls: a look is final ") and \
        "s from now (call window 30 s since a repair first held the scope at " in again.first[0], again.first


def test_a_create_whose_name_the_engine_has_with_other_columns_is_stuck_in_the_dry_run_as_in_the_repair(world):
    """t2's create never reached the engine, but the engine has a t2 made outside gravimeta, with other
    columns: not this create's table. The dry run and the repair both leave the intent for an operator,
    naming both shapes; neither rolls the create forward onto the engine's other table."""
    engine = world.services.connectors.for_catalog(world.services.store.get_catalog("m", "c"))
    engine.create_table("s2", Table("t2", [Column("other", "string")]))
    before = everything(world)
    preview = by_id(world)[world.not_landed]
    assert everything(world) == before
    shapes = "the engine's table s2.t2 has columns (other string), this create's would read (id long)"
    assert preview.action == "stuck", preview
    assert preview.why == ("the engine shows neither the state before nor the state after (as of now, before the "
                           "barrier), so it would mark it stuck for an operator (engine shows neither the state "
                           f"before nor the state after: {shapes})"), preview.why
    assert world.services.reconciler.repair_pending() == {"rolled forward": 1, "rolled back": 1, "stuck": 1}
    [stuck] = world.services.reconciler.journal.pending()
    assert (stuck.id, stuck.state) == (world.not_landed, "stuck") and stuck.detail.endswith(shapes), stuck
    assert world.services.store.list_tables("m", "c", "s2") == []
