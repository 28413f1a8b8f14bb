"""5. Growth: list tables and cascade-drop a schema holding 1k vs 10k tables, through the API.

    .venv/bin/python bench/growth.py [--quick] [--rounds 3] [--small 1000] [--large 10000] [--backend postgresql]

The tables (3 columns each) are seeded straight into the store's tables with bulk INSERTs, for speed;
listing (GET .../tables, 3 times each) and the cascade drop (DELETE .../schemas/s?cascade=true) go
through one gunicorn replica with one worker, so the worker's memory is that of these requests. Each
round seeds a fresh small and large schema and interleaves small/large. Figures: large ÷ small time,
median over rounds (target <= 12 for 10x the tables, i.e. near linear), and the worker's resident
memory: its peak (VmHWM) grows at most once, so it is read after the first round's small requests and
again after its large ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    LOCK_ENV,
    Http,
    database,
    hwm_mb,
    load_note,
    make_tree,
    md_table,
    median,
    replicas,
    rss_mb,
    tables_path,
    verdict,
    worker_pids,
)
from sqlalchemy import Engine, insert, select  # noqa: E402

from gravimeta.store.database import create_store_engine  # noqa: E402
from gravimeta.store.models import CatalogRow, ColumnRow, SchemaRow, TableRow  # noqa: E402

TARGET = 12.0
LISTS_PER_ROUND = 3


def seed(engine: Engine, schema: str, count: int, batch: int = 2000) -> float:
    """Insert `count` tables with 3 columns each under schema `schema` of m.c; seconds taken."""
    started = time.perf_counter()
    with engine.begin() as conn:
        catalog_id = conn.scalar(select(CatalogRow.id).where(CatalogRow.name == "c"))
        schema_id = conn.scalar(select(SchemaRow.id).where(SchemaRow.catalog_id == catalog_id, SchemaRow.name == schema))
        for lo in range(0, count, batch):
            names = [f"t{i:06d}" for i in range(lo, min(count, lo + batch))]
            conn.execute(insert(TableRow.__table__), [  # type: ignore[arg-type]
                {"schema_id": schema_id, "name": n, "comment": None, "properties": {}, "partitioning": [],
                 "distribution": None, "sort_orders": [], "indexes": [], "version": 1, "creator": "bench",
                 "create_time": "2025-01-01T00:00:00.000Z", "last_modifier": "bench",
                 "last_modified_time": "2025-01-01T00:00:00.000Z"} for n in names])
            ids = conn.execute(select(TableRow.id).where(TableRow.schema_id == schema_id, TableRow.name.in_(names)))
            conn.execute(insert(ColumnRow.__table__), [  # type: ignore[arg-type]
                {"table_id": tid, "position": p, "name": f"c{p}", "type": "integer", "comment": None,
                 "nullable": True, "auto_increment": False, "default_value": None}
                for (tid,) in ids for p in range(3)])
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round (< 40 s)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000)
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"])
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
    sizes = {"small": args.small, "large": args.large}
    print(f"# growth on {args.backend}: {args.small} vs {args.large} tables, {args.rounds} rounds, 1 worker")
    print(f"before: {load_note()}")
    http = Http()
    times: dict[tuple[str, str], list[float]] = {}
    memory: dict[str, float] = {}
    env = LOCK_ENV["LEASE_TABLE" if args.backend != "postgresql" else "AUTO"]
    with database(args.backend) as url, replicas(url, 1, env, workers=1, tag="growth-") as (server,):
        engine = create_store_engine(url)
        try:
            make_tree(http, server.url, "m", "c", [])
            (worker,) = worker_pids(server)
            memory["start"] = rss_mb(worker)
            for r in range(args.rounds):
                for size in sizes:
                    http.ok(server.url, "POST", "/api/metalakes/m/catalogs/c/schemas", {"name": f"{size}{r}"})
                    seed(engine, f"{size}{r}", sizes[size])
                for _ in range(LISTS_PER_ROUND):
                    for size in sizes:
                        started = time.perf_counter()
                        listed = http.ok(server.url, "GET", tables_path("m", "c", f"{size}{r}"))
                        times.setdefault(("list", size), []).append(time.perf_counter() - started)
                        assert len(listed["identifiers"]) == sizes[size]
                        if r == 0:
                            memory[f"peak after list {size}"] = hwm_mb(worker)
                for size in sizes:
                    started = time.perf_counter()
                    dropped = http.ok(server.url, "DELETE", f"/api/metalakes/m/catalogs/c/schemas/{size}{r}?cascade=true")
                    times.setdefault(("cascade drop", size), []).append(time.perf_counter() - started)
                    assert dropped["dropped"] is True
                    if r == 0:
                        memory[f"peak after drop {size}"] = hwm_mb(worker)
            memory["end (resident)"] = rss_mb(worker)
        finally:
            engine.dispose()
    print(f"after:  {load_note()}")
    rows = []
    for op in ("list", "cascade drop"):
        small, large = times[(op, "small")], times[(op, "large")]
        per_pair = [b / a for a, b in zip(small, large, strict=True)]
        rows.append([op, 1000 * median(small), 1000 * median(large), median(per_pair),
                     verdict(median(per_pair), TARGET)])
    print()
    print(md_table(["operation", f"{args.small} tables ms", f"{args.large} tables ms", "ratio", "target"], rows))
    print()
    print(md_table(["worker memory", "MB"], [[k, v] for k, v in memory.items()]))


if __name__ == "__main__":
    main()
