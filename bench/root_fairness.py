"""Root claims under a churn: metalake creates (root claims) while six clients churn schemas in m1, under
LEASE_TABLE, with the waiting root claim's hold-back and without it (GRAVIMETA_HA_DISABLE=root_hold_back),
side by side.

    .venv/bin/python bench/root_fairness.py [--backend postgresql|mysql|sqlite] [--rounds 4] [--seconds 10]
                                            [--churners 6] [--timeout-ms 5000] [--root-every 1.0]

Per mode: two gunicorn replicas (2 workers x 4 threads) on a fresh database, claim timeout `timeout-ms`.
In each round (the modes interleaved: hold-back, none, none, hold-back, ...) `churners` clients create
and drop schemas in m1, each in its own catalog (their claims, on /m1/c<i>, are unrelated and overlap:
some claim in m1 is live nearly all the time), through both replicas in turn, for `seconds`; one more client creates a metalake (a root claim on '/') every
`root-every` seconds meanwhile (0: one after the other, the worst case for the churn). Reported per mode: how many metalake creates answered 200 and 503, their
latency, and the churn's throughput and p99; per round, the churn's throughput and p99 with the hold-back
over without (the cost of holding ordinary claims back while a root claim drains the tree).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    LOCK_ENV,
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
    until,
)

MODES = {"hold-back": {}, "no hold-back": {"GRAVIMETA_HA_DISABLE": "root_hold_back"}}


def one_round(bases: list[str], churners: int, seconds: float, root_every: float, tag: str) -> LoadResult:
    """Client 0 creates a metalake every `root_every` seconds (kind 'root'); the others churn schemas in m1."""
    done = until(seconds)

    def work(i: int, call) -> None:  # type: ignore[no-untyped-def]
        n = 0
        while done():
            n += 1
            base = bases[(i + n) % len(bases)]
            if i == 0:
                sent = time.perf_counter()
                call(base, "POST", "/api/metalakes", {"name": f"root_{tag}_{n}", "properties": {}}, kind="root")
                time.sleep(max(0.0, root_every - (time.perf_counter() - sent)))  # pacing, not synchronisation
                continue
            schema = f"s_{tag}_{n}"
            if call(base, "POST", f"/api/metalakes/m1/catalogs/c{i}/schemas", {"name": schema, "properties": {}},
                    kind="churn"):
                call(base, "DELETE", f"/api/metalakes/m1/catalogs/c{i}/schemas/{schema}?cascade=true", kind="churn")

    return run_clients(churners + 1, work)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--churners", type=int, default=6)
    parser.add_argument("--timeout-ms", type=int, default=5000)
    parser.add_argument("--root-every", type=float, default=1.0, help="seconds between metalake creates (0: back to back)")
    args = parser.parse_args(argv)
    env = {**LOCK_ENV["LEASE_TABLE"], "GRAVIMETA_CLAIM_TIMEOUT_MS": str(args.timeout_ms)}
    results: dict[str, list[LoadResult]] = {mode: [] for mode in MODES}
    with ExitStack() as stack:
        bases: dict[str, list[str]] = {}
        for mode, extra in MODES.items():
            url = stack.enter_context(database(args.backend))
            servers = stack.enter_context(replicas(url, 2, {**env, **extra}, workers=2, tag=f"fair-{len(bases)}-"))
            bases[mode] = [s.url for s in servers]
            http = Http()
            make_tree(http, bases[mode][0], "m1", "c1", [])
            for i in range(2, args.churners + 1):
                http.ok(bases[mode][0], "POST", "/api/metalakes/m1/catalogs",
                        {"name": f"c{i}", "type": "relational", "provider": "memory", "properties": {}})
        order = list(MODES)
        for r in range(args.rounds):
            for mode in order if r % 2 == 0 else reversed(order):
                results[mode].append(one_round(bases[mode], args.churners, args.seconds, args.root_every,
                                               uuid.uuid4().hex[:6]))
    print(f"# Root claims under a churn ({args.backend}, LEASE_TABLE, claim timeout {args.timeout_ms} ms, "
          f"{args.churners} churners, a metalake create every {args.root_every:g} s, {args.rounds} rounds x "
          f"{args.seconds:g} s)\n")
    print(load_note() + "\n")
    rows = []
    for mode, runs in results.items():
        roots = [t for run in runs for t in run.by_kind.get("root", [])]
        busy = sum(1 for run in runs for e in run.errors if "/api/metalakes:" in e and "HTTP 503" in e)
        other = sum(1 for run in runs for e in run.errors if "/api/metalakes:" in e and "HTTP 503" not in e)
        churn = [t for run in runs for t in run.by_kind.get("churn", [])]
        churn_errors = sum(1 for run in runs for e in run.errors if "/schemas" in e)
        churn_rate = median([len(run.by_kind.get("churn", [])) / run.wall for run in runs])
        rows.append([mode, f"{len(roots)} / {busy} / {other}",
                     f"{pct(roots, 0.5) * 1000:.0f} / {max(roots, default=float('nan')) * 1000:.0f}",
                     f"{churn_rate:.1f}", f"{pct(churn, 0.5) * 1000:.1f} / {pct(churn, 0.99) * 1000:.0f}", churn_errors])
    print(md_table(["mode", "metalake creates 200 / 503 / other", "their p50 / max (ms)", "churn ops/s (median)",
                    "churn p50 / p99 (ms)", "churn errors"], rows))
    ratios = []
    for held, free in zip(results["hold-back"], results["no hold-back"], strict=True):
        held_churn, free_churn = held.by_kind.get("churn", []), free.by_kind.get("churn", [])
        ratios.append((len(held_churn) / held.wall / (len(free_churn) / free.wall),
                       pct(held_churn, 0.99) / pct(free_churn, 0.99)))
    print()
    for mode, runs in results.items():
        seen = sorted({e.split(": ", 1)[1][:120] for run in runs for e in run.errors})
        if seen:
            print(f"{mode}: errors seen: " + "; ".join(seen[:4]))
    print()
    print(md_table(["churn with hold-back / without", "median over rounds", "rounds"], [
        ["throughput", f"{median([t for t, _ in ratios]):.2f}", ", ".join(f"{t:.2f}" for t, _ in ratios)],
        ["p99", f"{median([p for _, p in ratios]):.2f}", ", ".join(f"{p:.2f}" for _, p in ratios)],
    ]))


if __name__ == "__main__":
    main()
