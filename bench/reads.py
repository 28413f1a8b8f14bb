"""4. Reads: load-table requests per second per worker, against a trivial endpoint of the same app
(GET /api/version, the framework's ceiling).

    .venv/bin/python bench/reads.py [--quick] [--rounds 6] [--seconds 3] [--clients 4] [--backend postgresql]

One replica with ONE gunicorn worker (4 threads), lock on (AUTO: reads never claim, so the mode does
not matter), a table with 10 columns. Rounds alternate version, load, version, load ... with
`clients` closed-loop keep-alive clients; the figure is load/s ÷ version/s per round, median over
rounds. Target: >= 0.5.

The clients run in this process and share the 2 cores with the worker and the database, so the
measured req/s is partly the client's ceiling. The worker's own CPU time per request (from
/proc/<pid>/stat over each round) is printed too: 1 / (CPU seconds per request) is what one worker
could serve if it had a core to itself, and its ratio does not depend on the client.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    LOCK_ENV,
    Call,
    Http,
    LoadResult,
    cpu_seconds,
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
    worker_pids,
)

TARGET = 0.5


def read_load(base: str, path: str, clients: int, seconds: float) -> LoadResult:
    def work(_i: int, call: Call) -> None:
        more = until(seconds)
        while more():
            call(base, "GET", path)

    return run_clients(clients, work)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 short rounds (< 40 s)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"])
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 3, 2.0
    print(f"# reads on {args.backend}: 1 worker, {args.clients} clients, {args.rounds} rounds x {args.seconds:g} s")
    print(f"before: {load_note()}")
    http = Http()
    paths = {"version": "/api/version", "load table": f"{tables_path('m', 'c', 's')}/t"}
    results: dict[str, list[LoadResult]] = {k: [] for k in paths}
    cpu_per_request: dict[str, list[float]] = {k: [] for k in paths}
    env = LOCK_ENV["LEASE_TABLE" if args.backend != "postgresql" else "AUTO"]
    with database(args.backend) as url, replicas(url, 1, env, workers=1, tag="reads-") as (server,):
        make_tree(http, server.url, "m", "c", ["s"])
        http.ok(server.url, "POST", tables_path("m", "c", "s"), table_body("t", columns=10))
        for path in paths.values():
            read_load(server.url, path, args.clients, 0.5)  # warm-up
        (worker,) = worker_pids(server)
        for _ in range(args.rounds):
            for kind, path in paths.items():
                cpu_before = cpu_seconds(worker)
                result = read_load(server.url, path, args.clients, args.seconds)
                results[kind].append(result)
                cpu_per_request[kind].append((cpu_seconds(worker) - cpu_before) / max(1, result.ops))
    print(f"after:  {load_note()}")
    ratios = [x.throughput / v.throughput for x, v in zip(results["load table"], results["version"], strict=True)]
    rows = [[kind, median([x.throughput for x in rs]), 1000 * median([pct(x.latencies, 0.5) for x in rs]),
             1000 * median([pct(x.latencies, 0.99) for x in rs]), 1000 * median(cpu_per_request[kind]),
             1 / median(cpu_per_request[kind]), sum(len(x.errors) for x in rs)]
            for kind, rs in results.items()]
    print()
    print(md_table(["endpoint", "req/s (1 worker)", "p50 ms", "p99 ms", "worker CPU ms/req",
                    "req/s per worker-core", "errors"], rows))
    print()
    ratio = median(ratios)
    print(f"load table / version: {ratio:.2f} ({verdict(ratio, TARGET, at_most=False)}); per round: "
          + ", ".join(f"{r:.2f}" for r in ratios))
    cpu_ratio = median(cpu_per_request["version"]) / median(cpu_per_request["load table"])
    print(f"by worker CPU per request (client-independent): {cpu_ratio:.2f} "
          f"({verdict(cpu_ratio, TARGET, at_most=False)})")


if __name__ == "__main__":
    main()
