"""The node registry: every worker process of every replica has a row in gm_node (flag, backend,
heartbeat, the schema revision of its code), so that a replica can see live peers whose distributed-lock
flag differs from its own, the dangerous state of a half-done rollout (a flag-off peer changes structure
without claiming), and operators can see which replicas still run an older gravimeta.
A worker whose code is newer than its store (booted before `gravimeta db upgrade`: it answers 503 until
then) has no schema_revision column to write: it registers without it, so its peers still see it, and
writes its revision at the first heartbeat after the upgrade.
Its writes wait on a row lock at most lock_waits.BACKGROUND_WAIT_S: they share the heartbeat's duty lane
with the reclaimer (never the renewals' lane), and a failed beat is simply retried on the next one."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

from sqlalchemy import Engine, delete, insert, inspect, select, update
from sqlalchemy.exc import SQLAlchemyError

from gravimeta import failpoints
from gravimeta.concurrency import metrics
from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.concurrency.replica_safety import lock_off_message, other_lock_off_replicas
from gravimeta.concurrency.tables import node
from gravimeta.store import lock_waits
from gravimeta.store.database import disabled_for_test
from gravimeta.store.migrations import head_revision

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Peer:
    node_id: str
    host: str
    pid: int
    lock_enabled: bool
    backend: str


class NodeRegistry:
    """This process's row in gm_node; `live_window_ms` is how recent a heartbeat must be to count;
    `schema_revision` is the one this worker reports (default: this code's Alembic head)."""

    def __init__(self, engine: Engine, node_id: str, lock_enabled: bool, backend: str, live_window_ms: int,
                 schema_revision: str | None = None):
        self.engine, self.lock_enabled, self.backend = engine, lock_enabled, backend
        self.node_id = node_id
        self.live_window_ms = live_window_ms
        self.schema_revision = schema_revision or head_revision()
        self.dialect = dialect_of(engine)
        self._pid: int | None = None
        #: whether our row holds our schema revision (False on a store before alembic 0018: module docstring)
        self._revision_written = False
        #: other live replicas that run with the lock off like this one, as of the last check (replica_safety)
        self.lock_off_replicas: list[str] = []

    def register(self) -> None:
        """(Re)write this process's row; called at start and after a fork, and by the heartbeat until the
        row holds this worker's schema revision."""
        self._pid = os.getpid()
        try:
            self._write_row({"schema_revision": self.schema_revision})
        except SQLAlchemyError:
            # TEST-ONLY (node_revision_fallback): no second try without the column
            if disabled_for_test("node_revision_fallback") or not self._store_lacks_revision_column():
                raise
            self._revision_written = False
            self._write_row({})  # a store before alembic 0018 (module docstring)
        else:
            self._revision_written = True

    def _write_row(self, extra: dict[str, str]) -> None:
        now = db_now(self.dialect)
        with self.engine.begin() as conn:
            lock_waits.bound_connection(conn, self.dialect, lock_waits.BACKGROUND_WAIT_S)
            conn.execute(lock_waits.bounded(delete(node).where(node.c.node_id == self.row_id),
                                            self.dialect, lock_waits.BACKGROUND_WAIT_S))
            conn.execute(insert(node).values(  # a column not named here is left out of the INSERT
                node_id=self.row_id, host=socket.gethostname()[:255], pid=os.getpid(),
                lock_enabled=self.lock_enabled, backend=self.backend, heartbeat_at=now, started_at=now, **extra,
            ))

    def _store_lacks_revision_column(self) -> bool:
        return "schema_revision" not in {c["name"] for c in inspect(self.engine).get_columns(node.name)}

    @property
    def row_id(self) -> str:
        return f"{self.node_id}:{os.getpid()}"

    def beat(self) -> None:
        """Heartbeat task: refresh our row (re-register if it vanished), then check the peers."""
        failpoints.hit("node.before_beat")
        try:
            if self._pid != os.getpid() or not self._revision_written:
                self.register()
            else:
                with self.engine.begin() as conn:
                    found = conn.execute(lock_waits.bounded(
                        update(node).where(node.c.node_id == self.row_id).values(heartbeat_at=db_now(self.dialect)),
                        self.dialect, lock_waits.BACKGROUND_WAIT_S)).rowcount
                if not found:
                    self.register()
        except Exception:
            metrics.heartbeat_failures.labels("node").inc()
            raise
        self.warn_on_mixed_rollout()

    def live_peers(self) -> list[Peer]:
        cutoff = db_now_plus(self.dialect, -self.live_window_ms)
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(node.c.node_id, node.c.host, node.c.pid, node.c.lock_enabled, node.c.backend)
                .where(node.c.heartbeat_at > cutoff, node.c.node_id != self.row_id)
                .order_by(node.c.node_id)
            ).all()
        return [Peer(r.node_id, r.host, r.pid, bool(r.lock_enabled), r.backend) for r in rows]

    def mismatched_peers(self) -> list[Peer]:
        return [p for p in self.live_peers() if p.lock_enabled != self.lock_enabled]

    def warn_on_mixed_rollout(self) -> list[Peer]:
        """Log a warning when live peers run with a different flag: at start and on every node heartbeat
        (docs/ha.md), like the lock-off warning (replica_safety)."""
        live = self.live_peers()
        self._warn_on_lock_off(live)
        peers = [p for p in live if p.lock_enabled != self.lock_enabled]
        metrics.mixed_rollout_peers.set(len(peers))
        ids = sorted(p.node_id for p in peers)
        if peers:
            log.warning(
                "mixed rollout: this node has distributed-lock %s, but %d live peer process(es) have it %s: %s. "
                "Structural changes are not serialized across nodes until every replica has the same setting.",
                "ON" if self.lock_enabled else "OFF", len(peers), "OFF" if self.lock_enabled else "ON",
                ", ".join(ids[:10]),
            )
        return peers

    def _warn_on_lock_off(self, live: list[Peer]) -> None:
        """Several replicas with the lock off on one store: say so on every check, not once (replica_safety)."""
        others = [] if self.lock_enabled else other_lock_off_replicas(
            self.node_id, ((p.node_id, p.lock_enabled) for p in live))
        self.lock_off_replicas = others
        metrics.lock_off_peer_replicas.set(len(others))
        if others:
            log.error(lock_off_message(self.node_id, others))

    def unregister(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(node).where(node.c.node_id == self.row_id))


def list_nodes(engine: Engine, live_window_ms: int = 90_000) -> list[dict[str, object]]:
    """Every registered worker process with whether its heartbeat is recent (for `gravimeta locks`)."""
    dialect = dialect_of(engine)
    live = (node.c.heartbeat_at > db_now_plus(dialect, -live_window_ms)).label("live")
    with engine.connect() as conn:
        rows = conn.execute(
            select(node.c.node_id, node.c.host, node.c.pid, node.c.lock_enabled, node.c.backend,
                   node.c.heartbeat_at, node.c.schema_revision, live).order_by(node.c.node_id)
        ).all()
    return [
        {"node": r.node_id, "host": r.host, "pid": r.pid, "lockEnabled": bool(r.lock_enabled),
         "backend": r.backend, "schemaRevision": r.schema_revision, "heartbeatAt": str(r.heartbeat_at),
         "live": bool(r.live)}
        for r in rows
    ]
