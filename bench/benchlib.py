"""Shared helpers for the bench/ scripts: real gunicorn replicas on fresh databases, a keep-alive HTTP
client, closed-loop load from threads, percentiles, interleaved rounds and markdown tables.

Every script measures its variants side by side in one run, interleaved round by round (A B C A B C ...),
and reports ratios and medians over the rounds: absolute numbers on a shared 2-core machine are noisy.
All traffic goes to 127.0.0.1; every server process is stopped in a `finally`.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy.engine import make_url  # noqa: E402

from tests.support.databases import backend_available, fresh_database  # noqa: E402
from tests.support.servers import ServerProcess  # noqa: E402

LOCK_ENV = {
    "off": {"GRAVIMETA_DISTRIBUTED_LOCK": "false"},
    "LEASE_TABLE": {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE"},
    # the lease with its claim/release commits waiting for the WAL flush, as before that was turned off
    "LEASE_TABLE durable": {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
                            "GRAVIMETA_DURABLE_CLAIMS": "true"},
    "PG_ADVISORY": {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "PG_ADVISORY"},
    "AUTO": {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "AUTO"},
}
LOG_DIR = Path(tempfile.gettempdir()) / "gravimeta-bench"


# ----------------------------------------------------------------------------- reporting


def load_note() -> str:
    """How busy the machine is (other work shares these 2 cores): say it next to every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(value: float, target: float, at_most: bool = True) -> str:
    ok = value <= target if at_most else value >= target
    return f"{'meets' if ok else 'MISSES'} target {'<=' if at_most else '>='} {target:g}"


# ----------------------------------------------------------------------------- HTTP


class Http:
    """A keep-alive HTTP/1.1 connection per (thread, server): the client's own cost stays small."""

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        self._local = threading.local()
        self.headers = dict(headers or {})  # sent with every request (e.g. Authorization)

    def _conn(self, base: str) -> http.client.HTTPConnection:
        conns = self._local.__dict__.setdefault("conns", {})
        if base not in conns:
            host, port = base.removeprefix("http://").split(":")
            conns[base] = http.client.HTTPConnection(host, int(port), timeout=60)
        return conns[base]

    def request(self, base: str, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        """(status, decoded JSON body, seconds). Retries once on a connection the server closed."""
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if data is not None else {})}
        for attempt in (0, 1):
            conn = self._conn(base)
            started = time.perf_counter()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self._local.conns.pop(base, None)
                if attempt:
                    raise
                continue
            elapsed = time.perf_counter() - started
            return resp.status, (json.loads(raw) if raw else None), elapsed
        raise AssertionError("unreachable")

    def ok(self, base: str, method: str, path: str, body: Any = None) -> Any:
        status, payload, _ = self.request(base, method, path, body)
        if status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {payload}")
        return payload


def table_body(name: str, columns: int = 3) -> dict[str, Any]:
    return {"name": name, "columns": [{"name": f"c{i}", "type": "integer"} for i in range(columns)]}


def rename_body(new_name: str) -> dict[str, Any]:
    return {"updates": [{"@type": "rename", "newName": new_name}]}


def make_tree(http: Http, base: str, metalake: str, catalog: str, schemas: Sequence[str],
              provider: str = "memory", properties: dict[str, str] | None = None) -> None:
    """metalake > catalog (memory provider unless told) > schemas, through the API."""
    http.ok(base, "POST", "/api/metalakes", {"name": metalake, "properties": {}})
    http.ok(base, "POST", f"/api/metalakes/{metalake}/catalogs",
            {"name": catalog, "type": "relational", "provider": provider, "properties": properties or {}})
    for s in schemas:
        http.ok(base, "POST", f"/api/metalakes/{metalake}/catalogs/{catalog}/schemas", {"name": s, "properties": {}})


def tables_path(m: str, c: str, s: str) -> str:
    return f"/api/metalakes/{m}/catalogs/{c}/schemas/{s}/tables"


# ----------------------------------------------------------------------------- load


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests only
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0

    @property
    def ops(self) -> int:
        return len(self.latencies)

    @property
    def throughput(self) -> float:
        return self.ops / self.wall if self.wall else float("nan")


Call = Callable[..., bool]


def run_clients(clients: int, work: Callable[[int, Call], None], http: Http | None = None) -> LoadResult:
    """Run `work(client_index, call)` in `clients` threads at once; `call(base, method, path, body=None,
    kind="")` issues one request, records its latency under `kind` (or its error) and says whether it
    succeeded. Returns the pooled result. `http`: the connections to use (their headers), a new Http
    by default."""
    http = http or Http()
    result = LoadResult()
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def call(base: str, method: str, path: str, body: Any = None, kind: str = "") -> bool:
        try:
            status, payload, elapsed = http.request(base, method, path, body)
        except Exception as exc:  # a dead connection is an error of the run, not of the bench
            with lock:
                result.errors.append(f"{method} {path}: {exc!r}")
            return False
        with lock:
            if status == 200:
                result.latencies.append(elapsed)
                result.by_kind.setdefault(kind, []).append(elapsed)
            else:
                result.errors.append(f"{method} {path}: HTTP {status} {str(payload)[:200]}")
        return status == 200

    def runner(i: int) -> None:
        start.wait()
        work(i, call)

    threads = [threading.Thread(target=runner, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join(timeout=300)
    result.wall = time.perf_counter() - began
    return result


def until(deadline_s: float) -> Callable[[], bool]:
    """A loop condition: True until `deadline_s` seconds from now."""
    end = time.perf_counter() + deadline_s
    return lambda: time.perf_counter() < end


# ----------------------------------------------------------------------------- servers


@contextmanager
def database(backend: str = "postgresql") -> Iterator[str]:
    if not backend_available(backend):
        raise SystemExit(f"{backend} is not reachable on 127.0.0.1; nothing measured")
    with fresh_database(backend, Path(tempfile.mkdtemp(prefix="gm-bench-"))) as url:
        yield url


@contextmanager
def replicas(store_url: str, count: int, env: dict[str, str], workers: int = 2, tag: str = "r") -> Iterator[list[ServerProcess]]:
    """`count` gunicorn replicas on one database, all stopped (process group killed) on the way out."""
    LOG_DIR.mkdir(exist_ok=True)
    with ExitStack() as stack:
        servers = []
        for i in range(count):
            server = ServerProcess(store_url, workers=workers, env=dict(env), log_path=LOG_DIR / f"{tag}{i}.log")
            stack.callback(server.stop)  # registered before start: a half-started one is stopped too
            servers.append(server.start(timeout=60))
        yield servers


def worker_pids(server: ServerProcess) -> list[int]:
    """The gunicorn worker processes of one replica (children of its master)."""
    assert server.process is not None
    master = server.process.pid
    found = []
    for task in Path(f"/proc/{master}/task").iterdir():
        children = (task / "children").read_text().split()
        found.extend(int(p) for p in children)
    return sorted(found)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def hwm_mb(pid: int) -> float:
    """Peak resident set size of the process so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ----------------------------------------------------------------------------- the bare-stack ceiling


class BareServerProcess(ServerProcess):
    """The bare-stack ceiling (bench/bare_stack.py) served like a gravimeta replica: same gunicorn
    worker class, workers, threads and timeouts."""

    def start(self, timeout: float = 30.0) -> BareServerProcess:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve().parent / "bare_stack.py"), "--store-url", self.store_url,
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers)],
            env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.wait_ready(timeout)
        return self


@contextmanager
def bare_replicas(store_url: str, count: int, workers: int = 2, tag: str = "bare") -> Iterator[list[ServerProcess]]:
    """`count` bare-stack servers on one database (migrated by gravimeta's migrations), stopped on the
    way out."""
    LOG_DIR.mkdir(exist_ok=True)
    with ExitStack() as stack:
        servers: list[ServerProcess] = []
        for i in range(count):
            server = BareServerProcess(store_url, workers=workers, log_path=LOG_DIR / f"{tag}{i}.log")
            stack.callback(server.stop)
            servers.append(server.start(timeout=60))
        yield servers


class CpuMeter:
    """CPU seconds used so far by one server's gunicorn workers and by the PostgreSQL backends connected
    to its database (/proc/<pid>/stat; the bench runs on the database's machine). Take `snapshot()`
    before and after a slice; `used(before, after)` gives (workers, database) CPU seconds in between.
    A backend that ended during the slice is not counted (the pools keep theirs open)."""

    def __init__(self, server: ServerProcess):
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        self.server, self.database = server, make_url(server.store_url).database
        self._admin = create_engine(make_url(server.store_url).set(database="postgres"), poolclass=NullPool)

    def _backends(self) -> list[int]:
        from sqlalchemy import text

        with self._admin.connect() as conn:
            return list(conn.execute(text(
                "SELECT pid FROM pg_stat_activity WHERE datname = :d AND backend_type = 'client backend'"),
                {"d": self.database}).scalars())

    def snapshot(self) -> tuple[dict[int, float], dict[int, float]]:
        return _cpu_of(worker_pids(self.server)), _cpu_of(self._backends())

    @staticmethod
    def used(before: tuple[dict[int, float], dict[int, float]],
             after: tuple[dict[int, float], dict[int, float]]) -> tuple[float, float]:
        return tuple(sum(t - b.get(pid, 0.0) for pid, t in a.items()) for b, a in zip(before, after, strict=True))  # type: ignore[return-value]

    def close(self) -> None:
        self._admin.dispose()


def _cpu_of(pids: list[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        try:
            found[pid] = cpu_seconds(pid)
        except (FileNotFoundError, ProcessLookupError):  # ended meanwhile
            pass
    return found


# ----------------------------------------------------------------------------- pgbench


def pgbench_binary() -> str:
    found = shutil.which("pgbench") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))), None)
    if found is None:
        raise SystemExit("pgbench not found (it comes with PostgreSQL: /usr/lib/postgresql/*/bin)")
    return str(found)


def pgbench_args(url: str) -> list[str]:
    u = make_url(url)
    return ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres", u.database or ""]


def pgbench_init(binary: str, url: str) -> None:
    """A scale-1 pgbench database in `url`."""
    subprocess.run([binary, "-i", "-s", "1", "-q", *pgbench_args(url)], capture_output=True, check=True, timeout=120)


def pgbench_tps(binary: str, url: str, clients: int, seconds: float) -> float:
    """`pgbench -N` (simple update: 5 statements in one transaction) with `clients` clients."""
    out = subprocess.run(
        [binary, "-N", "-n", "-c", str(clients), "-j", "2", "-T", str(max(1, round(seconds))), *pgbench_args(url)],
        capture_output=True, text=True, timeout=seconds + 60, check=True,
    ).stdout
    match = re.search(r"tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)", out)
    if match is None:
        raise RuntimeError(f"could not read pgbench's tps from:\n{out}")
    return float(match.group(1))
