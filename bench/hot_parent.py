"""3. Hot parent: 32 connections creating tables in ONE schema through several replicas. Every create
claims the same scope (/m/c/s), so they queue: zero errors expected, plus throughput and the spread
of the wait (target: p99 <= 10 x p50, i.e. no starvation). Load from wrk.

    .venv/bin/python bench/hot_parent.py [--quick] [--rounds 2] [--seconds 6] [--clients 32] [--replicas 3]

Per lock mode: `replicas` gunicorn replicas (2 workers x 4 threads) on a fresh PostgreSQL database,
the wrk connections (one thread each) spread round-robin over them (one wrk process per replica, at
once), closed loop, each creating uniquely named tables in schema s (bench/wrk/structural.lua with
schema=s cycle=create). The wait is the request latency (claim wait + work), timed per request by the
script and pooled over the replicas. Rounds interleave the modes. "bare" is the bare-stack ceiling
(bench/bare_stack.py: the same SQL without any claim; its creates only meet at the schema row's FOR
SHARE lock, which they share) and "off" gravimeta without the distributed lock: the throughput that
claiming one scope at a time costs. The claim wait is polling with capped exponential backoff (2 ms
doubling to 100 ms, full jitter), and whoever polls first after a release wins. The database line
of waiters ("LEASE_TABLE queued") and the per-process gate ("LEASE_TABLE ungated" was the A/B) were
removed (docs/ha.md "Waiting"). PG_ADVISORY waits in PostgreSQL's lock queue. No wake-up (LISTEN/NOTIFY) is implemented:
docs/benchmarks.md says why.
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
    replicas,
    verdict,
)

TARGET = 10.0
ALL_MODES = ["bare", "off", "LEASE_TABLE", "PG_ADVISORY"]


def hot_load(bases: list[str], clients: int, seconds: float, tag: str) -> wrklib.WrkResult:
    return wrklib.run_many(bases, wrklib.STRUCTURAL, clients, seconds,
                           {"schemas": wrklib.SCHEMAS, "schema": "s", "cycle": "create", "tag": tag})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, 2 replicas, no bare/lock-off modes (< 1 min)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated modes, e.g. \"LEASE_TABLE,PG_ADVISORY\"")
    args = parser.parse_args(argv)
    modes = list(ALL_MODES)
    if args.only:
        modes = args.only.split(",")
    if args.quick:
        args.rounds, args.seconds, args.replicas = 1, 4.0, 2
        modes = [m for m in modes if m not in ("bare", "off")] if not args.only else modes
    wrklib.wrk_binary()
    run_tag = uuid.uuid4().hex[:6]
    print(f"# hot parent: {args.clients} wrk connections, one schema, {args.replicas} replicas x 2 workers, "
          f"{args.rounds} rounds x {args.seconds:g} s per mode")
    print(f"before: {load_note()}")
    http = Http()
    results: dict[str, list[wrklib.WrkResult]] = {m: [] for m in modes}
    with ExitStack() as stack:
        bases: dict[str, list[str]] = {}
        for mode in modes:
            url = stack.enter_context(database("postgresql"))
            if mode == "bare":
                servers = stack.enter_context(bare_replicas(url, args.replicas, workers=2, tag="hot-bare-"))
            else:
                servers = stack.enter_context(replicas(url, args.replicas, LOCK_ENV[mode], workers=2, tag=f"hot-{mode}-"))
            make_tree(http, servers[0].url, "m", "c", ["s"])
            bases[mode] = [s.url for s in servers]
            hot_load(bases[mode], args.clients, 1, f"{run_tag}w")
        for r in range(args.rounds):
            for mode in modes:
                results[mode].append(hot_load(bases[mode], args.clients, args.seconds, f"{run_tag}r{r}"))
    print(f"after:  {load_note()}")
    rows = []
    for mode in modes:
        rs = results[mode]
        p50 = median([x.p(0.5, "create") for x in rs])
        p99 = median([x.p(0.99, "create") for x in rs])
        spread = median([x.p(0.99, "create") / x.p(0.5, "create") for x in rs])
        rows.append([mode, median([x.throughput for x in rs]), 1000 * p50, 1000 * p99,
                     1000 * max(x.p(1.0, "create") for x in rs), spread, sum(x.errors for x in rs)])
        for e in [e for x in rs for e in x.error_samples][:3]:
            print(f"  {mode} error: {e}")
    print()
    print(md_table(["mode", "creates/s", "p50 ms", "p99 ms", "max ms", "p99 / p50", "errors"], rows))
    print()
    for row in rows:
        if row[0] not in ("off", "bare"):
            print(f"{row[0]}: p99/p50 {row[5]:.1f} ({verdict(row[5], TARGET)}), {row[6]} errors")


if __name__ == "__main__":
    main()
