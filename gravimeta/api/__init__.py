"""The REST API: Flask blueprints (parse and validate), DTOs, and the error handler."""

from __future__ import annotations

from flask import Flask

from gravimeta.api import admin, catalogs, metalakes, schemas, tables, version
from gravimeta.api.errors import register_error_handlers


def register_api(app: Flask) -> None:
    for module in (version, admin, metalakes, catalogs, schemas, tables):
        app.register_blueprint(module.blueprint)
    register_error_handlers(app)
