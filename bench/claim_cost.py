"""The cost of a cross-node claim, measured side by side in one run: statements and latency per
structural operation with the distributed lock off and with each backend, on each database.

    .venv/bin/python bench/claim_cost.py [--iterations 30] [--backends sqlite,postgresql,mysql]

Uncontended, one process, loopback databases: this is the fixed price of claiming, not contention.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gravimeta.app import build_services  # noqa: E402
from gravimeta.config import load_settings  # noqa: E402
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table  # noqa: E402
from tests.support.databases import backend_available, fresh_database  # noqa: E402

MODES = {"sqlite": ["off", "LEASE_TABLE"], "mysql": ["off", "LEASE_TABLE"],
         "postgresql": ["off", "LEASE_TABLE", "PG_ADVISORY", "AUTO"]}


def operations(d, m):  # type: ignore[no-untyped-def]
    return [
        ("create metalake", lambda: d.metalakes.create(Metalake(m), "u")),
        ("create catalog", lambda: d.catalogs.create(Catalog(m, "c", "relational", "memory"), "u")),
        ("create schema", lambda: d.schemas.create(m, "c", Schema("s"), "u")),
        ("create table", lambda: d.tables.create(m, "c", "s", Table("t", [Column("id", "integer")]), "u")),
        ("drop table", lambda: d.tables.drop(m, "c", "s", "t")),
        ("drop schema", lambda: d.schemas.drop(m, "c", "s", cascade=False)),
        ("drop catalog", lambda: d.catalogs.drop(m, "c", force=True)),
        ("drop metalake", lambda: d.metalakes.drop(m, force=True)),
    ]


def measure(url: str, mode: str, iterations: int) -> dict[str, tuple[float, float]]:
    """op -> (statements per op, median ms per op)."""
    settings = load_settings(environ={}, store_url=url, distributed_lock_enabled=mode != "off",
                             distributed_lock_backend=None if mode == "off" else mode)
    services = build_services(settings)
    me, statements = threading.get_ident(), [0]

    def on_execute(*_args: object) -> None:
        if threading.get_ident() == me:
            statements[0] += 1

    event.listen(services.store.engine, "before_cursor_execute", on_execute)
    samples: dict[str, list[tuple[int, float]]] = {}
    for i in range(iterations + 3):
        for name, op in operations(services.dispatchers, f"{mode.lower()}{i}"):
            before, started = statements[0], time.perf_counter()
            op()
            if i >= 3:  # warm-up: pools, anchor rows, caches
                samples.setdefault(name, []).append((statements[0] - before, time.perf_counter() - started))
    services.coordinator.runtime.heartbeat.stop()
    services.store.engine.dispose()
    return {name: (statistics.mean(s for s, _ in v), 1000 * statistics.median(t for _, t in v))
            for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--backends", default="sqlite,postgresql,mysql")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if not backend_available(backend):
            print(f"{backend}: not reachable, skipped")
            continue
        results = {}
        for mode in MODES[backend]:
            with fresh_database(backend, Path(tempfile.mkdtemp())) as url:
                results[mode] = measure(url, mode, args.iterations)
        modes = MODES[backend]
        print(f"\n{backend}: statements / median ms per structural operation ({args.iterations} runs each)")
        print(f"{'operation':<16}" + "".join(f"{m:>24}" for m in modes))
        for op in results["off"]:
            cells = []
            for m in modes:
                stmts, ms = results[m][op]
                base = results["off"][op][1]
                cells.append(f"{stmts:5.1f} st {ms:6.2f} ms x{ms / base:4.1f}")
            print(f"{op:<16}" + "".join(f"{c:>24}" for c in cells))
        for m in modes[1:]:
            extra = statistics.mean(results[m][op][0] - results["off"][op][0] for op in results["off"])
            added = statistics.mean(results[m][op][1] - results["off"][op][1] for op in results["off"])
            print(f"  {m}: +{extra:.1f} statements, +{added:.2f} ms per structural operation on average")


if __name__ == "__main__":
    main()
