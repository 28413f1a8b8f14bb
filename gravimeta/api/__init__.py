"""The REST API: Flask blueprints (parse and validate), DTOs, and the error handler."""

from __future__ import annotations

from flask import Flask

from gravimeta.api import admin, catalogs, metalakes, openapi, schemas, tables, version
from gravimeta.api.auth import register_auth
from gravimeta.api.errors import register_error_handlers
from gravimeta.api.request_log import register_request_log


def register_api(app: Flask) -> None:
    for module in (version, admin, metalakes, catalogs, schemas, tables, openapi):
        app.register_blueprint(module.blueprint)
    register_request_log(app)  # before authentication: a 401 is logged with its request id too
    register_auth(app, app.extensions["gravimeta"].settings)
    register_error_handlers(app)
