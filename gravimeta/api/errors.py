"""One place that turns every failure into Gravitino's error body {code, type, message}.

Views name the operation they perform with @operation(...); the handler then words the message the
way the Java server does: "Failed to operate table(s) [t] operation [LOAD] under schema [s], reason [...]".
Framework errors (unknown route, wrong method, oversized body) get JSON bodies too: the official
client cannot parse HTML.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException

from gravimeta import errors
from gravimeta.api.request_log import request_id
from gravimeta.error_chain import error_chain

log = logging.getLogger(__name__)

# the entity kind each view family reports on, and the parent it names
_KINDS = {
    "metalake": (None, None),
    "catalog": ("metalake", "metalake"),
    "schema": ("catalog", "catalog"),
    "table": ("schema", "schema"),
}
# kinds whose messages Gravitino words differently (its OwnerExceptionHandler, UserExceptionHandler, ...)
_TEMPLATES = {
    "owner": "Failed to execute{name} owner operation [{op}] under metalake [{metalake}], reason [{reason}]",
    "role": "Failed to operate role{name} operation [{op}] under metalake [{metalake}], reason [{reason}]",
    "user permission": "Failed to operate role(s){name} operation [{op}] under user [{user_name}], reason [{reason}]",
    "group permission": "Failed to operate role(s){name} operation [{op}] under group [{group_name}], "
                        "reason [{reason}]",
    "role permission": "Failed to operate object({full_name}) operation [{op}] under role [{role}], reason [{reason}]",
    "user": "Failed to operate user{name} operation [{op}] under metalake [{metalake}], reason [{reason}]",
    "group": "Failed to operate group{name} operation [{op}] under metalake [{metalake}], reason [{reason}]",
}
_NAME_PREFIXES = {"owner": "metadata object "}
# families Gravitino words otherwise: "Failed to operate <subject> [name] operation [OP] <phrase> [parent]"
# (ExceptionHandlers: PartitionExceptionHandler, TagExceptionHandler, StatisticExceptionHandler, ...)
_PHRASES = {
    "partition": ("partition(s)", "of table"),
    "partition stats": ("partition stats", "of table"),
    "tag": ("tag(s)", "under object"),
    "statistic": ("statistic(s)", "on parent"),
}
_HTTP_ERRORS = {
    404: errors.NotFound,
    405: errors.UnsupportedOperation,
    413: errors.IllegalArgument,
    400: errors.IllegalArgument,
}


def operation(kind: str, op: str, name_arg: str | None = None,
              parent_arg: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Record what a view does, for error messages. `parent_arg`: the view argument naming the parent
    in the message, for the families of _PHRASES."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            g.operation = (kind, op, kwargs.get(name_arg) if name_arg else None, kwargs)
            g.operation_parent = kwargs.get(parent_arg) if parent_arg else None
            return view(*args, **kwargs)

        return wrapper

    return decorate


def operation_names(name: str) -> None:
    """Name the object of the current operation once it is known (e.g. from the request body)."""
    context = getattr(g, "operation", None)
    if context is not None:
        g.operation = (context[0], context[1], name, context[3])


def _message(reason: str) -> str:
    context = getattr(g, "operation", None)
    if context is None:
        return reason
    kind, op, name, kwargs = context
    if kind in _TEMPLATES:
        named = f" [{_NAME_PREFIXES.get(kind, '')}{name}]" if name else ""
        return _TEMPLATES[kind].format(**{**kwargs, "name": named, "op": op, "metalake": kwargs.get("metalake"),
                                          "reason": reason})
    if kind in _PHRASES:
        subject, phrase = _PHRASES[kind]
        named = f" [{name}]" if name else ""
        return f"Failed to operate {subject}{named} operation [{op}] {phrase} [{g.get('operation_parent') or ''}], " \
               f"reason [{reason}]"
    parent_kind, parent_arg = _KINDS[kind]
    subject = f"Failed to operate {kind}(s)" + (f" [{name}]" if name else "") + f" operation [{op}]"
    if parent_kind and kwargs.get(parent_arg):
        subject += f" under {parent_kind} [{kwargs[parent_arg]}]"
    return f"{subject}, reason [{reason}]"


def error_body(exc: errors.GravitinoError, message: str | None = None) -> dict[str, Any]:
    """Gravitino's ErrorResponse. Its `stack` (a list of strings) is left out, as Gravitino's JSON
    mapper leaves out every null field: gravimeta sends no stack traces, and a client generated from
    Gravitino's spec refuses `"stack": null`."""
    return {"code": exc.code, "type": exc.type_name, "message": message or exc.message}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(errors.GravitinoError)
    def _domain(exc: errors.GravitinoError) -> Any:
        note_refusal(exc)
        response = jsonify(error_body(exc, _message(exc.message)))
        if isinstance(exc, errors.ScopeBusy) or (isinstance(exc, errors.StoreUnavailable) and exc.http_status == 503):
            # nothing was changed and a retry may succeed: a claim freed, the database back or failed over
            # (a 502 CommitOutcomeUnknown gets none: its client must look before retrying)
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
        if isinstance(exc, RecursionError):  # a 1,000-frame traceback says nothing the last frames do not
            log.error("unexpected RecursionError in %s %s (request %s) at %s", request.method, request.path,
                      request_id(), traceback.format_exception(exc)[-2].strip().replace("\n", " | "))
        else:
            log.exception("unexpected error in %s %s (request %s)", request.method, request.path, request_id())
        return jsonify(error_body(errors.GravitinoError(_message(f"Internal error: {type(exc).__name__}")))), 500


def note_refusal(exc: errors.GravitinoError) -> None:
    """Put what the client is told into this request's one log line (api/request_log.py), with the
    details only the server log may hold (GravitinoError.detail, also of the errors it was raised from:
    absolute paths, database hosts and roles). Refused input is logged this way: one line, never a
    traceback."""
    details = [cause.detail for cause in error_chain(exc, implicit=False)
               if isinstance(cause, errors.GravitinoError) and cause.detail][:5]
    g.refusal = {"error": exc.type_name, "reason": exc.message[:500], **({"detail": "; ".join(details)} if details else {})}
