"""The web console: one HTML page and its plain JavaScript and CSS, served at `/` by the API's server.

The console holds no state and has no endpoint of its own: the browser calls the same REST API as the
clients (/api/metalakes/...) and, for the cluster page, the operator endpoint /api/admin/locks. Its
assets ship in the package (gravimeta/console/static, package data), so serving it needs no build
step. The routes are public: they hand out static files, and every API call the page makes is
authenticated and checked like any other request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, send_from_directory

from gravimeta.api.door import public

STATIC_DIR = Path(__file__).parent / "static"
blueprint = Blueprint("console", __name__)


@blueprint.get("/")
@public
def index() -> Any:
    response = send_from_directory(STATIC_DIR, "index.html", max_age=0)
    response.headers["Cache-Control"] = "no-cache"
    return response


@blueprint.get("/console/<path:filename>")
@public
def asset(filename: str) -> Any:
    """console.js and console.css; send_from_directory refuses paths outside the directory (404)."""
    return send_from_directory(STATIC_DIR, filename, max_age=0)
