"""3. Hot parent: 32 clients creating tables in ONE schema through several replicas. Every create
claims the same scope (/m/c/s), so they queue: zero errors expected, plus throughput and the spread
of the wait (target: p99 <= 10 x p50, i.e. no starvation).

    .venv/bin/python bench/hot_parent.py [--quick] [--rounds 2] [--seconds 6] [--clients 32] [--replicas 3]

Per lock mode: `replicas` gunicorn replicas (2 workers x 4 threads) on a fresh PostgreSQL database,
clients spread round-robin over them, closed loop, each creating uniquely named tables. The wait is
the request latency (claim wait + work). Rounds interleave the modes. The claim wait is polling with
capped exponential backoff (2 ms doubling to 100 ms, full jitter); the threads of one worker that
wait for the same scope queue at a local gate, so one of them polls at a time, and across replicas
whoever polls first after a release wins. "LEASE_TABLE queued" turns on the database line of
waiters (GRAVIMETA_CLAIM_LINE=true, gm_claim_waiter: first come, first served across replicas; the
first two in line poll every <= 10 ms), "LEASE_TABLE ungated" turns the local gate off
(GRAVIMETA_CLAIM_GATE=false: every waiting thread polls). No wake-up (LISTEN/NOTIFY) is
implemented: docs/benchmarks.md says why.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    LOCK_ENV,
    Call,
    Http,
    LoadResult,
    database,
    load_note,
    make_tree,
    md_table,
    median,
    pct,
    replicas,
    run_clients,
    table_body,
    tables_path,
    until,
    verdict,
)

TARGET = 10.0


def hot_load(bases: list[str], clients: int, seconds: float, tag: str) -> LoadResult:
    def work(i: int, call: Call) -> None:
        base, path = bases[i % len(bases)], tables_path("m", "c", "s")
        more, n = until(seconds), 0
        while more():
            call(base, "POST", path, table_body(f"{tag}_{i}_{n}"), kind="create")
            n += 1

    return run_clients(clients, work)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, 2 replicas, no lock-off mode (< 60 s)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated modes, e.g. \"LEASE_TABLE,LEASE_TABLE ungated\"")
    args = parser.parse_args(argv)
    modes = ["off", "LEASE_TABLE", "LEASE_TABLE queued", "LEASE_TABLE ungated", "PG_ADVISORY"]
    if args.only:
        modes = args.only.split(",")
    if args.quick:
        args.rounds, args.seconds, args.replicas, modes = 1, 4.0, 2, modes[1:]
    print(f"# hot parent: {args.clients} clients, one schema, {args.replicas} replicas x 2 workers, "
          f"{args.rounds} rounds x {args.seconds:g} s per mode")
    print(f"before: {load_note()}")
    http = Http()
    results: dict[str, list[LoadResult]] = {m: [] for m in modes}
    with ExitStack() as stack:
        bases: dict[str, list[str]] = {}
        for mode in modes:
            url = stack.enter_context(database("postgresql"))
            servers = stack.enter_context(replicas(url, args.replicas, LOCK_ENV[mode], workers=2, tag=f"hot-{mode}-"))
            make_tree(http, servers[0].url, "m", "c", ["s"])
            bases[mode] = [s.url for s in servers]
            hot_load(bases[mode], args.clients, 0.5, "warm")
        for r in range(args.rounds):
            for mode in modes:
                results[mode].append(hot_load(bases[mode], args.clients, args.seconds, f"r{r}"))
    print(f"after:  {load_note()}")
    rows = []
    for mode in modes:
        rs = results[mode]
        p50 = median([pct(x.latencies, 0.5) for x in rs])
        p99 = median([pct(x.latencies, 0.99) for x in rs])
        spread = median([pct(x.latencies, 0.99) / pct(x.latencies, 0.5) for x in rs])
        rows.append([mode, median([x.throughput for x in rs]), 1000 * p50, 1000 * p99,
                     1000 * max(max(x.latencies, default=0) for x in rs), spread, sum(len(x.errors) for x in rs)])
        for e in [e for x in rs for e in x.errors][:3]:
            print(f"  {mode} error: {e}")
    print()
    print(md_table(["mode", "creates/s", "p50 ms", "p99 ms", "max ms", "p99 / p50", "errors"], rows))
    print()
    for row in rows:
        if row[0] != "off":
            print(f"{row[0]}: p99/p50 {row[5]:.1f} ({verdict(row[5], TARGET)}), {row[6]} errors")


if __name__ == "__main__":
    main()
