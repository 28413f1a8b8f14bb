"""The hive stub started as an operator would (no `--test-mode`): fault administration is off for anyone
who can reach it, fence tokens outside 0..2^53 are refused, the fence barrier gravimeta's repair uses
still works, and the stub says at start, in a header of every reply and on its root page that it is
not a production metastore.

Before this change an unauthenticated `PUT /_faults/crash` ended the process, and `POST /fences` with a
token of 2^62 made every later fenced create on that key fail with StaleFence (409) forever."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from connectors.base import CatalogContext
from connectors.fencing import MAX_TOKEN, TOKEN_HEADER, Fence
from connectors.hive import HiveConnector
from gravimeta.entities import Schema
from tests.connectors.stub_process import StubProcess

HEADER = "X-Gravimeta-Hive-Stub"


@pytest.fixture
def production_stub(tmp_path) -> Iterator[StubProcess]:
    stub = StubProcess(tmp_path / "stub", test_mode=False).start()
    yield stub
    stub.stop()


def call(stub: StubProcess, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{stub.uri}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}"), dict(exc.headers)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("PUT", "/_faults/crash", {"calls": 1}), ("PUT", "/_faults/hang", {"count": 5, "seconds": 600}),
    ("PUT", "/_faults/fail", {"count": 100}), ("GET", "/_faults", None), ("DELETE", "/_faults", None),
    ("POST", "/_faults/release", None)])
def test_fault_administration_is_off_without_test_mode(production_stub, method, path, body):
    status, answer, _ = call(production_stub, method, path, body)
    assert status == 403 and answer["error"] == "Forbidden" and "--test-mode" in answer["message"], (status, answer)
    status, answer, _ = call(production_stub, "POST", "/databases", {"name": "after"})  # any call would crash
    assert status == 201, (status, answer)
    assert production_stub.process is not None and production_stub.process.poll() is None


@pytest.mark.parametrize("token", [str(2**62), str(MAX_TOKEN + 1), "-1", "99999999999999999999999999999"])
def test_absurd_fence_tokens_are_refused_and_change_nothing(production_stub, token):
    headers = {"X-Gravimeta-Fence-Scope": "/c1", TOKEN_HEADER: token, "X-Gravimeta-Fence-Related": "1"}
    status, answer, _ = call(production_stub, "POST", "/fences", headers=headers)
    assert status == 400 and "out of range" in answer["message"], (status, answer)
    connector = HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": production_stub.uri}))
    connector.create_schema(Schema("s"), fence=Fence("/c1", 7, related=True))  # not stale: 2^62 was not kept
    assert connector.list_schemas() == ["s"]


def test_the_repair_fence_barrier_still_works_without_test_mode(production_stub):
    connector = HiveConnector(CatalogContext("lake", "hv", {"metastore.uris": production_stub.uri}))
    connector.fence_barrier(Fence("/c1", MAX_TOKEN))  # the largest allowed token is accepted...
    status, answer, _ = call(production_stub, "POST", "/databases", {"name": "old"},
                             {"X-Gravimeta-Fence-Scope": "/c1", TOKEN_HEADER: "5"})
    assert status == 409 and answer["error"] == "StaleFence", (status, answer)  # ...and refuses older calls


def test_the_stub_says_it_is_not_a_production_metastore(production_stub):
    status, answer, headers = call(production_stub, "GET", "/")
    assert status == 200 and "NOT a production Hive metastore" in answer["service"] and answer["testMode"] is False
    for method, path in (("GET", "/health"), ("GET", "/databases"), ("GET", "/_faults"), ("GET", "/nowhere")):
        assert "not a production metastore" in call(production_stub, method, path)[2].get(HEADER, ""), path
    log = (production_stub.data_dir / "stub.log").read_text()
    assert "WARNING: gravimeta hive-stub: a test double" in log and "NOT a production Hive metastore" in log


def test_test_mode_keeps_fault_injection(stub):
    """The harness's stub (tests/connectors/stub_process.py starts it with --test-mode) still faults."""
    assert stub.fault("fail", count=1)["active"], "the fault was not registered"
    status, answer, _ = call(stub, "GET", "/databases")
    assert status == 500 and answer["error"] == "InjectedFailure"
    assert "fault injection (/_faults) is ON" in (stub.data_dir / "stub.log").read_text()
