"""2. Distance from the database's limit: disjoint structural operations per second across several
replicas, divided by `pgbench -N` (simple update) transactions per second with the same number of
clients, measured in the same run.

    .venv/bin/python bench/db_limit.py [--quick] [--rounds 3] [--seconds 5] [--clients 8] [--replicas 3]

The gravimeta side: `replicas` gunicorn replicas (1 worker x 4 threads each) per lock mode on one fresh
PostgreSQL database per mode; `clients` closed-loop clients spread round-robin over the replicas, each
creating and dropping tables in its own schema (every request is one structural operation, and no
two clients' claims are related). The pgbench side: a scale-1 pgbench database, `pgbench -N -c clients
-j 2 -T seconds`. Rounds interleave pgbench, off, LEASE_TABLE, PG_ADVISORY. Target (issue 6):
PG_ADVISORY ops/s >= 0.35 x pgbench tps.

Each round also sends `GET /api/version` (no database at all) from the same clients to the lock-off
replicas: the framework's ceiling, i.e. the most requests per second these workers could answer if a
structural operation cost nothing. Its ratio to pgbench bounds the ratio any structural operation
can reach on this machine.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
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
from sqlalchemy.engine import make_url  # noqa: E402

MODES = ("off", "LEASE_TABLE", "PG_ADVISORY")
TARGET = 0.35


def pgbench_binary() -> str:
    found = shutil.which("pgbench") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))), None)
    if found is None:
        raise SystemExit("pgbench not found (it comes with PostgreSQL: /usr/lib/postgresql/*/bin)")
    return str(found)


def pgbench_args(url: str) -> list[str]:
    u = make_url(url)
    return ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres", u.database or ""]


def pgbench_tps(binary: str, url: str, clients: int, seconds: float) -> float:
    out = subprocess.run(
        [binary, "-N", "-n", "-c", str(clients), "-j", "2", "-T", str(max(1, round(seconds))), *pgbench_args(url)],
        capture_output=True, text=True, timeout=seconds + 60, check=True,
    ).stdout
    match = re.search(r"tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)", out)
    if match is None:
        raise RuntimeError(f"could not read pgbench's tps from:\n{out}")
    return float(match.group(1))


def disjoint_load(bases: list[str], clients: int, seconds: float, round_no: int) -> LoadResult:
    def work(i: int, call: Call) -> None:
        base, path = bases[i % len(bases)], tables_path("m", "c", f"s{i}")
        more, n = until(seconds), 0
        while more():
            name = f"t{round_no}_{n}"
            call(base, "POST", path, table_body(name), kind="create")
            call(base, "DELETE", f"{path}/{name}", kind="drop")
            n += 1

    return run_clients(clients, work)


def version_load(bases: list[str], clients: int, seconds: float) -> LoadResult:
    def work(i: int, call: Call) -> None:
        base, more = bases[i % len(bases)], until(seconds)
        while more():
            call(base, "GET", "/api/version", kind="version")

    return run_clients(clients, work)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds on 2 replicas (< 40 s)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.replicas = 2, 2.0, 2
    binary = pgbench_binary()
    print(f"# distance from the DB limit: {args.clients} clients, {args.replicas} replicas x 1 worker, "
          f"{args.rounds} rounds x {args.seconds:g} s")
    print(f"before: {load_note()}")
    http = Http()
    ops: dict[str, list[LoadResult]] = {m: [] for m in MODES}
    tps: list[float] = []
    ceiling: list[LoadResult] = []
    with ExitStack() as stack:
        bench_url = stack.enter_context(database("postgresql"))
        subprocess.run([binary, "-i", "-s", "1", "-q", *pgbench_args(bench_url)], capture_output=True, check=True, timeout=120)
        bases: dict[str, list[str]] = {}
        for mode in MODES:
            url = stack.enter_context(database("postgresql"))
            servers = stack.enter_context(replicas(url, args.replicas, LOCK_ENV[mode], workers=1, tag=f"limit-{mode}-"))
            make_tree(http, servers[0].url, "m", "c", [f"s{i}" for i in range(args.clients)])
            bases[mode] = [s.url for s in servers]
            disjoint_load(bases[mode], args.clients, 0.5, -1)  # warm-up
        for r in range(args.rounds):
            tps.append(pgbench_tps(binary, bench_url, args.clients, args.seconds))
            for mode in MODES:
                ops[mode].append(disjoint_load(bases[mode], args.clients, args.seconds, r))
            ceiling.append(version_load(bases["off"], args.clients, args.seconds))
    print(f"after:  {load_note()}")
    rows = [["pgbench -N", median(tps), "", 1.0, ""],
            ["GET /api/version (framework ceiling)", median([x.throughput for x in ceiling]),
             1000 * median([pct(x.latencies, 0.5) for x in ceiling]),
             median([x.throughput / t for x, t in zip(ceiling, tps, strict=True)]), sum(len(x.errors) for x in ceiling)]]
    for mode in MODES:
        ratios = [x.throughput / t for x, t in zip(ops[mode], tps, strict=True)]
        rows.append([f"gravimeta {mode}", median([x.throughput for x in ops[mode]]),
                     1000 * median([pct(x.latencies, 0.5) for x in ops[mode]]), median(ratios),
                     sum(len(x.errors) for x in ops[mode])])
    print()
    print(md_table(["what", "tx/s or ops/s", "p50 ms", "÷ pgbench tps", "errors"], rows))
    print()
    ratio = rows[-1][3]
    print(f"PG_ADVISORY / pgbench: {ratio:.3f} ({verdict(ratio, TARGET, at_most=False)}); "
          f"pgbench tps per round: {', '.join(f'{t:.0f}' for t in tps)}")
    print(f"framework ceiling / pgbench: {rows[1][3]:.3f}; PG_ADVISORY reaches {ratio / rows[1][3]:.3f} of that ceiling")


if __name__ == "__main__":
    main()
