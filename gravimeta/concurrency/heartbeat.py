"""One background thread per worker process that runs the periodic duties of the claim layer:
renewing this process's live claims (every TTL/3), the node registry heartbeat and the reclaimer.

The thread is started lazily (`ensure_started`, called by build_services and by every claim), and
restarted when the pid changed, so it always runs in the gunicorn worker, never in the master that
forked it. It holds only a weak reference to its Heartbeat, so an application that is thrown away
(tests build many) also ends its thread within one period.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass
class _Task:
    name: str
    run: Callable[[], None]
    every: int  # in periods


class Heartbeat:
    """A daemon thread running registered tasks every `period_s` (each task every N periods)."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self._tasks: list[_Task] = []
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._stop = threading.Event()
        self._tick = 0

    def add_task(self, name: str, run: Callable[[], None], every: int = 1) -> None:
        with self._lock:
            self._tasks.append(_Task(name, run, max(1, every)))

    def ensure_started(self) -> None:
        """Start the thread in this process if it is not running here yet (cheap when it is)."""
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._stop = threading.Event()
            thread = threading.Thread(
                target=_run, args=(weakref.ref(self), self._stop, self.period_s),
                name="gravimeta-heartbeat", daemon=True,
            )
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._pid = None

    def run_once(self) -> None:
        """Run the tasks that are due this period; one failing task never stops the others."""
        self._tick += 1
        with self._lock:
            tasks = list(self._tasks)
        for task in tasks:
            if self._tick % task.every:
                continue
            try:
                task.run()
            except Exception:  # a background duty must never kill the thread; the next period retries
                log.exception("heartbeat task %s failed", task.name)


def _run(ref: weakref.ref[Heartbeat], stop: threading.Event, period_s: float) -> None:
    while not stop.wait(period_s):
        heartbeat = ref()
        if heartbeat is None:
            return
        heartbeat.run_once()
        del heartbeat
