"""Per-worker process and database-pool metrics for /metrics and /prometheus/metrics.

prometheus_client's own process collector does not work under gunicorn's multiprocess mode (a scrape
reads only the sample files, and the collector's values are not written there), so each worker writes
its process figures (CPU seconds, resident memory, open file descriptors, start time) and its database
pool's (connections checked out, overflow beyond pool_size, time spent waiting for a connection) into
gauges labelled with its pid (multiprocess mode `liveall`: a worker that exited drops out of the
scrape). They are refreshed every REFRESH_S seconds by a daemon thread, and on every scrape for the
worker that answers it: a scrape shows each live worker's figures at most REFRESH_S seconds old.

The pool's wait time is measured around the pool's `_do_get` (the call that blocks when every
connection is checked out); SQLAlchemy has no public event before a checkout starts.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from typing import Any, Literal

from prometheus_client import Gauge

REFRESH_S = 5.0

_MODE: Literal["liveall"] = "liveall"
cpu_seconds = Gauge("gravimeta_worker_cpu_seconds", "CPU time (user + system) used by this worker process.",
                    multiprocess_mode=_MODE)
resident_bytes = Gauge("gravimeta_worker_resident_memory_bytes", "Resident memory of this worker process.",
                       multiprocess_mode=_MODE)
open_fds = Gauge("gravimeta_worker_open_fds", "Open file descriptors of this worker process.",
                 multiprocess_mode=_MODE)
start_time = Gauge("gravimeta_worker_start_time_seconds", "When this worker process started (Unix time).",
                   multiprocess_mode=_MODE)
pool_checked_out = Gauge("gravimeta_db_pool_checked_out", "Store connections checked out of this worker's pool.",
                         multiprocess_mode=_MODE)
pool_overflow = Gauge("gravimeta_db_pool_overflow",
                      "Store connections open beyond the pool size in this worker (negative: unused pool slots).",
                      multiprocess_mode=_MODE)
# cumulative per live worker: gauges (a multiprocess counter would sum the workers away)
pool_wait_seconds = Gauge("gravimeta_db_pool_wait_seconds",
                          "Time this worker has spent waiting for store connections from its pool (cumulative).",
                          multiprocess_mode=_MODE)
pool_waits = Gauge("gravimeta_db_pool_checkouts",
                   "Store connections this worker has taken from its pool (cumulative; the count of waits).",
                   multiprocess_mode=_MODE)

_started_at = time.time()
_lock = threading.Lock()
_pools: list[Any] = []
_refresher: tuple[int, threading.Thread] | None = None


def _boot_time() -> float:
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def _process_start() -> float:
    """The start time of this process from /proc (a forked worker's own, not the master's import time)."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return _boot_time() + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _started_at


def watch_pool(engine: Any) -> None:
    """Measure `engine`'s pool: its checked-out and overflow counts, and the time checkouts wait."""
    pool = engine.pool
    do_get = pool._do_get

    def timed_do_get() -> Any:
        started = time.perf_counter()
        try:
            return do_get()
        finally:
            pool_wait_seconds.inc(time.perf_counter() - started)
            pool_waits.inc()

    pool._do_get = timed_do_get
    with _lock:
        _pools.append(pool)
    _ensure_refresher()


def refresh() -> None:
    """Write this process's current figures into its gauges."""
    times = os.times()
    cpu_seconds.set(times.user + times.system)
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            resident_bytes.set(int(f.read().split()[1]) * resource.getpagesize())
    except (OSError, ValueError, IndexError):
        resident_bytes.set(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    try:
        open_fds.set(len(os.listdir(f"/proc/{os.getpid()}/fd")))
    except OSError:
        pass
    start_time.set(_process_start())
    with _lock:
        pools = list(_pools)
    checked_out = overflow = 0
    for pool in pools:
        checked_out += pool.checkedout() if hasattr(pool, "checkedout") else 0
        overflow += pool.overflow() if hasattr(pool, "overflow") else 0
    pool_checked_out.set(checked_out)
    pool_overflow.set(overflow)


def _ensure_refresher() -> None:
    """One refresh thread per process (a forked worker starts its own: threads do not survive fork)."""
    global _refresher
    with _lock:
        if _refresher is not None and _refresher[0] == os.getpid() and _refresher[1].is_alive():
            return
        thread = threading.Thread(target=_refresh_forever, name="gravimeta-worker-metrics", daemon=True)
        _refresher = (os.getpid(), thread)
    thread.start()


def _refresh_forever() -> None:
    while True:
        try:
            refresh()
        except Exception:  # a figure that cannot be read must not end the thread
            pass
        time.sleep(REFRESH_S)
