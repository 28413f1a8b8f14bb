"""The node registry: every worker process of every replica has a row in gm_node (flag, backend,
heartbeat), so that a replica can see live peers whose distributed-lock flag differs from its own, the
dangerous state of a half-done rollout (a flag-off peer changes structure without claiming)."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

from sqlalchemy import Engine, delete, insert, select, update

from gravimeta.concurrency import metrics
from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.concurrency.tables import node

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Peer:
    node_id: str
    host: str
    pid: int
    lock_enabled: bool
    backend: str


class NodeRegistry:
    """This process's row in gm_node; `live_window_ms` is how recent a heartbeat must be to count."""

    def __init__(self, engine: Engine, node_id: str, lock_enabled: bool, backend: str, live_window_ms: int):
        self.engine, self.lock_enabled, self.backend = engine, lock_enabled, backend
        self.node_id = node_id
        self.live_window_ms = live_window_ms
        self.dialect = dialect_of(engine)
        self._pid: int | None = None
        self._warned: frozenset[str] = frozenset()

    def register(self) -> None:
        """(Re)write this process's row; called at start and after a fork."""
        self._pid = os.getpid()
        now = db_now(self.dialect)
        with self.engine.begin() as conn:
            conn.execute(delete(node).where(node.c.node_id == self.row_id))
            conn.execute(insert(node).values(
                node_id=self.row_id, host=socket.gethostname()[:255], pid=os.getpid(),
                lock_enabled=self.lock_enabled, backend=self.backend, heartbeat_at=now, started_at=now,
            ))

    @property
    def row_id(self) -> str:
        return f"{self.node_id}:{os.getpid()}"

    def beat(self) -> None:
        """Heartbeat task: refresh our row (re-register if it vanished), then check the peers."""
        try:
            if self._pid != os.getpid():
                self.register()
            else:
                with self.engine.begin() as conn:
                    found = conn.execute(
                        update(node).where(node.c.node_id == self.row_id).values(heartbeat_at=db_now(self.dialect))
                    ).rowcount
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
        """Log a warning when live peers run with a different flag (once per change of that set)."""
        peers = self.mismatched_peers()
        metrics.mixed_rollout_peers.set(len(peers))
        ids = frozenset(p.node_id for p in peers)
        if peers and ids != self._warned:
            log.warning(
                "mixed rollout: this node has distributed-lock %s, but %d live peer process(es) have it %s: %s. "
                "Structural changes are not serialized across nodes until every replica has the same setting.",
                "ON" if self.lock_enabled else "OFF", len(peers), "OFF" if self.lock_enabled else "ON",
                ", ".join(sorted(ids)[:10]),
            )
        self._warned = ids
        return peers

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
                   node.c.heartbeat_at, live).order_by(node.c.node_id)
        ).all()
    return [
        {"node": r.node_id, "host": r.host, "pid": r.pid, "lockEnabled": bool(r.lock_enabled),
         "backend": r.backend, "heartbeatAt": str(r.heartbeat_at), "live": bool(r.live)}
        for r in rows
    ]
