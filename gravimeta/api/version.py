"""GET /api/version, and CLOSE / (sent by the official client's close()). Health: api/health.py."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta import GRAVITINO_API_VERSION, __version__
from gravimeta.api.door import public
from gravimeta.api.dto import ok

blueprint = Blueprint("version", __name__)


@blueprint.get("/api/version")
@public
def version() -> Any:
    return ok(version={"version": GRAVITINO_API_VERSION, "compileDate": "", "gitCommit": f"gravimeta-{__version__}"})


@blueprint.route("/", methods=["CLOSE"])
@public
def close() -> Any:
    return ok()
