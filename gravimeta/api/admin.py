"""Operator endpoints: live cross-node claims, replicas, open journal intents and what is unsafe about them
(/api/admin/locks, with the database clock the leases are judged by, so a client can show time left),
what the repair would do with each open intent (/api/admin/repair-preview, a dry run that writes nothing),
Prometheus text at /metrics and at /prometheus/metrics (the path Gravitino serves it on).

Not part of Gravitino's API. They read the shared database directly, so any replica shows the claims of
all replicas. With authentication on and service admins configured, only they may use them (@operator,
api/door.py), whether authorization is on or off.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from sqlalchemy import select

from gravimeta.api.door import operator
from gravimeta.api.dto import ok
from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.node_registry import list_nodes
from gravimeta.concurrency.reclaimer import live_claims
from gravimeta.concurrency.replica_safety import store_warnings
from gravimeta.serving import worker_metrics

blueprint = Blueprint("admin", __name__)


@blueprint.get("/api/admin/locks")
@operator
def locks() -> Any:
    services = current_app.extensions["gravimeta"]
    engine = services.store.engine
    runtime = services.coordinator.runtime
    nodes = list_nodes(engine)
    with engine.connect() as conn:  # the clock leases are judged by: expiresAt - databaseTime is time left
        now = conn.execute(select(db_now(dialect_of(engine)))).scalar_one()
    return ok(
        distributedLock={
            "enabled": services.settings.distributed_lock_enabled,
            "backend": getattr(runtime, "backend", "NONE"),
        },
        claims=live_claims(engine),
        nodes=nodes,
        warnings=store_warnings(nodes),
        intents=[{"id": i.id, "operation": i.operation, "path": i.scope_path, "state": i.state,
                  "holder": i.holder, "detail": i.detail, "since": i.created_at}
                 for i in services.reconciler.journal.pending()],
        databaseTime=str(now),
    )


@blueprint.get("/api/admin/repair-preview")
@operator
def repair_preview() -> Any:
    """What `gravimeta repair` would do with each open intent now, and why: the repair's dry run, which
    changes nothing (gravimeta/dispatch/repair_preview.py). It reads each intent's engine, so it costs one
    engine look per open intent."""
    services = current_app.extensions["gravimeta"]
    return ok(intents=[p.as_json() for p in services.reconciler.preview_pending()])


@blueprint.get("/metrics")
@blueprint.get("/prometheus/metrics")
@operator
def metrics() -> Response:
    """Prometheus text format; sums over all gunicorn workers when PROMETHEUS_MULTIPROC_DIR is set
    (per-worker process and pool figures keep a pid label: gravimeta/serving/worker_metrics.py)."""
    worker_metrics.refresh()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    return Response(generate_latest(), content_type=CONTENT_TYPE_LATEST)
