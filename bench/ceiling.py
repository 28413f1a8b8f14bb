"""Structural writes against the stack's own ceiling: gravimeta's table create/drop and load,
side by side with the bare-stack ceiling (bench/bare_stack.py: the same SQL through the smallest Flask +
SQLAlchemy Core app), `GET /api/version` and `pgbench -N`, all driven by wrk, in one run.

    .venv/bin/python bench/ceiling.py [--quick] [--rounds 3] [--seconds 5] [--clients 4]

One server per variant, each on its own fresh PostgreSQL database, all with gravimeta's gunicorn setup
(2 workers x 4 threads): the bare stack, gravimeta with the distributed lock off, PG_ADVISORY and
LEASE_TABLE (`memory` catalog: each create or drop is one store transaction). wrk runs `-t C -c C`:
connection i alternates create and drop of a table in its own schema s<i>, so no two claims conflict.
Each round runs, in an order rotated per round: create/drop on each variant; GET of a table with 10
columns on the bare stack and on gravimeta (lock off: a load never claims); GET /api/version on both;
`pgbench -N -c C -j 2` on a scale-1 database of the same server. Every figure is divided by the bare
stack's figure of the same round (the median over rounds is shown), and by pgbench's. Where each
request's CPU went is measured too, per slice: the server's gunicorn workers and the PostgreSQL
backends of its database (/proc/<pid>/stat), and wrk itself; on 2 shared cores these, not the
latencies, say what a variant costs.

Targets: lock-off create/drop >= 0.8 x the bare stack; PG_ADVISORY >= 0.75 x it;
LEASE_TABLE p50 <= 1.2 x lock-off p50; load table >= 0.8 x the bare stack's same SELECT.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wrklib  # noqa: E402
from benchlib import (  # noqa: E402
    LOCK_ENV,
    CpuMeter,
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
    table_body,
    tables_path,
    verdict,
)

VARIANTS = ("bare", "off", "PG_ADVISORY", "LEASE_TABLE")
LOAD_PATH = f"{tables_path('m', 'c', 's0')}/load10"
TARGETS = {"off": 0.8, "PG_ADVISORY": 0.75}
LEASE_P50_TARGET = 1.2
LOAD_TARGET = 0.8


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds x 2 s (about 1 minute)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4, help="wrk connections (one thread each)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 2, 2.0
    binary, run_tag = pgbench_binary(), uuid.uuid4().hex[:6]
    wrklib.wrk_binary()
    print(f"# ceiling: wrk -t{args.clients} -c{args.clients}, 1 server per variant (2 workers x 4 threads), "
          f"{args.rounds} rounds x {args.seconds:g} s per slice")
    print(f"before: {load_note()}")
    http = Http()
    writes: dict[str, list[wrklib.WrkResult]] = {v: [] for v in VARIANTS}
    loads: dict[str, list[wrklib.WrkResult]] = {"bare": [], "off": []}
    versions: dict[str, list[wrklib.WrkResult]] = {"bare": [], "off": []}
    tps: list[float] = []
    notes: list[str] = []
    # id(result) -> (worker CPU s, database CPU s) used during that slice
    cpu: dict[int, tuple[float, float]] = {}
    with ExitStack() as stack:
        bench_url = stack.enter_context(database("postgresql"))
        pgbench_init(binary, bench_url)
        urls: dict[str, str] = {}
        meters: dict[str, CpuMeter] = {}
        for variant in VARIANTS:
            db = stack.enter_context(database("postgresql"))
            if variant == "bare":
                (server,) = stack.enter_context(bare_replicas(db, 1, workers=2, tag="ceiling-bare-"))
            else:
                (server,) = stack.enter_context(replicas(db, 1, LOCK_ENV[variant], workers=2, tag=f"ceiling-{variant}-"))
            make_tree(http, server.url, "m", "c", [f"s{i}" for i in range(args.clients)])
            http.ok(server.url, "POST", tables_path("m", "c", "s0"), table_body("load10", columns=10))
            urls[variant] = server.url
            meters[variant] = CpuMeter(server)
            stack.callback(meters[variant].close)

        def measured(variant: str, go: Callable[[], wrklib.WrkResult]) -> wrklib.WrkResult:
            before = meters[variant].snapshot()
            result = go()
            cpu[id(result)] = CpuMeter.used(before, meters[variant].snapshot())
            return result

        def write_slice(variant: str, r: int) -> Callable[[], None]:
            def go() -> None:
                writes[variant].append(measured(variant, lambda: wrklib.run(
                    urls[variant], wrklib.STRUCTURAL, args.clients, args.seconds,
                    {"schemas": wrklib.SCHEMAS, "cycle": "create,drop", "tag": f"{run_tag}r{r}"})))
            return go

        def get_slice(variant: str, path: str, into: dict[str, list[wrklib.WrkResult]], kind: str) -> Callable[[], None]:
            def go() -> None:
                into[variant].append(measured(variant, lambda: wrklib.run(
                    urls[variant], wrklib.GET, args.clients, args.seconds, {"path": path, "kind": kind})))
            return go

        def pgbench_slice() -> None:
            tps.append(pgbench_tps(binary, bench_url, args.clients, args.seconds))

        for variant in VARIANTS:  # warm-up: pools, prepared statements, the first claims
            wrklib.run(urls[variant], wrklib.STRUCTURAL, args.clients, 1, {
                "schemas": wrklib.SCHEMAS, "cycle": "create,drop", "tag": f"{run_tag}w"})
        for r in range(args.rounds):
            slices = [write_slice(v, r) for v in VARIANTS]
            slices += [get_slice(v, LOAD_PATH, loads, "load") for v in loads]
            slices += [get_slice(v, "/api/version", versions, "version") for v in versions]
            slices.append(pgbench_slice)
            shift = r * 3 % len(slices)
            for go in slices[shift:] + slices[:shift]:  # rotated: no slice always runs first
                go()
            notes.append(load_note())
    print(f"after:  {load_note()}")

    def ratio_to(results: list[wrklib.WrkResult], base: list[wrklib.WrkResult]) -> float:
        return median([x.throughput / b.throughput for x, b in zip(results, base, strict=True)])

    def per_request_ms(results: list[wrklib.WrkResult], which: int) -> float:
        """CPU ms per request: 0 the server's workers, 1 its database backends, 2 wrk."""
        return 1000 * median([(cpu[id(x)][which] if which < 2 else x.client_cpu) / max(1, x.requests)
                              for x in results])

    def row(label: str, results: list[wrklib.WrkResult], same: list[wrklib.WrkResult]) -> list[object]:
        return [label, median([x.throughput for x in results]), 1000 * median([x.p(0.5) for x in results]),
                1000 * median([x.p(0.99) for x in results]), ratio_to(results, same), ratio_to(results, writes["bare"]),
                median([x.throughput / t for x, t in zip(results, tps, strict=True)]),
                per_request_ms(results, 0), per_request_ms(results, 1), per_request_ms(results, 2),
                sum(x.errors for x in results)]

    rows: list[list[object]] = [["pgbench -N (tx/s)", median(tps), "", "", "",
                                 median([t / b.throughput for t, b in zip(tps, writes["bare"], strict=True)]), 1.0,
                                 "", "", "", ""]]
    rows += [row(f"create/drop: {'bare stack' if v == 'bare' else 'gravimeta ' + v}", writes[v], writes["bare"])
             for v in VARIANTS]
    rows += [row("load table: bare stack (same SELECT)", loads["bare"], loads["bare"]),
             row("load table: gravimeta", loads["off"], loads["bare"]),
             row("GET /api/version: bare stack", versions["bare"], versions["bare"]),
             row("GET /api/version: gravimeta", versions["off"], versions["bare"])]
    print()
    print(md_table(["what", "req/s", "p50 ms", "p99 ms", "÷ bare, same request", "÷ bare create/drop", "÷ pgbench",
                    "worker CPU ms/req", "DB CPU ms/req", "wrk CPU ms/req", "errors"], rows))
    print()
    for variant, target in TARGETS.items():
        ratio = ratio_to(writes[variant], writes["bare"])
        print(f"{variant} create/drop ÷ bare stack: {ratio:.2f} ({verdict(ratio, target, at_most=False)})")
    lease = median([x.p(0.5) / o.p(0.5) for x, o in zip(writes["LEASE_TABLE"], writes["off"], strict=True)])
    print(f"LEASE_TABLE p50 ÷ lock-off p50: {lease:.2f} ({verdict(lease, LEASE_P50_TARGET)})")
    load = ratio_to(loads["off"], loads["bare"])
    print(f"load table ÷ bare stack's same SELECT: {load:.2f} ({verdict(load, LOAD_TARGET, at_most=False)})")
    version = ratio_to(versions["off"], versions["bare"])
    print(f"GET /api/version, gravimeta ÷ bare stack: {version:.2f}")
    print("per round (load during the round): " + "; ".join(
        f"{i}: bare {writes['bare'][i].throughput:.0f}, off {writes['off'][i].throughput:.0f}, "
        f"PG_ADVISORY {writes['PG_ADVISORY'][i].throughput:.0f}, LEASE_TABLE {writes['LEASE_TABLE'][i].throughput:.0f} "
        f"req/s, pgbench {tps[i]:.0f} tx/s ({notes[i]})" for i in range(args.rounds)))
    for variant in VARIANTS:
        for e in [e for x in writes[variant] for e in x.error_samples][:3]:
            print(f"  {variant} error: {e}")


if __name__ == "__main__":
    main()
