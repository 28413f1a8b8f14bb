"""1. Claim overhead through HTTP: p50/p99 latency and throughput of create table, rename table and
drop table against real gunicorn replicas with the distributed lock off, LEASE_TABLE and PG_ADVISORY,
next to the bare-stack ceiling (bench/bare_stack.py), load from wrk.

    .venv/bin/python bench/claim_overhead.py [--quick] [--rounds 12] [--seconds 1] [--clients 4]
                                             [--backend postgresql|mysql|sqlite] [--provider memory|sqlite]

`--provider`: the catalog's connector. With `memory` (process-local) each request is one store transaction
and PG_ADVISORY gives it advisory locks; with `sqlite` (real catalog files in a temporary directory) each
is journalled (intent, engine call, apply) and takes the lease under PG_ADVISORY too (docs/ha.md).

"LEASE_TABLE durable" is the lease with GRAVIMETA_DURABLE_CLAIMS=true: its claim and release commits
wait for the WAL flush, as they did before `SET LOCAL synchronous_commit = off` (the A/B of that fix).
One server per mode (same gunicorn setup: 2 workers x 4 threads), each on its own fresh database, all
running at once. "bare" is the bare-stack ceiling: the same SQL as gravimeta's lock-off path of a
`memory` catalog through the smallest Flask + SQLAlchemy Core app (PostgreSQL only). Rounds are
interleaved (bare, off, LEASE_TABLE, LEASE_TABLE durable, PG_ADVISORY, off, ...; rotated each round): in
each, wrk's `clients` connections (one thread each, schema s<i> each, so claims never contend) cycle
create -> rename -> drop for `seconds` (bench/wrk/structural.lua). p50/p99 over all requests come from
wrk's histogram, per operation from the script's timings. Ratios are per round against the lock-off
run (latency) or the bare stack (throughput) of the same round; the table shows their median (short
slices, many rounds, rotated order: background load on a shared machine comes in bursts). Targets:
LEASE_TABLE <= 1.3x and PG_ADVISORY <= 1.1x the lock-off p50.
On MariaDB (`--backend mysql`) and SQLite the modes are off, LEASE_TABLE and LEASE_TABLE durable (no
advisory locks there, no bare stack; "durable" makes no difference off PostgreSQL: it is a control run
of the same configuration). SQLite replicas share one database file on this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
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

from connectors.sqlite import ROOT_ENV as SQLITE_ROOT_ENV  # noqa: E402

PG_MODES = ("bare", "off", "LEASE_TABLE", "LEASE_TABLE durable", "PG_ADVISORY")
OTHER_MODES = ("off", "LEASE_TABLE", "LEASE_TABLE durable")
KINDS = ("create", "rename", "drop")
TARGETS = {"LEASE_TABLE": 1.3, "PG_ADVISORY": 1.1}


def cycle_load(base: str, clients: int, seconds: float, tag: str) -> wrklib.WrkResult:
    """Each connection: create, rename, drop a table in its own schema, until time is up."""
    return wrklib.run(base, wrklib.STRUCTURAL, clients, seconds,
                      {"schemas": wrklib.SCHEMAS, "cycle": "create,rename,drop", "tag": tag})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 short rounds (< 1 min)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=1.0, help="per mode per round (whole seconds: wrk's -d)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"])
    parser.add_argument("--provider", default="memory", choices=["memory", "sqlite"])
    args = parser.parse_args(argv)
    os.environ.setdefault(SQLITE_ROOT_ENV, tempfile.mkdtemp(prefix="gm-bench-sqlite-"))  # the replicas inherit it
    modes = PG_MODES if args.backend == "postgresql" else OTHER_MODES
    if args.quick:
        args.rounds, args.seconds = 4, 1.0
    wrklib.wrk_binary()
    run_tag = uuid.uuid4().hex[:6]
    print(f"# claim overhead on {args.backend}, {args.provider} catalog: wrk -t{args.clients} -c{args.clients}, "
          f"{args.rounds} rounds x {args.seconds:g} s per mode")
    print(f"before: {load_note()}")
    http = Http()
    per_round: dict[str, list[wrklib.WrkResult]] = {m: [] for m in modes}
    with ExitStack() as stack:
        bases = {}
        for mode in modes:
            url = stack.enter_context(database(args.backend))
            if mode == "bare":
                (server,) = stack.enter_context(bare_replicas(url, 1, workers=2, tag="overhead-bare-"))
            else:
                (server,) = stack.enter_context(replicas(url, 1, LOCK_ENV[mode], workers=2, tag=f"overhead-{mode}-"))
            provider = "memory" if mode == "bare" else args.provider
            properties = {"path": f"c-{mode.replace(' ', '-')}.db"} if provider == "sqlite" else {}
            make_tree(http, server.url, "m", "c", [f"s{i}" for i in range(args.clients)], provider, properties)
            bases[mode] = server.url
        for mode in modes:  # warm-up of every worker's pool
            cycle_load(bases[mode], args.clients, 1, f"{run_tag}w")
        for r in range(args.rounds):
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:  # rotated: no mode always goes first
                per_round[mode].append(cycle_load(bases[mode], args.clients, args.seconds, f"{run_tag}r{r}"))
    print(f"after:  {load_note()}")

    for m in modes:
        for e in [e for x in per_round[m] for e in x.error_samples][:3]:
            print(f"  {m} error: {e}")
    reference = "bare" if "bare" in modes else "off"
    rows = []
    for mode in modes:
        for kind in (*KINDS, "all"):
            k = None if kind == "all" else kind
            p50 = [x.p(0.5, k) for x in per_round[mode]]
            p99 = [x.p(0.99, k) for x in per_round[mode]]
            ratio = [x.p(0.5, k) / o.p(0.5, k) for x, o in zip(per_round[mode], per_round["off"], strict=True)]
            tput = [x.throughput for x in per_round[mode]]
            to_off = [x.throughput / o.throughput for x, o in zip(per_round[mode], per_round["off"], strict=True)]
            to_ref = [x.throughput / b.throughput for x, b in zip(per_round[mode], per_round[reference], strict=True)]
            last = kind == "all"
            rows.append([mode, kind, 1000 * median(p50), 1000 * median(p99), median(ratio),
                         median(tput) if last else "", median(to_off) if last else "",
                         *([median(to_ref) if last else ""] if reference != "off" else []),
                         sum(x.errors for x in per_round[mode]) if last else ""])
    print()
    print(md_table(["mode", "op", "p50 ms", "p99 ms", "p50 / off p50", "req/s", "req/s / off",
                    *([f"req/s / {reference}"] if reference != "off" else []), "errors"], rows))
    print()
    for mode, target in TARGETS.items():
        if mode not in modes:
            continue
        ratio = next(r[4] for r in rows if r[0] == mode and r[1] == "all")
        print(f"{mode}: p50 ratio {ratio:.2f} ({verdict(ratio, target)}); median over {args.rounds} rounds")


if __name__ == "__main__":
    main()
