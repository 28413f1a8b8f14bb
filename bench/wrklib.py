"""HTTP load from wrk (a C load generator scripted in Lua, Debian package `wrk`) instead of Python client
threads: the client then costs a small fraction of the CPU that the servers under test get.

Python threads on the same 2 cores used to cap every figure: through the same gunicorn setup,
`GET /api/version` reached 0.58 x pgbench with them and about 0.9 x with wrk.

wrk runs with one connection per thread (`-t N -c N`), so each Lua state is one connection: the
scripts in bench/wrk/ give connection i its own schema s<i> (claims that never conflict) or one
shared schema (the hot parent). Percentiles over all requests come from wrk's own latency histogram;
per-kind latencies (create, rename, drop, ...) are timed in the script and written to a file. A run
against several replicas is one wrk per replica at once; their results merge by summing throughput
and pooling the per-request samples (wrk's histograms cannot be merged).
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

WRK_DIR = Path(__file__).resolve().parent / "wrk"
STRUCTURAL = WRK_DIR / "structural.lua"
GET = WRK_DIR / "get.lua"
INSTALL_HINT = "wrk is not installed: run `bench/setup` (as root it does `apt-get install -y wrk`)"
SCHEMAS = "/api/metalakes/m/catalogs/c/schemas"  # what benchlib.make_tree(..., "m", "c", ...) builds


def wrk_binary() -> str:
    """The wrk executable, or SystemExit saying how to install it."""
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit(INSTALL_HINT)
    return found


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class WrkResult:
    """One wrk run, or several merged. Latencies in seconds."""

    requests: int
    seconds: float
    #: wrk's histogram: p50, p90, p99, max, mean over every request (absent for merged runs)
    histogram: dict[str, float] = field(default_factory=dict)
    #: per-request latencies by kind, timed in the Lua script
    kinds: dict[str, list[float]] = field(default_factory=dict)
    #: kind -> {HTTP status: count}
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    #: wrk's socket errors (connect, read, write, timeout) and non-2xx/3xx responses (status)
    socket_errors: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    #: CPU seconds wrk itself used (user + system; NaN for merged runs, which ran side by side)
    client_cpu: float = float("nan")

    @property
    def throughput(self) -> float:
        """Responses per second (each a request of the cycle: a create and a drop count as two)."""
        return self.requests / self.seconds if self.seconds else float("nan")

    @property
    def errors(self) -> int:
        """Requests that did not answer 200, plus socket errors and timeouts."""
        bad = sum(n for by_status in self.statuses.values() for status, n in by_status.items() if status != 200)
        return bad + sum(v for k, v in self.socket_errors.items() if k != "status")

    def p(self, q: float, kind: str | None = None) -> float:
        """The q-quantile (0..1) of latency: wrk's histogram over all requests when this is one run and
        no kind is asked for, else the script's samples."""
        if kind is None and self.histogram:
            key = {0.5: "p50", 0.9: "p90", 0.99: "p99", 1.0: "max"}.get(q)
            if key is not None:
                return self.histogram[key]
        values = self.kinds.get(kind, []) if kind else [v for vs in self.kinds.values() for v in vs]
        return _pct(values, q)


def parse_output(stdout: str, samples_json: str) -> WrkResult:
    """wrk's stdout (with the WRK_JSON line of bench/wrk/report.lua) and the samples file -> result."""
    line = next((ln for ln in stdout.splitlines() if ln.startswith("WRK_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no WRK_JSON line (did the script fail?):\n{stdout}")
    report = json.loads(line.removeprefix("WRK_JSON "))
    # an empty Lua table encodes as [], whatever it stands for
    kinds = {k: [v / 1e6 for v in vs] for k, vs in (json.loads(samples_json or "{}") or {}).items()}
    return WrkResult(
        requests=int(report["requests"]),
        seconds=report["duration_us"] / 1e6,
        histogram={k: v / 1e6 for k, v in report["latency_us"].items()},
        kinds=kinds,
        statuses={k: {int(s): int(n) for s, n in v.items()} for k, v in (report["statuses"] or {}).items()},
        socket_errors={k: int(v) for k, v in report["errors"].items()},
        error_samples=list(report["error_samples"]),
    )


def run(url: str, script: Path, connections: int, seconds: float, args: dict[str, str],
        timeout_s: float = 30.0) -> WrkResult:
    """One wrk run: `connections` threads with one connection each, for `seconds`, script arguments
    `args` (key=value). Requests slower than `timeout_s` count as timeouts."""
    with tempfile.NamedTemporaryFile("r", suffix=".json", prefix="gm-wrk-") as samples:
        command = [wrk_binary(), "-t", str(connections), "-c", str(connections), "-d", f"{max(1, round(seconds))}s",
                   "--timeout", f"{round(timeout_s)}s", "-s", str(script), url, "--",
                   *(f"{k}={v}" for k, v in {**args, "samples": samples.name}.items())]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + timeout_s + 60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"wrk exited with {done.returncode}: {done.stderr}\n{done.stdout}")
        result = parse_output(done.stdout, Path(samples.name).read_text())
        # the children reaped meanwhile: this wrk (the servers under test live on; run_many's parallel
        # runs would count each other, and merge() drops the figure)
        result.client_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return result


def merge(results: Sequence[WrkResult]) -> WrkResult:
    """Runs that went on at the same time against several replicas, as one."""
    if len(results) == 1:
        return results[0]
    merged = WrkResult(requests=sum(r.requests for r in results), seconds=max(r.seconds for r in results))
    for r in results:
        for kind, values in r.kinds.items():
            merged.kinds.setdefault(kind, []).extend(values)
        for kind, by_status in r.statuses.items():
            target = merged.statuses.setdefault(kind, {})
            for status, n in by_status.items():
                target[status] = target.get(status, 0) + n
        for k, v in r.socket_errors.items():
            merged.socket_errors[k] = merged.socket_errors.get(k, 0) + v
        merged.error_samples.extend(r.error_samples)
    return merged


def spread(urls: Sequence[str], connections: int) -> list[tuple[str, int]]:
    """`connections` spread round-robin over the replicas: (url, how many) for each that gets any."""
    counts = [connections // len(urls) + (1 if i < connections % len(urls) else 0) for i in range(len(urls))]
    return [(u, n) for u, n in zip(urls, counts, strict=True) if n]


def run_many(urls: Sequence[str], script: Path, connections: int, seconds: float, args: dict[str, str],
             timeout_s: float = 30.0) -> WrkResult:
    """One wrk per replica at once, the connections spread over them, merged. Each wrk numbers its
    connections from 0, so per-connection schemas are offset per replica (`first` argument: connection
    i of replica r uses schema s<first + i>)."""
    jobs, first = [], 0
    for url, n in spread(urls, connections):
        jobs.append((url, n, {**args, "first": str(first)}))
        first += n
    if len(jobs) == 1:
        url, n, job_args = jobs[0]
        return run(url, script, n, seconds, job_args, timeout_s)
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(run, url, script, n, seconds, job_args, timeout_s) for url, n, job_args in jobs]
        return merge([f.result() for f in futures])
