"""One place that turns every failure into Gravitino's error body {code, type, message, stack}.

Views name the operation they perform with @operation(...); the handler then words the message the
way the Java server does: "Failed to operate table(s) [t] operation [LOAD] under schema [s], reason [...]".
Framework errors (unknown route, wrong method, oversized body) get JSON bodies too: the official
client cannot parse HTML.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException

from gravimeta import errors

log = logging.getLogger(__name__)

# the entity kind each view family reports on, and the parent it names
_KINDS = {
    "metalake": (None, None),
    "catalog": ("metalake", "metalake"),
    "schema": ("catalog", "catalog"),
    "table": ("schema", "schema"),
}
_HTTP_ERRORS = {
    404: errors.NotFound,
    405: errors.UnsupportedOperation,
    413: errors.IllegalArgument,
    400: errors.IllegalArgument,
}


def operation(kind: str, op: str, name_arg: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Record what a view does, for error messages."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            g.operation = (kind, op, kwargs.get(name_arg) if name_arg else None, kwargs)
            return view(*args, **kwargs)

        return wrapper

    return decorate


def _message(reason: str) -> str:
    context = getattr(g, "operation", None)
    if context is None:
        return reason
    kind, op, name, kwargs = context
    parent_kind, parent_arg = _KINDS[kind]
    subject = f"Failed to operate {kind}(s)" + (f" [{name}]" if name else "") + f" operation [{op}]"
    if parent_kind and kwargs.get(parent_arg):
        subject += f" under {parent_kind} [{kwargs[parent_arg]}]"
    return f"{subject}, reason [{reason}]"


def error_body(exc: errors.GravitinoError, message: str | None = None) -> dict[str, Any]:
    return {"code": exc.code, "type": exc.type_name, "message": message or exc.message, "stack": None}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(errors.GravitinoError)
    def _domain(exc: errors.GravitinoError) -> Any:
        response = jsonify(error_body(exc, _message(exc.message)))
        if isinstance(exc, errors.ScopeBusy):
            response.headers["Retry-After"] = "1"
        response.headers.update(getattr(exc, "headers", None) or {})  # e.g. WWW-Authenticate on a 401
        return response, exc.http_status

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> Any:
        status = exc.code or 500
        kind = _HTTP_ERRORS.get(status, errors.GravitinoError)
        if status == 404:
            text = f"No such endpoint: {request.method} {request.path}"
        elif status == 405:
            text = f"Method {request.method} is not supported on {request.path}"
        elif status == 413:
            text = f"The request body is larger than the limit of {app.config.get('MAX_CONTENT_LENGTH')} bytes"
        else:
            text = exc.description or exc.name
        return jsonify(error_body(kind(text))), status

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Any:
        log.exception("unexpected error in %s %s", request.method, request.path)
        return jsonify(error_body(errors.GravitinoError(_message(f"Internal error: {type(exc).__name__}")))), 500
