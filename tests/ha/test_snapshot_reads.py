"""Torn reads: a load that issues several queries (parent chain, table row, column rows) runs in one
snapshot transaction, so readers in other processes never see half of a concurrent change
. One process moves a table back and forth between two schemas, replacing its columns
each time; another drops a schema with its tables and re-creates it; readers load those tables and
check that every loaded table row comes with its own columns.

With GRAVIMETA_HA_DISABLE=no_snapshot every read statement runs on its own (READ COMMITTED on
PostgreSQL/MariaDB, autocommit on SQLite) and the readers see a table row of one generation with the
columns of the next, or a table whose columns were already dropped with its schema."""

from __future__ import annotations

import json

from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.ha.snapshot_child import setup

SECONDS = 2.5  # at least; longer (up to MAX_SECONDS) until each reader has MIN_LOADS loads and
MAX_SECONDS = 15.0  # the writers have made MIN_MOVES moves and MIN_DROPS drop/re-creates
MIN_LOADS, MIN_MOVES, MIN_DROPS = 150, 20, 5
READERS = 2
MODULE = "tests.ha.snapshot_child"


def test_readers_never_see_half_of_a_move_or_a_cascade_drop(db_url, children, tmp_path):
    engine = create_store_engine(db_url)
    setup(EntityStore(engine))
    engine.dispose()
    stop = tmp_path / "stop"
    common = {"url": db_url, "seconds": SECONDS, "max_seconds": MAX_SECONDS, "min_loads": MIN_LOADS,
              "stop": str(stop)}
    marks = [str(tmp_path / "moved"), str(tmp_path / "dropped")]
    roles = [("mover", {"mark": marks[0], "min_steps": MIN_MOVES}),
             ("dropper", {"mark": marks[1], "min_steps": MIN_DROPS})]
    roles += [("reader", {"seed": i, "wait_for": marks}) for i in range(READERS)]
    procs = [
        children(mode, {**common, **extra, "out": str(tmp_path / f"{i}.json")}, MODULE)
        for i, (mode, extra) in enumerate(roles)
    ]
    for proc in procs:
        proc.expect("READY")
    for proc in procs:
        proc.send("go")
    for proc in procs[2:]:
        proc.expect("DONE", timeout=MAX_SECONDS + 30)
    stop.touch()  # the writers stop once the readers are done
    for proc in procs[:2]:
        proc.expect("DONE", timeout=MAX_SECONDS + 30)
    stats = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(len(roles))]
    moves, drops = stats[0]["steps"], stats[1]["steps"]
    readers = stats[2:]
    loads = sum(r["loads"] for r in readers)
    tears = [t for r in readers for t in r["tears"]]

    assert moves >= MIN_MOVES and drops >= MIN_DROPS, f"the writers barely ran: {moves} moves, {drops} drop/re-creates"
    assert loads >= READERS * MIN_LOADS, f"too few loads to prove anything: {loads}"
    assert not tears, f"{len(tears)} torn reads in {loads} loads, e.g. {tears[:5]}"
    print(f"\n{moves} moves, {drops} drop/re-creates, {loads} loads "
          f"({sum(r['missing'] for r in readers)} not found), 0 torn")
