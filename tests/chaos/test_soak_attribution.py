"""The soak's bookkeeping of names (tests/chaos/soak.py), without servers: which catalog an operation hit
when its catalog or metalake name was swapped meanwhile, and what the checker then sees."""

from __future__ import annotations

import random

from gravimeta.demo.history import CatalogState, History, check
from tests.chaos.soak import (
    FROZEN,
    NOT_FROZEN,
    Freeze,
    Names,
    SoakConfig,
    World,
    attribute,
    freeze_summary,
    witnesses,
)


def test_a_name_denotes_both_objects_only_while_a_swap_is_in_flight():
    names = Names({("m", "a"): "X", ("m", "b"): "Y"})
    names.snapshots[0].since = 0.0
    names.changed(10.0, {("m", "a"): "Y", ("m", "b"): "X"})
    names.snapshots[0].until = 12.0  # the swap ran from 10 to 12
    assert names.candidates(("m", "a"), 1.0, 9.0) == {"X"}
    assert names.candidates(("m", "a"), 9.0, 11.0) == {"X", "Y"}
    assert names.candidates(("m", "a"), 12.5, 13.0) == {"Y"}
    assert names.candidates(("m", "gone"), 1.0, 13.0) == set()


def test_an_ambiguous_operation_counts_only_as_a_possible_removal_in_each_candidate(tmp_path):
    world = World(SoakConfig(), "sqlite://", tmp_path, random.Random(0), history=History())
    world.names = Names({("m", "a"): "X", ("m", "b"): "Y"})
    world.names.changed(10.0, {("m", "a"): "Y", ("m", "b"): "X"})
    world.names.snapshots[0].until = 12.0
    h = world.history
    clear = h.finish(h.begin("create_table", "a", "s", table="t"), 200, {})
    clear.start, clear.end = 1.0, 2.0
    create = h.finish(h.begin("create_table", "a", "s", table="u"), 200, {})
    create.start, create.end = 9.0, 11.0
    rename = h.finish(h.begin("rename_table", "a", "s", table="t", new_schema="s", new_name="v"), 200, {})
    rename.start, rename.end = 11.0, 11.5
    for op in (clear, create, rename):
        world.op_names[op.id] = ("m", "a")
    ops, ambiguous = attribute(world)
    assert ambiguous == 2
    assert [(o.kind, o.catalog, o.table) for o in ops] == [
        ("create_table", "X", "t"),                                # unambiguous: checked fully
        ("drop_table", "X", "t"), ("drop_table", "Y", "t"),      # the rename may have removed s.t in either
    ]                                                            # the ambiguous create is not checked


def test_a_lost_write_is_reported_with_the_unacknowledged_ops_that_could_have_removed_it():
    h = History()
    rename = h.finish(h.begin("rename_table", "C", "s2", table="t3", new_schema="s1", new_name="t0"), 200, {})
    busy_drop = h.finish(h.begin("drop_schema", "C", "s1", cascade=True), 503, {"type": "ScopeBusyException"})
    other = h.finish(h.begin("drop_table", "C", "s0", table="t0"), 503, {"type": "ScopeBusyException"})
    report = check(h, {"C": CatalogState("memory", api={"s1": [], "s2": []}, api_schema_listing=["s1", "s2"],
                                             sql={"s1": [], "s2": []}, sql_schema_rows=["s1", "s2"])})
    assert [v.kind for v in report.violations] == ["lost-write"]
    lines = witnesses(report, [rename, busy_drop, other], ["[1.000-2.000] fp engine.after_call raise ScopeBusy on r2"])
    assert lines[0] == "C s1.t0: 1 unacknowledged op(s) that would remove it"
    assert f"#{busy_drop.id} drop_schema" in lines[1] and lines[1].endswith("ScopeBusyException")
    assert lines[2:] == ["nemesis timeline:", "    [1.000-2.000] fp engine.after_call raise ScopeBusy on r2"]


def test_the_summary_says_whether_a_frozen_holder_happened_and_what_ma_was_answered_meanwhile(tmp_path):
    world = World(SoakConfig(), "sqlite://", tmp_path, random.Random(0), history=History())
    world.names = Names({("ma", "c0"): "MA.memory", ("mb", "c0"): "MB.sqlite"})
    world.nemesis_counts[NOT_FROZEN] += 2
    assert freeze_summary(world).startswith("frozen MB holder: NEVER HAPPENED in this run (2 armed")
    world.nemesis_counts[FROZEN] += 1
    world.freezes.append(Freeze(10.0, 13.0, "r2", "guard.after_lock", "/mb/c0/s1", "MB.sqlite", "/ma/c0/s2",
                                "probe create_table @r1 -> 200 in 0.05s"))
    h = world.history
    inside = h.finish(h.begin("create_table", "ma", "s0", table="t0"), 200, {})
    busy = h.finish(h.begin("drop_table", "ma", "s0", table="t1"), 503, {"type": "ScopeBusyException"})
    in_mb = h.finish(h.begin("create_table", "mb", "s0", table="t0"), 200, {})
    before = h.finish(h.begin("create_table", "ma", "s1", table="t0"), 200, {})
    for op, (start, end), name in ((inside, (10.5, 11.0), ("ma", "c0")), (busy, (9.0, 12.0), ("ma", "c0")),
                                   (in_mb, (11.0, 12.0), ("mb", "c0")), (before, (1.0, 2.0), ("ma", "c0"))):
        op.start, op.end = start, end
        world.op_names[op.id] = name
    summary = freeze_summary(world)
    assert ("1 time(s) (2 more armed, not reached): r2 at guard.after_lock holding /mb/c0/s1 (MB.sqlite) for 3.0s, "
            "MA holder /ma/c0/s2: probe create_table @r1 -> 200 in 0.05s") in summary
    assert "MA requests overlapping a freeze: {'ok': 1, 'failed (busy)': 1}, 1 begun and acknowledged inside one" in summary
