"""2. Distance from the database's limit: disjoint structural operations per second across several
replicas, divided by the bare-stack ceiling's (bench/bare_stack.py: the same SQL through the smallest
Flask + SQLAlchemy Core app, same replicas) and by `pgbench -N` (simple update) transactions per second
with the same number of clients, measured in the same run. Load from wrk.

    .venv/bin/python bench/db_limit.py [--quick] [--rounds 3] [--seconds 5] [--clients 8] [--replicas 3]

The gravimeta side: `replicas` gunicorn replicas (1 worker x 4 threads each) per lock mode on one fresh
PostgreSQL database per mode; the bare stack the same way on its own database. `clients` wrk
connections (one thread each) spread round-robin over the replicas, one wrk process per replica at
once, each connection creating and dropping tables in its own schema (every request is one structural
operation, and no two connections' claims are related). Latency percentiles of a multi-replica run
come from the pooled per-request timings of the wrk scripts (wrk's histograms cannot be merged). The
pgbench side: a scale-1 pgbench database, `pgbench -N -c clients -j 2 -T seconds`. Rounds interleave
pgbench, bare, off, LEASE_TABLE, PG_ADVISORY. Target: PG_ADVISORY ops/s >= 0.35 x pgbench
tps; the ratio to the bare stack says what gravimeta itself costs (bench/ceiling.py).

Each round also sends `GET /api/version` (no database at all) from the same connections to the
lock-off replicas: the framework's ceiling, i.e. the most requests per second these workers could
answer if a structural operation cost nothing.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wrklib  # noqa: E402
from benchlib import (  # noqa: E402
    LOCK_ENV,
    Http,
    bare_replicas,
    database,
    load_note,
    make_tree,
    md_table,
    median,
    pgbench_binary,
    pgbench_init,
    pgbench_tps,
    replicas,
    verdict,
)

MODES = ("bare", "off", "LEASE_TABLE", "PG_ADVISORY")
TARGET = 0.35


def disjoint_load(bases: list[str], clients: int, seconds: float, tag: str) -> wrklib.WrkResult:
    return wrklib.run_many(bases, wrklib.STRUCTURAL, clients, seconds,
                           {"schemas": wrklib.SCHEMAS, "cycle": "create,drop", "tag": tag})


def version_load(bases: list[str], clients: int, seconds: float) -> wrklib.WrkResult:
    return wrklib.run_many(bases, wrklib.GET, clients, seconds, {"path": "/api/version", "kind": "version"})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds on 2 replicas (< 1 min)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.replicas = 2, 2.0, 2
    binary, run_tag = pgbench_binary(), uuid.uuid4().hex[:6]
    wrklib.wrk_binary()
    print(f"# distance from the DB limit: {args.clients} wrk connections, {args.replicas} replicas x 1 worker, "
          f"{args.rounds} rounds x {args.seconds:g} s")
    print(f"before: {load_note()}")
    http = Http()
    ops: dict[str, list[wrklib.WrkResult]] = {m: [] for m in MODES}
    tps: list[float] = []
    ceiling: list[wrklib.WrkResult] = []
    with ExitStack() as stack:
        bench_url = stack.enter_context(database("postgresql"))
        pgbench_init(binary, bench_url)
        bases: dict[str, list[str]] = {}
        for mode in MODES:
            url = stack.enter_context(database("postgresql"))
            if mode == "bare":
                servers = stack.enter_context(bare_replicas(url, args.replicas, workers=1, tag="limit-bare-"))
            else:
                servers = stack.enter_context(replicas(url, args.replicas, LOCK_ENV[mode], workers=1, tag=f"limit-{mode}-"))
            make_tree(http, servers[0].url, "m", "c", [f"s{i}" for i in range(args.clients)])
            bases[mode] = [s.url for s in servers]
            disjoint_load(bases[mode], args.clients, 1, f"{run_tag}w")  # warm-up
        for r in range(args.rounds):
            tps.append(pgbench_tps(binary, bench_url, args.clients, args.seconds))
            for mode in MODES:
                ops[mode].append(disjoint_load(bases[mode], args.clients, args.seconds, f"{run_tag}r{r}"))
            ceiling.append(version_load(bases["off"], args.clients, args.seconds))
    print(f"after:  {load_note()}")

    def row(label: str, results: list[wrklib.WrkResult]) -> list[object]:
        return [label, median([x.throughput for x in results]), 1000 * median([x.p(0.5) for x in results]),
                median([x.throughput / b.throughput for x, b in zip(results, ops["bare"], strict=True)]),
                median([x.throughput / t for x, t in zip(results, tps, strict=True)]), sum(x.errors for x in results)]

    rows = [["pgbench -N", median(tps), "", median([t / b.throughput for t, b in zip(tps, ops["bare"], strict=True)]),
             1.0, ""],
            row("GET /api/version (framework ceiling)", ceiling)]
    rows += [row("bare stack (same SQL)" if mode == "bare" else f"gravimeta {mode}", ops[mode]) for mode in MODES]
    print()
    print(md_table(["what", "tx/s or req/s", "p50 ms", "÷ bare stack", "÷ pgbench tps", "errors"], rows))
    print()
    advisory = rows[-1]
    print(f"PG_ADVISORY / pgbench: {advisory[4]:.3f} ({verdict(advisory[4], TARGET, at_most=False)}); "
          f"PG_ADVISORY / bare stack: {advisory[3]:.3f}; pgbench tps per round: {', '.join(f'{t:.0f}' for t in tps)}")
    for mode in MODES:
        for e in [e for x in ops[mode] for e in x.error_samples][:3]:
            print(f"  {mode} error: {e}")


if __name__ == "__main__":
    main()
