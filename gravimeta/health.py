"""Liveness and readiness of one worker process, with Gravitino's meaning (HealthOperations, 1.3):

  live   the process answers HTTP. Nothing else: a load balancer or orchestrator that restarts on a
         failed liveness check must not restart a healthy server because its database is away.
  ready  this worker can serve requests now:
           entityStore     the store answers a query within PROBE_TIMEOUT_S (Gravitino's default 2 s);
           schemaVersion   the store's Alembic revision is this code's head;
           heartbeat       (distributed lock on) this worker's node row was refreshed within
                           2 x TTL + 1 s by the database clock: its heartbeat thread, which also renews
                           its claims, is alive and reaches the store (the row is refreshed every TTL);
           distributedLock never DOWN; its details carry the flag, the backend and the warning that
                           several replicas run with the lock off (concurrency/replica_safety.py).
         A failed check is DOWN with a `reason`; the response is 503 when any check is DOWN.

A worker boots without its store (create_app must not fail: gunicorn's master exits when a worker
cannot boot); until the schema has been seen at the right revision, every request but the health,
version and metrics endpoints is answered 503 (require_schema). The probe runs in a small thread pool
with a timeout, so a store that hangs makes readiness DOWN ("timeout") instead of hanging the probe;
at most MAX_PROBES_IN_FLIGHT probes wait on the store at once ("probe-rejected" beyond that).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, select

from gravimeta import errors
from gravimeta.concurrency.db_clock import db_now_plus, dialect_of
from gravimeta.concurrency.node_registry import NodeRegistry
from gravimeta.concurrency.replica_safety import lock_off_message
from gravimeta.concurrency.tables import node
from gravimeta.config import Settings
from gravimeta.store.migrations import head_revision
from gravimeta.store_target import store_unreachable

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
MAX_PROBES_IN_FLIGHT = 4


@dataclass(frozen=True)
class Check:
    name: str
    up: bool
    details: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "status": "UP" if self.up else "DOWN", "details": self.details}


LIVE = Check("httpServer", True)


class Health:
    """The checks of one worker process over its engine, settings and node registry."""

    def __init__(self, engine: Engine, settings: Settings, registry: NodeRegistry | None):
        self.engine, self.settings, self.registry = engine, settings, registry
        self.head = head_revision()
        #: the store was last seen at this code's revision (opens the request gate)
        self.schema_verified = False
        self._slots = threading.BoundedSemaphore(MAX_PROBES_IN_FLIGHT)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid: int | None = None
        self._last_down: tuple[str, ...] = ()

    # ------------------------------------------------------------------ boot and the request gate

    def check_at_boot(self) -> None:
        """Verify the schema if the store answers; log and carry on when it does not (module docstring)."""
        try:
            with self.engine.connect() as conn:
                problem = self.schema_problem(conn)
        except Exception as exc:
            reason = store_unreachable(exc)
            if reason is None:
                raise
            log.warning("the store does not answer (%s): this worker answers 503 and is not ready until it does",
                        reason)
            return
        if problem:
            log.error("%s: this worker answers 503 and is not ready until it is migrated", problem)
        self.schema_verified = problem is None

    def require_schema(self) -> None:
        """Raise StoreUnavailable (503) unless the store has been seen at this code's revision. Costs
        nothing once it has; a store that does not answer raises its own error (mapped to 503)."""
        if self.schema_verified:
            return
        with self.engine.connect() as conn:
            problem = self.schema_problem(conn)
        if problem:
            raise errors.StoreUnavailable(f"The metadata database cannot be used yet: {problem}")
        self.schema_verified = True

    def schema_problem(self, conn: Connection) -> str | None:
        current = MigrationContext.configure(conn).get_current_revision()
        if current == self.head:
            return None
        if current is None:
            return "the database has no gravimeta schema (run `gravimeta db upgrade`)"
        return f"the database is at schema revision {current}, this server needs {self.head} (`gravimeta db upgrade`)"

    # ------------------------------------------------------------------ readiness

    def readiness(self) -> list[Check]:
        checks = self._probe_with_timeout() + [self._lock_check()]
        down = tuple(f"{c.name}: {c.details.get('reason', '')}" for c in checks if not c.up)
        if down != self._last_down:  # log changes only: load balancers probe every second
            if down:
                log.warning("not ready: %s", "; ".join(down))
            else:
                log.info("ready again")
            self._last_down = down
        return checks

    def _probe_with_timeout(self) -> list[Check]:
        if not self._slots.acquire(blocking=False):
            return [Check("entityStore", False, {"reason": "probe-rejected: earlier probes still wait on the store"})]
        future = self._executor().submit(self._probe_and_release)
        try:
            return future.result(timeout=PROBE_TIMEOUT_S)
        except TimeoutError:
            return [Check("entityStore", False, {"reason": f"timeout: no answer within {PROBE_TIMEOUT_S:g} s"})]

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool_pid != os.getpid():  # threads do not survive a fork
            self._pool = ThreadPoolExecutor(MAX_PROBES_IN_FLIGHT, thread_name_prefix="gravimeta-health")
            self._pool_pid = os.getpid()
        return self._pool

    def _probe_and_release(self) -> list[Check]:
        try:
            return self._probe()
        finally:
            self._slots.release()

    def _probe(self) -> list[Check]:
        try:
            with self.engine.connect() as conn:
                problem = self.schema_problem(conn)
                heartbeat = self._heartbeat_check(conn) if problem is None else None
        except Exception as exc:
            reason = store_unreachable(exc)
            log.debug("store probe failed", exc_info=True)
            kind = type(getattr(exc, "orig", None) or exc).__name__
            return [Check("entityStore", False, {"reason": f"{kind}: " + ("the store does not answer" if reason
                                                                          else "the probe query failed")})]
        self.schema_verified = problem is None
        checks = [Check("entityStore", True),
                  Check("schemaVersion", problem is None,
                        {"expected": self.head} | ({"reason": problem} if problem else {}))]
        return checks + ([heartbeat] if heartbeat else [])

    def _heartbeat_check(self, conn: Connection) -> Check | None:
        if not self.settings.distributed_lock_enabled or self.registry is None:
            return None
        limit_ms = 2 * self.settings.lease_ttl_ms + 1000
        current = (node.c.heartbeat_at > db_now_plus(dialect_of(self.engine), -limit_ms)).label("current")
        row = conn.execute(
            select(node.c.heartbeat_at, current).where(node.c.node_id == self.registry.row_id)
        ).first()
        if row is None:
            return Check("heartbeat", False, {"reason": "this worker has not registered in the store yet",
                                              "node": self.registry.row_id})
        details = {"node": self.registry.row_id, "lastHeartbeat": str(row.heartbeat_at), "limitMs": str(limit_ms)}
        if not row.current:
            details["reason"] = f"this worker's heartbeat is older than {limit_ms} ms: its claims may not be renewed"
        return Check("heartbeat", bool(row.current), details)

    def _lock_check(self) -> Check:
        enabled = self.settings.distributed_lock_enabled
        details = {"enabled": str(enabled).lower(),
                   "backend": self.registry.backend if self.registry else "NONE"}
        others = self.registry.lock_off_replicas if self.registry else []
        if others:
            details["lockOffReplicas"] = ", ".join(others)
            details["warning"] = lock_off_message(self.registry.node_id if self.registry else "?", others)
        return Check("distributedLock", True, details)
