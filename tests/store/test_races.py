"""Races between real processes, each with its own engine (as replicas are), on every backend. No lock
layer runs here: these are the database-level guarantees ("defence in depth")."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import create_engine, func, select, text

from gravimeta.store.models import MetalakeRow, TableRow
from tests.store.race_workers import RacePool
from tests.store.tree import USER, Tree, table_of

PROCESSES = 5  # = the race pool's size

ORPHANS = {
    "catalogs": "SELECT COUNT(*) FROM gm_catalog c LEFT JOIN gm_metalake m ON m.id = c.metalake_id WHERE m.id IS NULL",
    "schemas": "SELECT COUNT(*) FROM gm_schema s LEFT JOIN gm_catalog c ON c.id = s.catalog_id WHERE c.id IS NULL",
    "tables": "SELECT COUNT(*) FROM gm_table t LEFT JOIN gm_schema s ON s.id = t.schema_id WHERE s.id IS NULL",
    "columns": "SELECT COUNT(*) FROM gm_column k LEFT JOIN gm_table t ON t.id = k.table_id WHERE t.id IS NULL",
}


def orphan_counts(url: str) -> dict[str, int]:
    engine = create_engine(url)  # plain engine: no store code between the test and the rows
    try:
        with engine.connect() as conn:
            return {kind: conn.scalar(text(sql)) for kind, sql in ORPHANS.items()}
    finally:
        engine.dispose()


def test_racing_creates_of_one_name_leave_exactly_one_winner(db_url, store, tree: Tree, unique, race_pool: RacePool):
    new_m = f"race_{unique}"
    results = race_pool.run(db_url, [("create_same_names", (new_m, tree.m, tree.c, tree.s))] * PROCESSES)

    rounds = list(zip(*results, strict=True))
    expected_loser = ["MetalakeAlreadyExists", "CatalogAlreadyExists", "TableAlreadyExists"]
    for outcomes, loser in zip(rounds, expected_loser, strict=True):
        assert Counter(outcomes) == {"ok": 1, loser: PROCESSES - 1}, outcomes

    with store.snapshot() as s:
        assert s.scalar(select(func.count()).where(MetalakeRow.name == new_m)) == 1
        assert s.scalar(select(func.count()).where(TableRow.name == "same")) == 1
    assert [c.name for c in store.list_catalogs(tree.m)] == sorted([tree.c, "same"])
    assert len(store.get_table(tree.m, tree.c, tree.s, "same").columns) == 2


@pytest.mark.parametrize("level", ["schema", "catalog", "metalake"])
def test_creates_racing_a_cascade_drop_leave_no_orphans(db_url, store, tree: Tree, level, race_pool: RacePool):
    store.create_table(tree.m, tree.c, tree.s, table_of("churned"), USER)
    path = (tree.m, tree.c, tree.s)
    creators = 3
    jobs = [("create_tables_until_gone", (*path, i)) for i in range(creators)]
    jobs.append(("churn_columns_until_gone", (*path, "churned")))
    jobs.append(("cascade_drop_when_busy", (level, *path, 10)))

    *created, churned, dropped = race_pool.run(db_url, jobs)

    assert dropped == "ok"
    # a create that found the parent chain and then waited on the dropped row reports the nearest level
    gone = {
        "schema": {"NoSuchSchema"},
        "catalog": {"NoSuchCatalog", "NoSuchSchema"},
        "metalake": {"NoSuchMetalake", "NoSuchCatalog", "NoSuchSchema"},
    }[level]
    for outcomes in created:
        assert any(o != "ok" for o in outcomes), f"a creator never saw the drop in {len(outcomes)} creates"
        first_failure = outcomes.index(next(o for o in outcomes if o != "ok"))
        # every create succeeded before the drop, or failed because the parent was gone - never after
        assert set(outcomes[first_failure:]) <= gone, outcomes[first_failure:]
    assert churned[-1] in gone | {"NoSuchTable"} and set(churned[:-1]) <= {"ok"}, churned[-3:]
    assert sum(o.count("ok") for o in created) > 0, "the drop won before any create: no race happened"
    assert orphan_counts(db_url) == dict.fromkeys(ORPHANS, 0)
    with store.snapshot() as s:
        assert s.scalar(select(func.count()).select_from(TableRow)) == 0


@pytest.mark.parametrize("kind", ["metalake", "table"])
def test_concurrent_property_updates_lose_nothing(db_url, store, tree: Tree, kind, race_pool: RacePool):
    store.create_table(tree.m, tree.c, tree.s, table_of("t"), USER)
    path = (tree.m,) if kind == "metalake" else (tree.m, tree.c, tree.s, "t")
    per_process = 15
    results = race_pool.run(db_url, [("set_properties", (kind, path, i, per_process)) for i in range(PROCESSES)])

    assert all(set(r) == {"ok"} for r in results), results
    entity = store.get_metalake(tree.m) if kind == "metalake" else store.get_table(*path)
    expected = {f"k{i}_{j}" for i in range(PROCESSES) for j in range(per_process)}
    assert set(entity.properties) == expected
    assert entity.version == 1 + PROCESSES * per_process
