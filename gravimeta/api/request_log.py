"""Structured request logs: one JSON line per request on the `gravimeta.request` logger.

Every request gets an id: the caller's X-Request-Id when it is a sane token (at most 128 characters of
letters, digits and `._:-`, so it cannot forge log lines), else a fresh one. The id is echoed in the
response's X-Request-Id header and logged with method, path, status, duration and the acting user. An
error answer adds `error` (its type), `reason` (the message the client got) and, when there is one,
`detail`: what the client must not see (absolute file paths, database hosts, ports and roles), so the
operator finds it under the request id the client reports (api/errors.py note_refusal).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from datetime import UTC, datetime
from typing import TextIO

from flask import Flask, Response, g, request

log = logging.getLogger("gravimeta.request")
HEADER = "X-Request-Id"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def request_id() -> str:
    """This request's id (generated on first use outside a request hook, e.g. in tests)."""
    if "request_id" not in g:
        incoming = request.headers.get(HEADER, "")
        g.request_id = incoming if _SANE_ID.fullmatch(incoming) else os.urandom(16).hex()  # as uuid4().hex, cheaper
    return str(g.request_id)


_second: tuple[int, str] = (-1, "")  # the last whole second formatted, shared by the threads (swapped whole)


def timestamp() -> str:
    """Now as `datetime.now(UTC).isoformat(timespec="milliseconds")` writes it, formatting each second once."""
    global _second
    now = time.time_ns()
    second, millis = divmod(now // 1_000_000, 1000)
    cached = _second
    if cached[0] != second:
        cached = _second = (second, datetime.fromtimestamp(second, UTC).isoformat()[:-len("+00:00")])
    return f"{cached[1]}.{millis:03d}+00:00"


def register_request_log(app: Flask) -> None:
    @app.before_request
    def _start() -> None:
        g.request_started = time.perf_counter()
        request_id()

    @app.after_request
    def _finish(response: Response) -> Response:
        response.headers[HEADER] = request_id()
        started = g.get("request_started")
        record = {
            "ts": timestamp(),
            "requestId": request_id(),
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "durationMs": round((time.perf_counter() - started) * 1000, 2) if started else None,
            "user": g.get("user") or "anonymous",
        }
        if request.query_string:
            record["query"] = request.query_string.decode("latin-1")
        record.update(g.get("refusal") or {})  # an error answer: its type, message and server-only detail
        log.info(json.dumps(record, ensure_ascii=True))
        return response


def configure_json_lines(stream: TextIO | None = None) -> None:
    """Print request records as bare JSON lines (not wrapped in the text log format); idempotent."""
    if any(getattr(h, "gravimeta_json", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.gravimeta_json = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
