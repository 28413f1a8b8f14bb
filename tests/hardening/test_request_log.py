"""Structured request logs: one JSON line per request with id, method, path, status, duration and user;
the caller's X-Request-Id is echoed (when sane), otherwise one is generated."""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.error
import urllib.request


def _records(caplog) -> list[dict]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "gravimeta.request"]


def test_every_request_is_one_json_record_with_its_id(make_app, caplog):
    client = make_app().test_client()
    with caplog.at_level(logging.INFO, logger="gravimeta.request"):
        response = client.get("/api/metalakes/nope", headers={"X-Request-Id": "abc-123"})
    assert response.headers["X-Request-Id"] == "abc-123"
    [record] = _records(caplog)
    assert record["requestId"] == "abc-123"
    assert (record["method"], record["path"], record["status"], record["user"]) == (
        "GET", "/api/metalakes/nope", 404, "anonymous")
    assert isinstance(record["durationMs"], float) and record["durationMs"] >= 0


def test_a_missing_or_hostile_request_id_is_replaced_by_a_generated_one(make_app, caplog):
    client = make_app().test_client()
    with caplog.at_level(logging.INFO, logger="gravimeta.request"):
        plain = client.get("/api/version")
        forged = client.get("/api/version", headers={"X-Request-Id": 'x" \\n{"status": 200}'})
        long = client.get("/api/version", headers={"X-Request-Id": "a" * 500})
    ids = [r.headers["X-Request-Id"] for r in (plain, forged, long)]
    assert all(len(i) == 32 for i in ids) and len(set(ids)) == 3
    assert [r["requestId"] for r in _records(caplog)] == ids


def test_the_log_names_the_authenticated_user_and_401s_are_logged_too(make_app, caplog):
    client = make_app(authenticators="simple", simple_allow_anonymous=False).test_client()
    auth = {"Authorization": "Basic " + base64.b64encode(b"zoe:x").decode()}
    with caplog.at_level(logging.INFO, logger="gravimeta.request"):
        client.get("/api/metalakes", headers=auth)
        client.get("/api/metalakes")
    records = _records(caplog)
    assert [(r["status"], r["user"]) for r in records] == [(200, "zoe"), (401, "anonymous")]


def test_the_server_writes_bare_json_lines(start_server):
    server = start_server()
    request = urllib.request.Request(f"{server.url}/api/metalakes/none?x=1", headers={"X-Request-Id": "rid-42"})
    try:
        urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404 and exc.headers["X-Request-Id"] == "rid-42"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
        found = [line for line in lines if line.get("requestId") == "rid-42"]
        if found:
            break
        time.sleep(0.05)
    assert found and found[0]["status"] == 404 and found[0]["query"] == "x=1"
