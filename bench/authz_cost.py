"""What the door costs a read: load-table requests per second and worker CPU per request with
gravitino.authorization.enable=true, as a service admin (the door decides without reading anything)
and as a user whose right to read comes from a role (the door reads the caller's membership, roles,
privileges and the owners of metalake, catalog, schema and table: one snapshot transaction).

    .venv/bin/python bench/authz_cost.py [--quick] [--rounds 6] [--seconds 3] [--clients 4] [--backend postgresql]

One replica with ONE gunicorn worker (4 threads), a table with 10 columns; rounds alternate the two
callers with `clients` closed-loop keep-alive clients. Printed: req/s, latencies, worker CPU per
request, and the ratio user/admin of each (by throughput and by worker CPU, which does not depend on
the clients that share the cores).
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
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
    worker_pids,
)

ENV = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": "admin"}


def basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:x".encode()).decode()}


def read_load(http: Http, base: str, path: str, clients: int, seconds: float) -> LoadResult:
    def work(_i: int, call: Call) -> None:
        more = until(seconds)
        while more():
            call(base, "GET", path)

    return run_clients(clients, work, http)


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
    print(f"# the door's cost on {args.backend}: 1 worker, {args.clients} clients, {args.rounds} rounds x "
          f"{args.seconds:g} s")
    print(f"before: {load_note()}")
    callers = {"service admin": Http(basic("admin")), "user with a role": Http(basic("bob"))}
    admin = callers["service admin"]
    path = f"{tables_path('m', 'c', 's')}/t"
    results: dict[str, list[LoadResult]] = {k: [] for k in callers}
    cpu_per_request: dict[str, list[float]] = {k: [] for k in callers}
    with database(args.backend) as url, replicas(url, 1, ENV, workers=1, tag="authz-") as (server,):
        make_tree(admin, server.url, "m", "c", ["s"])
        admin.ok(server.url, "POST", tables_path("m", "c", "s"), table_body("t", columns=10))
        admin.ok(server.url, "POST", "/api/metalakes/m/users", {"name": "bob"})
        privileges = [{"name": p, "condition": "allow"} for p in ("USE_CATALOG", "USE_SCHEMA", "SELECT_TABLE")]
        admin.ok(server.url, "POST", "/api/metalakes/m/roles", {"name": "readers", "securableObjects": [
            {"fullName": "c", "type": "catalog", "privileges": privileges}]})
        admin.ok(server.url, "PUT", "/api/metalakes/m/permissions/users/bob/grant", {"roleNames": ["readers"]})
        for http in callers.values():
            http.ok(server.url, "GET", path)
            read_load(http, server.url, path, args.clients, 0.5)  # warm-up
        (worker,) = worker_pids(server)
        for _ in range(args.rounds):
            for kind, http in callers.items():
                cpu_before = cpu_seconds(worker)
                result = read_load(http, server.url, path, args.clients, args.seconds)
                results[kind].append(result)
                cpu_per_request[kind].append((cpu_seconds(worker) - cpu_before) / max(1, result.ops))
    print(f"after:  {load_note()}")
    rows = [[kind, median([x.throughput for x in rs]), 1000 * median([pct(x.latencies, 0.5) for x in rs]),
             1000 * median([pct(x.latencies, 0.99) for x in rs]), 1000 * median(cpu_per_request[kind]),
             sum(len(x.errors) for x in rs)]
            for kind, rs in results.items()]
    print()
    print(md_table(["load table as", "req/s (1 worker)", "p50 ms", "p99 ms", "worker CPU ms/req", "errors"], rows))
    print()
    user, admin_kind = "user with a role", "service admin"
    ratios = [u.throughput / a.throughput for u, a in zip(results[user], results[admin_kind], strict=True)]
    print(f"throughput user/admin: {median(ratios):.2f}; per round: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"worker CPU per request user/admin: {median(cpu_per_request[user]) / median(cpu_per_request[admin_kind]):.2f}")


if __name__ == "__main__":
    main()
