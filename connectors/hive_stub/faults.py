"""Fault injection for the stub. Every metastore call passes through `Faults.before(op)` and
`Faults.after(op)` around its real work; tests switch faults on over HTTP (/_faults/...).

Kinds (each may be limited to some operations with "ops": ["create_table", ...]):
- latency: {"ms": 200} every matching call is delayed.
- fail:    {"count": N, "mode": "500"|"reset", "when": "before"|"after"} the next N matching calls
           fail with HTTP 500 or a connection reset, before doing their work or after persisting it.
- hang:    {"count": N, "seconds": T} the next N matching calls block until /_faults/release (or
           DELETE /_faults) or for T seconds, then proceed normally.
- crash:   {"calls": N, "when": "before"|"after"} the Nth next matching call ends the process with
           os._exit, before its work or after persisting it but before answering.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

OPERATIONS = (
    "list_databases", "get_database", "create_database", "drop_database",
    "list_tables", "get_table", "create_table", "alter_table", "rename_table", "drop_table", "fence",
    "list_partitions", "get_partition", "create_partition", "drop_partition",
)
CRASH_EXIT_CODE = 75
MAX_HANG_SECONDS = 600.0


class InjectedFailure(Exception):
    """Raised by the fault layer; the server answers with HTTP 500 or resets the connection."""

    def __init__(self, mode: str, op: str):
        super().__init__(f"injected failure in {op}")
        self.mode = mode


@dataclass
class Fault:
    kind: str
    ops: frozenset[str] | None = None
    count: int = 1
    mode: str = "500"
    when: str = "before"
    ms: int = 0
    seconds: float | None = None

    def matches(self, op: str) -> bool:
        return self.ops is None or op in self.ops


def parse_fault(kind: str, body: dict[str, Any]) -> Fault:
    """Build a Fault from a /_faults/<kind> body, or raise ValueError naming the bad field."""
    if kind not in ("latency", "fail", "hang", "crash"):
        raise ValueError(f"unknown fault kind {kind!r}; use latency, fail, hang or crash")
    ops = body.get("ops")
    if ops is not None and (not isinstance(ops, list) or not set(ops) <= set(OPERATIONS)):
        raise ValueError(f"ops must be a list of {', '.join(OPERATIONS)}")
    fault = Fault(kind, frozenset(ops) if ops is not None else None)
    fault.count = int(body.get("count", body.get("calls", 1)))
    fault.mode = str(body.get("mode", "500"))
    fault.when = str(body.get("when", "before"))
    fault.ms = int(body.get("ms", 0))
    fault.seconds = float(body["seconds"]) if body.get("seconds") is not None else None
    if fault.count < 1 or fault.mode not in ("500", "reset") or fault.when not in ("before", "after"):
        raise ValueError("count/calls >= 1, mode in (500, reset), when in (before, after)")
    return fault


@dataclass
class Faults:
    active: list[Fault] = field(default_factory=list)
    calls: int = 0
    hung: int = 0
    in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _release: threading.Event = field(default_factory=threading.Event)

    def add(self, fault: Fault) -> None:
        with self._lock:
            if fault.kind == "latency":
                self.active = [f for f in self.active if f.kind != "latency"]
            self.active.append(fault)

    def clear(self) -> None:
        with self._lock:
            self.active = []
        self.release()

    def release(self) -> None:
        with self._lock:
            event, self._release = self._release, threading.Event()
        event.set()

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self.calls,
                "hung": self.hung,
                "in_flight": self.in_flight,
                "active": [
                    {"kind": f.kind, "ops": sorted(f.ops) if f.ops else None, "count": f.count,
                     "mode": f.mode, "when": f.when, "ms": f.ms, "seconds": f.seconds}
                    for f in self.active
                ],
            }

    def _take(self, op: str, when: str) -> list[Fault]:
        """The faults that fire now for `op` at `when`, consuming one use of each counted fault."""
        fired = []
        with self._lock:
            if when == "before":
                self.calls += 1
            for fault in list(self.active):
                if not fault.matches(op):
                    continue
                if fault.kind in ("latency", "hang") and when != "before":
                    continue
                if fault.kind in ("fail", "crash") and fault.when != when:
                    continue
                if fault.kind != "latency":
                    fault.count -= 1
                    if fault.count <= 0:
                        self.active.remove(fault)
                    elif fault.kind == "crash":
                        continue  # a crash fires on the Nth matching call only
                fired.append(fault)
        return fired

    @contextmanager
    def tracking(self) -> Iterator[None]:
        """Count a metastore call as in flight until it has answered (or failed)."""
        with self._lock:
            self.in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def before(self, op: str) -> None:
        self._fire(op, "before")

    def after(self, op: str) -> None:
        self._fire(op, "after")

    def _fire(self, op: str, when: str) -> None:
        for fault in self._take(op, when):
            if fault.kind == "latency":
                time.sleep(fault.ms / 1000)
            elif fault.kind == "hang":
                self._hang(fault.seconds)
            elif fault.kind == "crash":
                os._exit(CRASH_EXIT_CODE)
            else:
                raise InjectedFailure(fault.mode, op)

    def _hang(self, seconds: float | None) -> None:
        with self._lock:
            event = self._release
            self.hung += 1
        try:
            event.wait(min(seconds, MAX_HANG_SECONDS) if seconds is not None else MAX_HANG_SECONDS)
        finally:
            with self._lock:
                self.hung -= 1
