"""The REST API: Flask blueprints (parse and validate), DTOs, and the error handler.

The blueprints are imported when an app is built, not when this package is: `gravimeta serve` imports
gravimeta.api.request_log before gunicorn starts, and prometheus_client (which the blueprints import)
must not be imported before its multiprocess directory is set (gravimeta/serving/metrics_dir.py).
"""

from __future__ import annotations

from flask import Flask


def register_api(app: Flask) -> None:
    from gravimeta import console
    from gravimeta.access.reader import AccessReader
    from gravimeta.api import (
        admin,
        catalogs,
        health,
        metalakes,
        openapi,
        owners,
        partitions,
        principals,
        roles,
        schemas,
        statistics,
        tables,
        tags,
        version,
    )
    from gravimeta.api.auth import register_auth
    from gravimeta.api.browsers import register_browser_rules
    from gravimeta.api.door import register_door
    from gravimeta.api.errors import register_error_handlers
    from gravimeta.api.input_rules import register_input_rules
    from gravimeta.api.request_log import register_request_log
    from gravimeta.api.request_metrics import register_request_metrics

    for module in (version, health, admin, metalakes, catalogs, schemas, tables, partitions, statistics, tags,
                   owners, openapi):
        app.register_blueprint(module.blueprint)
    app.register_blueprint(principals.users)
    app.register_blueprint(principals.groups)
    app.register_blueprint(console.blueprint)  # the web console at / (static files; it calls the API)
    for blueprint in (roles.roles, roles.permissions, roles.object_roles):
        app.register_blueprint(blueprint)
    register_request_log(app)  # before authentication: a 401 is logged with its request id too
    register_browser_rules(app)  # a body that is not JSON is a 415 before anything reads the request
    register_auth(app, app.extensions["gravimeta"].settings)
    register_input_rules(app)  # after authentication: it checks the authenticated user too
    register_error_handlers(app)
    health.register_store_gate(app)  # 503 while the store is away or not at this code's revision
    services = app.extensions["gravimeta"]
    door = register_door(app, AccessReader(services.store), services.settings)  # after authentication
    services.coordinator.when_held = door.recheck  # structural operations check again under their claim
    register_request_metrics(app)
