"""Builds the cross-node half of the coordinator from the settings (called by app.build_services).

Flag off: no claim backend, so every operation issues exactly the queries it issued before; the only
database work is this worker's row in gm_node (written at start, refreshed every 30 s by a background
thread), so that flag-on peers can see a half-done rollout.
Flag on: the configured backend (docs/ha.md):
  LEASE_TABLE  the scope lease on every database;
  PG_ADVISORY  on PostgreSQL, advisory locks where they are sound and the lease elsewhere, per operation
               (see below and pg_advisory.py); refused on other databases;
  AUTO         the same on PostgreSQL; on SQLite and MySQL/MariaDB the lease table.
Advisory locks protect one store transaction. Metalake- and catalog-level structural operations are one
transaction each, so they take advisory locks; so do schema and table operations in a catalog whose
connector is process-local (memory), which run whole in one transaction (gravimeta/dispatch/journal.py).
Schema and table operations of any other catalog run through the operation journal (intent, engine
call, apply: several transactions), so they take the lease even under PG_ADVISORY: with
transaction-scoped advisory locks two renames of one table could both record their intent before either
applied it (the race demo lost a table that way). Which catalog is which comes from the connector
cache; an operation that finds its claim too weak is retried under the lease (coordinator.py).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from gravimeta.concurrency.coordinator import ClaimBackend
from gravimeta.concurrency.db_clock import dialect_of
from gravimeta.concurrency.heartbeat import Heartbeat
from gravimeta.concurrency.node_registry import NodeRegistry
from gravimeta.concurrency.pg_advisory import AdvisoryBackend, AutoBackend, lock_plan
from gravimeta.concurrency.reclaimer import reclaim_expired
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.config import Settings

log = logging.getLogger(__name__)

FLAG_OFF_HEARTBEAT_S = 30.0


@dataclass
class DistributedLock:
    """What build_services keeps alive for the cross-node layer of one worker process."""

    claims: ClaimBackend | None
    backend: str
    heartbeat: Heartbeat
    registry: NodeRegistry


def node_id() -> str:
    """This replica's id: GRAVIMETA_NODE_ID, else host name plus a random suffix per process start."""
    return os.environ.get("GRAVIMETA_NODE_ID") or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"


def effective_backend(settings: Settings, engine: Engine) -> str:
    if not settings.distributed_lock_enabled:
        return "NONE"
    dialect = dialect_of(engine)
    wanted = settings.distributed_lock_backend
    if wanted == "PG_ADVISORY" and dialect != "postgresql":
        raise ValueError(f"distributed-lock backend PG_ADVISORY needs PostgreSQL, not {dialect}")
    if wanted == "AUTO" and dialect != "postgresql":
        return "LEASE_TABLE"
    return wanted


def _never_local(_metalake: str, _catalog: str) -> bool:
    return False


def start_distributed_lock(settings: Settings, engine: Engine,
                           catalog_is_local: Callable[[str, str], bool] = _never_local,
                           register: bool = True) -> DistributedLock:
    """Register this worker, start its heartbeat thread, and build the configured claim backend.
    `catalog_is_local(metalake, catalog)`: whether a catalog's schema/table operations run in one store
    transaction (connector_cache.catalog_locality); by default none do, so they all take the lease.
    `register` False (an operator command): claims and their renewals as a worker has them, but no row
    in the node registry and no node heartbeat: the process is not a replica."""
    backend = effective_backend(settings, engine)
    node = node_id()
    ttl_ms, timeout_ms = settings.lease_ttl_ms, settings.claim_timeout_ms
    enabled = settings.distributed_lock_enabled
    heartbeat = Heartbeat(ttl_ms / 3000 if enabled else FLAG_OFF_HEARTBEAT_S)
    registry = NodeRegistry(engine, node, enabled, backend, live_window_ms=max(3 * ttl_ms, 90_000))
    claims: ClaimBackend | None = None
    if enabled:
        advisory_plan = lock_plan if dialect_of(engine) == "postgresql" else None
        lease = LeaseBackend(engine, node, ttl_ms, timeout_ms, heartbeat=heartbeat, advisory_plan=advisory_plan)
        heartbeat.add_task("reclaimer", lambda: _discard(reclaim_expired(engine)), every=3)
        if backend == "LEASE_TABLE":
            claims = lease
        else:  # PG_ADVISORY or AUTO on PostgreSQL: advisory where sound (module docstring)
            claims = AutoBackend(AdvisoryBackend(engine, timeout_ms), lease, catalog_is_local)
    if register:
        heartbeat.add_task("node-registry", registry.beat, every=1 if not enabled else 3)
        try:
            registry.register()
            registry.warn_on_mixed_rollout()
        except SQLAlchemyError as exc:  # the store is away: boot anyway; the heartbeat registers this worker later
            log.warning("could not register this worker in the store (%s); the heartbeat retries",
                        type(getattr(exc, "orig", None) or exc).__name__)
    heartbeat.ensure_started()
    log.info("distributed lock %s (backend %s), node %s", "ON" if enabled else "OFF", backend, registry.row_id)
    return DistributedLock(claims, backend, heartbeat, registry)


def _discard(_: object) -> None:
    """Heartbeat tasks return nothing."""
