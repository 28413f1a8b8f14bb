"""Background threads per worker process that run the periodic duties of the claim layer: renewing
this process's live claims (every TTL/3), the node registry heartbeat and the reclaimer.

Each task runs in a lane, and each lane is a thread of its own: renewals run in the lane RENEWALS, the
other duties in the lane DUTIES. A renewal must never queue behind a reclaim or a node-registry write
(a reclaim that meets a row locked by a frozen holder, or a slow store, would otherwise make every claim
of this worker miss its deadline; docs/ha.md, "Bounded waits"). The statements of every lane are bounded
as well (gravimeta/store/lock_waits.py), so a lane that waits still comes round.

The threads are started lazily (`ensure_started`, called by build_services and by every claim), and
restarted when the pid changed, so they always run in the gunicorn worker, never in the master that
forked it. They hold only a weak reference to their Heartbeat, so an application that is thrown away
(tests build many) also ends its threads within one period.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from gravimeta.concurrency import metrics

log = logging.getLogger(__name__)

RENEWALS = "renewals"
DUTIES = "duties"


@dataclass
class _Task:
    name: str
    run: Callable[[], None]
    every: int  # in periods


class Heartbeat:
    """Daemon threads, one per lane, running registered tasks every `period_s` (each task every N periods)."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self._tasks: dict[str, list[_Task]] = {}
        self._ticks: dict[str, int] = {}
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._started: set[str] = set()
        self._stop = threading.Event()

    def add_task(self, name: str, run: Callable[[], None], every: int = 1, lane: str = DUTIES) -> None:
        with self._lock:
            self._tasks.setdefault(lane, []).append(_Task(name, run, max(1, every)))
            started_here = self._pid == os.getpid()
        if started_here:  # a lane added after the start gets its thread now
            self._start_lanes()

    def ensure_started(self) -> None:
        """Start the threads in this process if they are not running here yet (cheap when they are)."""
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._stop = threading.Event()
            self._started = set()
        self._start_lanes()

    def _start_lanes(self) -> None:
        with self._lock:
            lanes = [lane for lane in self._tasks if lane not in self._started]
            self._started.update(lanes)
            stop = self._stop
        for lane in lanes:
            threading.Thread(
                target=_run, args=(weakref.ref(self), stop, self.period_s, lane),
                name=f"gravimeta-heartbeat-{lane}", daemon=True,
            ).start()

    def stop(self) -> None:
        self._stop.set()
        self._pid = None

    def run_once(self, lane: str | None = None) -> None:
        """Run the tasks that are due this period (of one lane, or of all); one failing task never
        stops the others."""
        with self._lock:
            lanes = [lane] if lane is not None else list(self._tasks)
            due: list[_Task] = []
            for name in lanes:
                tick = self._ticks[name] = self._ticks.get(name, 0) + 1
                due.extend(task for task in self._tasks.get(name, []) if tick % task.every == 0)
        for task in due:
            try:
                task.run()
                metrics.heartbeat_runs.labels(task.name).inc()
            except Exception:  # a background duty must never kill the thread; the next period retries
                log.exception("heartbeat task %s failed", task.name)


def _run(ref: weakref.ref[Heartbeat], stop: threading.Event, period_s: float, lane: str) -> None:
    while not stop.wait(period_s):
        heartbeat = ref()
        if heartbeat is None:
            return
        heartbeat.run_once(lane)
        del heartbeat
