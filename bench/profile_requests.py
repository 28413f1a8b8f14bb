"""Where a request's CPU goes: a per-request profile of table create, load, rename and drop, in one
process as in one gunicorn worker, for gravimeta (lock off / PG_ADVISORY / LEASE_TABLE, `memory` and
`sqlite` catalogs) and for the bare-stack ceiling (bench/bare_stack.py), on PostgreSQL.

    .venv/bin/python bench/profile_requests.py [--requests 750] [--modes off,PG_ADVISORY,LEASE_TABLE]
        [--providers memory,sqlite] [--variants off-memory,...] [--no-bare] [--out DIR] [--pyinstrument]

Each variant gets a fresh PostgreSQL database and its app built as `gravimeta serve` builds it in a
worker (create_app, request logs as JSON lines to a file, Prometheus in multiprocess mode). The
requests are WSGI calls on that app from this thread, `--requests` cycles of create x_i (3 columns) ->
load x_i -> rename x_i to y_i -> drop y_i, after a warm-up (pools, prepared statements, caches). Each
environ is built before the clock starts; the call and the reading of the response body are measured.
HTTP parsing and writing (gunicorn) are left out: they are the same for gravimeta and the bare stack.

All variants are built first, then three passes run over fresh tables:
1. unprofiled, the variants taking turns in batches of `--batch` cycles (so that a burst of load on the
   shared machine falls on all of them alike): this thread's CPU time (time.thread_time: the lease's
   heartbeat thread is not counted) and wall time per request, by kind, and the CPU time of the
   PostgreSQL backends of each variant's database (/proc/<pid>/stat) per cycle;
2. cProfile with the thread CPU clock, one profile per kind: self time summed by layer (the package or
   module of each function; C functions by what they belong to), and the inclusive time of the entry
   points that matter for phase 2 (routing, validation, DTOs, JSON, logging, ORM, Core, driver, claim,
   connector). cProfile adds a fixed cost per call, so call-heavy layers (the ORM, marshmallow) weigh
   more under it than they do unprofiled: the table gives both the profiled share and the profiled
   ms, next to the unprofiled total;
3. with `--pyinstrument` (pip install pyinstrument, or the `bench` extra): a sampled call tree per kind
   (wall clock, so database waits show as time in the statement that waits), written to `--out`.
`--out DIR` also keeps the pstats files (`python -m pstats DIR/<variant>-<kind>.pstats`).
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bare_stack  # noqa: E402
from benchlib import cpu_seconds, load_note, md_table  # noqa: E402
from werkzeug.test import EnvironBuilder  # noqa: E402

from connectors.sqlite import ROOT_ENV as SQLITE_ROOT_ENV  # noqa: E402
from tests.support.databases import fresh_database  # noqa: E402

KINDS = ("create", "load", "rename", "drop")
TABLES = "/api/metalakes/m/catalogs/c/schemas/s/tables"

# Layers by where a function lives: (label, substrings of its file path). First match wins; C functions
# (file "~") are matched by their description instead (see layer_of).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("gravimeta request log", ("gravimeta/api/request_log.py",)),
    ("gravimeta api: views, payloads, DTOs, errors", ("gravimeta/api/",)),
    ("gravimeta dispatch (+ journal)", ("gravimeta/dispatch/",)),
    ("gravimeta concurrency: tree lock, claim", ("gravimeta/concurrency/",)),
    ("gravimeta store", ("gravimeta/store/",)),
    ("gravimeta other (entities, failpoints, errors)", ("gravimeta/",)),
    ("connectors", ("connectors/",)),
    ("bare stack app", ("bench/bare_stack.py",)),
    ("marshmallow", ("marshmallow/",)),
    ("flask", ("flask/",)),
    ("werkzeug", ("werkzeug/",)),
    ("sqlalchemy orm", ("sqlalchemy/orm/",)),
    ("sqlalchemy core: sql, engine, pool", ("sqlalchemy/",)),
    ("psycopg (driver)", ("psycopg/", "psycopg_binary/", "psycopg_pool/")),
    ("prometheus_client", ("prometheus_client/",)),
    ("logging", ("/logging/",)),
    ("json", ("/json/",)),
    ("stdlib: copy", ("/copy.py",)),
    ("stdlib: dataclasses", ("/dataclasses.py",)),
    ("stdlib: contextlib, contextvars", ("/contextlib.py",)),
    ("stdlib: threading, queue", ("/threading.py", "/queue.py")),
    ("stdlib: uuid, datetime, re", ("/uuid.py", "/datetime.py", "/re/")),
    ("stdlib: typing, enum, abc, functools", ("/typing.py", "/enum.py", "/abc.py", "/functools.py")),
]
BUILTIN_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("psycopg (driver)", ("psycopg",)),
    ("json", ("json", "_json")),
    ("sqlalchemy core: sql, engine, pool", ("sqlalchemy",)),
    ("logging", ("write' of '_io", "flush' of '_io")),
    ("stdlib: copy", ("deepcopy",)),
]
# Inclusive time of the entry points phase 2 may change: (label, file substring, function name).
PROBES: list[tuple[str, str, str]] = [
    ("WSGI call, whole request (Flask.wsgi_app)", "flask/app.py", "wsgi_app"),
    ("routing (MapAdapter.match)", "werkzeug/routing/map.py", "match"),
    ("request JSON parse (json_body)", "gravimeta/api/requests.py", "json_body"),
    ("marshmallow load (payloads.load)", "gravimeta/api/payloads.py", "load"),
    ("marshmallow load of updates (payloads.load_updates)", "gravimeta/api/payloads.py", "load_updates"),
    ("entity -> DTO (dto.table)", "gravimeta/api/dto.py", "table"),
    ("response JSON (flask json response)", "flask/json/provider.py", "response"),
    ("request log (after_request _finish)", "gravimeta/api/request_log.py", "_finish"),
    ("request log (before_request _start)", "gravimeta/api/request_log.py", "_start"),
    ("logging: Logger.info", "logging/__init__.py", "info"),
    ("dispatcher create", "gravimeta/dispatch/tables.py", "create"),
    ("dispatcher alter", "gravimeta/dispatch/tables.py", "alter"),
    ("dispatcher drop", "gravimeta/dispatch/tables.py", "drop"),
    ("dispatcher load", "gravimeta/dispatch/tables.py", "load"),
    ("Coordinator.run_structural (claim + tree lock + work)", "gravimeta/concurrency/coordinator.py", "run_structural"),
    ("Reconciler.run (journal or one transaction)", "gravimeta/dispatch/journal.py", "run"),
    ("EntityStore.write (a write transaction)", "gravimeta/store/entity_store.py", "write"),
    ("EntityStore.load_table", "gravimeta/store/entity_store.py", "load_table"),
    ("ORM Session.flush", "sqlalchemy/orm/session.py", "flush"),
    ("ORM Session.execute", "sqlalchemy/orm/session.py", "execute"),
    ("ORM Session.scalar", "sqlalchemy/orm/session.py", "scalar"),
    ("ORM Session.commit", "sqlalchemy/orm/session.py", "commit"),
    ("Core Connection.execute", "sqlalchemy/engine/base.py", "execute"),
    ("Core Connection._execute_context", "sqlalchemy/engine/base.py", "_execute_context"),
    ("statement compile (ClauseElement._compile_w_cache)", "sqlalchemy/sql/elements.py", "_compile_w_cache"),
    ("pool checkout (Pool.connect)", "sqlalchemy/pool/base.py", "connect"),
    ("psycopg Cursor.execute", "psycopg/cursor.py", "execute"),
    ("psycopg Cursor.executemany", "psycopg/cursor.py", "executemany"),
    ("connector: memory", "connectors/memory.py", "*"),
    ("connector: sqlite catalog", "connectors/sqlite/connector.py", "*"),
    ("pg advisory guard", "gravimeta/concurrency/pg_advisory.py", "*"),
    ("lease claim/release", "gravimeta/concurrency/scope_lease.py", "*"),
    ("tree lock", "gravimeta/concurrency/tree_lock.py", "*"),
    ("prometheus metrics", "prometheus_client/", "*"),
]


def layer_of(func: tuple[str, int, str]) -> str:
    filename, _line, name = func
    if filename == "~":
        for label, needles in BUILTIN_LAYERS:
            if any(n in name for n in needles):
                return label
        return "C builtins (other)"
    path = filename.replace("\\", "/")
    for label, needles in LAYERS:
        if any(n in path for n in needles):
            return label
    return "other Python" if "site-packages" in path else "stdlib (other)"


@dataclass
class Variant:
    """One app under test: a name, the WSGI callable, and its fresh database's URL."""

    name: str
    app: Any
    url: str

    def db_cpu(self) -> float:
        """CPU seconds used so far by the PostgreSQL backends connected to this variant's database."""
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url
        from sqlalchemy.pool import NullPool

        database = make_url(self.url).database
        admin = create_engine(make_url(self.url).set(database="postgres"), poolclass=NullPool)
        try:
            with admin.connect() as conn:
                pids = list(conn.execute(text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = :d AND backend_type = 'client backend'"),
                    {"d": database}).scalars())
        finally:
            admin.dispose()
        total = 0.0
        for pid in pids:
            try:
                total += cpu_seconds(pid)
            except FileNotFoundError:  # ended meanwhile
                pass
        return total


@dataclass
class KindResult:
    cpu: list[float] = field(default_factory=list)   # this thread's CPU seconds per request (unprofiled)
    wall: list[float] = field(default_factory=list)
    profile: cProfile.Profile | None = None
    profiled_cpu: list[float] = field(default_factory=list)
    db_cpu: float = 0.0  # the database backends' CPU seconds over the unprofiled pass (all kinds)


def environ(method: str, path: str, body: Any = None) -> dict[str, Any]:
    return EnvironBuilder(path=path, method=method, json=body).get_environ()


def call(app: Any, env: dict[str, Any]) -> int:
    """One WSGI request, its body read as a server would; the status."""
    status: list[str] = []
    result = app(env, lambda s, _h, _e=None: status.append(s))
    try:
        for _chunk in result:
            pass
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(status[0].split()[0])


def cycle_requests(i: int, columns: int = 3) -> list[tuple[str, dict[str, Any]]]:
    cols = [{"name": f"c{k}", "type": "integer", "comment": "", "nullable": True} for k in range(columns)]
    return [
        ("create", environ("POST", TABLES, {"name": f"x{i}", "comment": "", "properties": {}, "columns": cols})),
        ("load", environ("GET", f"{TABLES}/x{i}")),
        ("rename", environ("PUT", f"{TABLES}/x{i}", {"updates": [{"@type": "rename", "newName": f"y{i}"}]})),
        ("drop", environ("DELETE", f"{TABLES}/y{i}")),
    ]


def setup_tree(app: Any, provider: str, properties: dict[str, str]) -> None:
    for method, path, body in [
        ("POST", "/api/metalakes", {"name": "m", "comment": "", "properties": {}}),
        ("POST", "/api/metalakes/m/catalogs",
         {"name": "c", "type": "relational", "provider": provider, "comment": "", "properties": properties}),
        ("POST", "/api/metalakes/m/catalogs/c/schemas", {"name": "s", "comment": "", "properties": {}}),
    ]:
        status = call(app, environ(method, path, body))
        assert status == 200, (method, path, status)


def run_pass(variant: Variant, first: int, count: int, results: dict[str, KindResult], profiled: bool) -> None:
    for i in range(first, first + count):
        for kind, env in cycle_requests(i):
            r = results[kind]
            if profiled:
                assert r.profile is not None
                c0 = time.thread_time()
                r.profile.enable()
                status = call(variant.app, env)
                r.profile.disable()
                r.profiled_cpu.append(time.thread_time() - c0)
            else:
                c0, w0 = time.thread_time(), time.perf_counter()
                status = call(variant.app, env)
                r.cpu.append(time.thread_time() - c0)
                r.wall.append(time.perf_counter() - w0)
            if status != 200:
                raise RuntimeError(f"{variant.name} {kind} x{i}: HTTP {status}")


def measure(variants: list[Variant], requests: int, warm_up: int, batch: int, out: Path | None,
            pyinstrument: bool, profiled: bool = True) -> dict[str, dict[str, KindResult]]:
    """The passes over all variants. The unprofiled pass interleaves them in batches of `batch` cycles
    (rotated), so that a burst of load on the shared machine falls on all of them alike; the profiled
    passes (shares, not totals) run one variant after the other."""
    results = {v.name: {k: KindResult(profile=cProfile.Profile(time.thread_time)) for k in KINDS} for v in variants}
    for v in variants:
        run_pass(v, 0, warm_up, {k: KindResult() for k in KINDS}, profiled=False)
    for b, start in enumerate(range(0, requests, batch)):
        for v in variants[b % len(variants):] + variants[:b % len(variants)]:
            before = v.db_cpu()
            run_pass(v, 10_000 + start, min(batch, requests - start), results[v.name], profiled=False)
            results[v.name]["create"].db_cpu += v.db_cpu() - before
    for v in variants if profiled else []:
        run_pass(v, 20_000, requests, results[v.name], profiled=True)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for kind, r in results[v.name].items():
                assert r.profile is not None
                r.profile.dump_stats(str(out / f"{v.name}-{kind}.pstats"))
        if pyinstrument:
            sampled_trees(v, min(requests, 200), out or Path(tempfile.mkdtemp(prefix="gm-profile-")))
    return results


def sampled_trees(variant: Variant, count: int, out: Path) -> None:
    """pyinstrument call trees (wall clock) per kind: one profiler per kind, started and stopped around
    each of its requests."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        raise SystemExit("--pyinstrument needs pyinstrument: .venv/bin/pip install -e '.[bench]'") from None
    profilers = {k: Profiler(interval=0.0002) for k in KINDS}
    for i in range(30_000, 30_000 + count):
        for kind, env in cycle_requests(i):
            profilers[kind].start()
            call(variant.app, env)
            profilers[kind].stop()
    for kind, profiler in profilers.items():
        (out / f"{variant.name}-{kind}.txt").write_text(profiler.output_text(unicode=False, color=False))
        (out / f"{variant.name}-{kind}.html").write_text(profiler.output_html())
    print(f"pyinstrument trees of {variant.name}: {out}/{variant.name}-<kind>.txt|html")


# ----------------------------------------------------------------------------- variants


@contextmanager
def gravimeta_variant(mode: str, provider: str, log_file: Path) -> Iterator[Variant]:
    from gravimeta.api.request_log import configure_json_lines
    from gravimeta.app import create_app
    from gravimeta.config import load_settings

    configure_json_lines(log_file.open("a"))  # one JSON line per request, as `serve` writes to its log
    with tempfile.TemporaryDirectory(prefix="gm-profile-") as tmp, fresh_database("postgresql", Path(tmp)) as url:
        settings = load_settings(environ={}, store_url=url, distributed_lock_enabled=mode != "off",
                                 distributed_lock_backend=None if mode == "off" else mode)
        app = create_app(settings)
        services = app.extensions["gravimeta"]
        properties = {"path": f"profile-{mode}-{os.getpid()}.db"} if provider == "sqlite" else {}
        setup_tree(app, provider, properties)
        try:
            yield Variant(f"{mode}-{provider}", app, url)
        finally:
            heartbeat = getattr(getattr(services.coordinator, "runtime", None), "heartbeat", None)
            if heartbeat is not None:
                heartbeat.stop()
            services.store.engine.dispose()


@contextmanager
def bare_variant() -> Iterator[Variant]:
    with tempfile.TemporaryDirectory(prefix="gm-profile-") as tmp, fresh_database("postgresql", Path(tmp)) as url:
        app = bare_stack.create_app(url)
        setup_tree(app, "memory", {})
        try:
            yield Variant("bare", app, url)
        finally:
            app.extensions["bare_stack"].dispose()


# ----------------------------------------------------------------------------- report


def per_request_ms(values: list[float]) -> float:
    return 1000 * statistics.mean(values) if values else float("nan")


def self_time_by_layer(r: KindResult) -> dict[str, float]:
    """Self CPU seconds (under cProfile, all requests of the pass) summed by layer."""
    assert r.profile is not None
    by_layer: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(r.profile).stats.items():  # type: ignore[attr-defined]
        by_layer[layer_of(func)] += tottime
    return by_layer


def estimated_ms(r: KindResult) -> dict[str, float]:
    """Each layer's share of the profiled self time, times the unprofiled CPU per request: an estimate of
    its unprofiled ms per request (cProfile's per-call cost inflates call-heavy layers somewhat)."""
    by_layer = self_time_by_layer(r)
    total = sum(by_layer.values()) or 1.0
    unprofiled = per_request_ms(r.cpu)
    return {layer: unprofiled * t / total for layer, t in by_layer.items()}


def layer_table(results: dict[str, KindResult]) -> str:
    """Self CPU by layer: % of the profiled total, per kind."""
    shares: dict[str, dict[str, float]] = defaultdict(dict)
    for kind, r in results.items():
        by_layer = self_time_by_layer(r)
        total = sum(by_layer.values()) or 1.0
        for layer, t in by_layer.items():
            shares[layer][kind] = 100 * t / total
    ordered = sorted(shares, key=lambda layer: -sum(shares[layer].values()))
    rows = [[layer, *(f"{shares[layer].get(k, 0):.1f}" for k in KINDS)] for layer in ordered
            if max(shares[layer].values()) >= 0.5]
    return md_table(["layer (self CPU, % of profiled)", *KINDS], rows)


def comparison_table(kind: str, estimates: dict[str, dict[str, dict[str, float]]]) -> str:
    """Estimated unprofiled ms per request by layer, one column per variant, for one kind."""
    names = list(estimates)
    layers: dict[str, float] = defaultdict(float)
    for name in names:
        for layer, ms in estimates[name][kind].items():
            layers[layer] = max(layers[layer], ms)
    rows = [[layer, *(f"{estimates[n][kind].get(layer, 0):.2f}" for n in names)]
            for layer in sorted(layers, key=lambda x: -layers[x]) if layers[layer] >= 0.05]
    rows.append(["total (unprofiled CPU ms/request)", *(f"{sum(estimates[n][kind].values()):.2f}" for n in names)])
    return md_table([f"{kind}: layer, est. ms/request", *names], rows)


def probe_table(results: dict[str, KindResult], requests: int) -> str:
    """Inclusive CPU (ms per request, profiled) of the entry points, per kind."""
    cells: dict[str, dict[str, float]] = defaultdict(dict)
    for kind, r in results.items():
        assert r.profile is not None
        stats = pstats.Stats(r.profile).stats  # type: ignore[attr-defined]
        for label, file_part, name in PROBES:
            if name == "*":  # everything in that file: its self time
                total = sum(v[2] for f, v in stats.items() if file_part in f[0].replace("\\", "/"))
            else:
                total = sum(v[3] for f, v in stats.items() if file_part in f[0].replace("\\", "/") and f[2] == name)
            if total:
                cells[label][kind] = 1000 * total / requests
    rows = [[label, *(f"{cells[label][k]:.3f}" if k in cells[label] else "" for k in KINDS)]
            for label, _f, _n in PROBES if label in cells]
    return md_table(["entry point (inclusive CPU ms/request, profiled; `*`: self time of the file)", *KINDS], rows)


def calls_per_request(results: dict[str, KindResult], requests: int) -> str:
    rows = []
    for kind, r in results.items():
        assert r.profile is not None
        stats = pstats.Stats(r.profile)
        rows.append([kind, stats.total_calls / requests, stats.prim_calls / requests])  # type: ignore[attr-defined]
    return md_table(["kind", "Python/C function calls per request", "primitive calls"], rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=750, help="cycles (create, load, rename, drop) per pass")
    parser.add_argument("--warm-up", type=int, default=30, help="cycles before the passes")
    parser.add_argument("--batch", type=int, default=25, help="cycles per variant in turn in the unprofiled pass")
    parser.add_argument("--modes", default="off,PG_ADVISORY,LEASE_TABLE")
    parser.add_argument("--providers", default="memory,sqlite")
    parser.add_argument("--variants", default="", help="instead of --modes x --providers: e.g. off-memory,LEASE_TABLE-sqlite")
    parser.add_argument("--no-bare", action="store_true", help="do not profile the bare stack")
    parser.add_argument("--out", type=Path, help="keep pstats (and pyinstrument trees) here")
    parser.add_argument("--pyinstrument", action="store_true", help="also sampled call trees (needs pyinstrument)")
    parser.add_argument("--unprofiled-only", action="store_true", help="only pass 1 (CPU and wall per request)")
    args = parser.parse_args(argv)
    if "prometheus_client" not in sys.modules:  # multiprocess mode, as `serve` sets it up for its workers
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="gm-profile-metrics-"))
    os.environ.setdefault(SQLITE_ROOT_ENV, tempfile.mkdtemp(prefix="gm-profile-sqlite-"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        filename=os.devnull)  # as `gravimeta` sets it up (its other logs are rare)
    log_file = Path(tempfile.mkdtemp(prefix="gm-profile-log-")) / "requests.log"
    print(f"# per-request profile: {args.requests} cycles per pass (create, load, rename, drop), one thread")
    print(f"before: {load_note()}")
    variants: list[tuple[str, Callable[[], Any]]] = []
    if not args.no_bare:
        variants.append(("bare", bare_variant))
    pairs = ([tuple(v.rsplit("-", 1)) for v in args.variants.split(",")] if args.variants else
             [(m, p) for p in args.providers.split(",") for m in args.modes.split(",")])
    for mode, provider in pairs:
        variants.append((f"{mode}-{provider}", lambda m=mode, p=provider: gravimeta_variant(m, p, log_file)))
    summary: list[list[object]] = []
    estimates: dict[str, dict[str, dict[str, float]]] = {}
    with ExitStack() as stack:
        built = [stack.enter_context(make()) for _name, make in variants]
        all_results = measure(built, args.requests, args.warm_up, args.batch, args.out, args.pyinstrument,
                              profiled=not args.unprofiled_only)
    if args.unprofiled_only:
        print(md_table(["variant", *(f"{k}: CPU ms (wall ms)" for k in KINDS), "database CPU ms per cycle"],
                       [[name, *(f"{per_request_ms(r[k].cpu):.2f} ({per_request_ms(r[k].wall):.1f})" for k in KINDS),
                         1000 * r["create"].db_cpu / args.requests] for name, r in all_results.items()]))
        print(f"after: {load_note()}")
        return
    print(f"after the passes: {load_note()}")
    for name, results in all_results.items():
        print(f"\n## {name}\n")
        print(md_table(["kind", "CPU ms/request (unprofiled)", "wall ms/request", "CPU ms/request under cProfile"],
                       [[k, per_request_ms(r.cpu), per_request_ms(r.wall), per_request_ms(r.profiled_cpu)]
                        for k, r in results.items()]))
        print()
        print(calls_per_request(results, args.requests))
        print()
        print(layer_table(results))
        print()
        print(probe_table(results, args.requests))
        summary.append([name, *(per_request_ms(results[k].cpu) for k in KINDS),
                        1000 * results["create"].db_cpu / args.requests])
        estimates[name] = {k: estimated_ms(results[k]) for k in KINDS}
    print("\n## CPU ms per request, unprofiled (this thread)\n")
    print(md_table(["variant", *KINDS, "database backends' CPU ms per cycle (all four)"], summary))
    for kind in KINDS:
        print(f"\n## {kind}: where the CPU goes, by variant (est. unprofiled ms per request)\n")
        print(comparison_table(kind, estimates))
    print(f"\nafter: {load_note()}")


if __name__ == "__main__":
    main()
