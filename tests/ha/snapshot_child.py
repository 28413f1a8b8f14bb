"""Child processes for test_snapshot_reads.py: `python -m tests.ha.snapshot_child <mode> '<json config>'`.

Every table these writers leave behind carries its generation twice: the property `gen` on the table
row and the column names `g<gen>_c0..2` in the column rows, always changed together in one write
transaction. A reader that loads a table whose columns do not belong to its `gen` (or that has no
columns at all) has seen half of a change. Protocol as in child.py: READY, wait for "go", DONE.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from gravimeta import errors
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.ha.child import say, wait_for_go

METALAKE, CATALOG = "m", "c"
MOVING = "t"  # moves back and forth between s1 and s2
MOVE_SCHEMAS = ("s1", "s2")
DROPPED = "s3"  # dropped with its tables and re-created
DROPPED_TABLES = ("t3a", "t3b")
TARGETS = [(MOVE_SCHEMAS, MOVING)] + [((DROPPED,), t) for t in DROPPED_TABLES]


def columns_of(gen: int) -> list[Column]:
    return [Column(f"g{gen}_c{i}", "integer") for i in range(3)]


def table_of(name: str, gen: int) -> Table:
    return Table(name, columns_of(gen), properties={"gen": str(gen)})


def tear_in(table: Table) -> str | None:
    """What is torn about a loaded table, or None when its row and its columns belong together."""
    names = sorted(c.name for c in table.columns)
    if not names:
        return f"{table.name} gen {table.properties.get('gen')} has no columns"
    expected = sorted(c.name for c in columns_of(int(table.properties["gen"])))
    if names != expected:
        return f"{table.name} gen {table.properties['gen']} has columns {names}"
    return None


def setup(store: EntityStore) -> None:
    """The starting tree (run once by the test)."""
    store.create_metalake(Metalake(METALAKE), "setup")
    store.create_catalog(Catalog(METALAKE, CATALOG, "relational", "memory"), "setup")
    for schema in (*MOVE_SCHEMAS, DROPPED):
        store.create_schema(METALAKE, CATALOG, Schema(schema), "setup")
    store.create_table(METALAKE, CATALOG, MOVE_SCHEMAS[0], table_of(MOVING, 0), "setup")
    for name in DROPPED_TABLES:
        store.create_table(METALAKE, CATALOG, DROPPED, table_of(name, 0), "setup")


def _run(cfg: dict, step, done) -> None:  # type: ignore[no-untyped-def]
    """Run `step` for at least cfg['seconds'] and until done(stats), but never past cfg['max_seconds'].
    A writer creates the file cfg['mark'] once it has made cfg['min_steps'] steps."""
    store = EntityStore(create_store_engine(cfg["url"]))
    say("READY")
    wait_for_go()
    stats: dict = {"steps": 0, "tears": [], "loads": 0, "missing": 0}
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= cfg["max_seconds"] or (elapsed >= cfg["seconds"] and done(stats)):
            break
        step(store, stats)
        stats["steps"] += 1
        if "mark" in cfg and stats["steps"] == cfg["min_steps"]:
            open(cfg["mark"], "w").close()  # noqa: SIM115
    with open(cfg["out"], "w") as out:
        json.dump(stats, out)
    say("DONE")


def mover(cfg: dict) -> None:
    """Until the file cfg['stop'] exists: move the table to the other schema and replace its columns with the next generation, in one
    store transaction per step."""
    state = {"gen": 0, "at": 0}

    def step(store: EntityStore, stats: dict) -> None:
        gen, at = state["gen"] + 1, state["at"]

        def mutate(table: Table) -> Table:
            table.properties = {"gen": str(gen)}
            table.columns = columns_of(gen)
            return table

        store.update_table(METALAKE, CATALOG, MOVE_SCHEMAS[at], MOVING, mutate, "mover",
                           new_schema=MOVE_SCHEMAS[1 - at])
        state["gen"], state["at"] = gen, 1 - at

    _run(cfg, step, lambda stats: os.path.exists(cfg["stop"]))


def dropper(cfg: dict) -> None:
    """Until the file cfg['stop'] exists: drop the schema with its tables (cascade), re-create it and its tables with the next generation."""
    state = {"gen": 1000}

    def step(store: EntityStore, stats: dict) -> None:
        state["gen"] += 1
        store.drop_schema(METALAKE, CATALOG, DROPPED, cascade=True)
        store.create_schema(METALAKE, CATALOG, Schema(DROPPED), "dropper")
        for name in DROPPED_TABLES:
            store.create_table(METALAKE, CATALOG, DROPPED, table_of(name, state["gen"]), "dropper")

    _run(cfg, step, lambda stats: os.path.exists(cfg["stop"]))


def reader(cfg: dict) -> None:
    """Load the tables over and over (each load: parent chain, table row, columns), at least
    cfg['min_loads'] times and until the writers have made their minimum number of steps."""
    rng = random.Random(cfg["seed"])

    def step(store: EntityStore, stats: dict) -> None:
        schemas, name = rng.choice(TARGETS)
        for schema in rng.sample(schemas, len(schemas)):  # the moving table: one schema, then the other
            try:
                table = store.get_table(METALAKE, CATALOG, schema, name)
                break
            except errors.NotFound:
                stats["missing"] += 1  # moved away, or between a drop and the re-create: consistent
        else:
            return
        stats["loads"] += 1
        tear = tear_in(table)
        if tear is not None and len(stats["tears"]) < 1000:
            stats["tears"].append(f"{schema}.{tear}")

    _run(cfg, step, lambda stats: stats["loads"] >= cfg["min_loads"] and all(map(os.path.exists, cfg["wait_for"])))


if __name__ == "__main__":
    {"mover": mover, "dropper": dropper, "reader": reader}[sys.argv[1]](json.loads(sys.argv[2]))
