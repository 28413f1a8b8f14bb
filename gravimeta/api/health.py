"""Health endpoints with Gravitino's paths and bodies, the request gate of a worker that has not yet
seen its store at the right schema, and 503 for a store that does not answer (gravimeta/health.py).

  GET /api/health/live    200 {"code": 0, "status": "UP", "checks": [httpServer]}
  GET /api/health/ready   200, or 503 when a check is DOWN; the checks say which and why
  GET /api/health         both; /health, /health/live, /health/ready and /health.html are aliases
                          (Gravitino's HealthAliasServlet), /health/live being the path gravimeta had

All are open (no authentication), like Gravitino's health paths, so that probes need no credentials.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, request
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from gravimeta import errors
from gravimeta.api.door import public
from gravimeta.api.errors import error_body
from gravimeta.api.request_log import request_id
from gravimeta.health import LIVE, Check
from gravimeta.store_target import store_unreachable

log = logging.getLogger(__name__)
blueprint = Blueprint("health", __name__)

#: endpoints that work without the store at the right schema (everything else waits for it)
WITHOUT_STORE = frozenset({"health.live", "health.ready", "health.health", "version.version", "version.close",
                           "openapi.document", "admin.metrics", "static",
                           "console.index", "console.asset"})


def _answer(checks: list[Check]) -> Any:
    up = all(c.up for c in checks)
    body = {"code": 0, "status": "UP" if up else "DOWN", "checks": [c.as_json() for c in checks]}
    return jsonify(body), 200 if up else 503


@blueprint.get("/api/health/live")
@blueprint.get("/health/live")
@public
def live() -> Any:
    return _answer([LIVE])


@blueprint.get("/api/health/ready")
@blueprint.get("/health/ready")
@public
def ready() -> Any:
    return _answer(current_app.extensions["gravimeta"].health.readiness())


@blueprint.get("/api/health")
@blueprint.get("/health")
@blueprint.get("/health.html")
@public
def health() -> Any:
    return _answer([LIVE, *current_app.extensions["gravimeta"].health.readiness()])


def register_store_gate(app: Flask) -> None:
    """Answer 503 until the store was seen at this code's revision, and when it does not answer."""

    @app.before_request
    def _require_schema() -> None:
        if request.endpoint is None or request.endpoint in WITHOUT_STORE:
            return
        app.extensions["gravimeta"].health.require_schema()

    def _unavailable(exc: Exception) -> Any:
        # one line, no traceback: the store being away is an operational state, not a bug
        log.warning("store unavailable for %s %s (request %s): %s", request.method, request.path, request_id(),
                    store_unreachable(exc) or type(exc).__name__)
        error = errors.StoreUnavailable("The metadata database is not available; retry later")
        return jsonify(error_body(error)), error.http_status

    for kind in (OperationalError, InterfaceError, PoolTimeout):
        app.register_error_handler(kind, _unavailable)
