"""Graceful shutdown with a real server: a SIGTERM'd gunicorn lets the in-flight structural operation
finish (graceful_timeout), the coordinator releases its claim, and the worker_exit hook stops the
heartbeat and removes the worker's gm_node row, so no claim or node row outlives the server."""

from __future__ import annotations

import os
import signal
import threading
import time

import requests
from sqlalchemy import create_engine, text

from tests.connectors.stub_process import StubProcess


def _count(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def test_sigterm_lets_a_slow_structural_operation_finish_and_leaves_no_claim_or_node_row(start_server, tmp_path):
    stub = StubProcess(tmp_path / "hive").start()
    try:
        server = start_server(env={"GRAVIMETA_DISTRIBUTED_LOCK": "true"}, workers=1)
        base = f"{server.url}/api/metalakes"
        requests.post(base, json={"name": "m"}, timeout=10).raise_for_status()
        requests.post(f"{base}/m/catalogs", timeout=10, json={
            "name": "c", "type": "relational", "provider": "hive",
            "properties": {"metastore.uris": stub.uri, "client.timeout-ms": "20000"},
        }).raise_for_status()
        requests.post(f"{base}/m/catalogs/c/schemas", json={"name": "s"}, timeout=10).raise_for_status()
        assert _count(server.store_url, "gm_node") == 1
        stub.fault("latency", ms=2500, ops=["create_table"])

        result: dict[str, requests.Response] = {}
        create = threading.Thread(target=lambda: result.setdefault("r", requests.post(
            f"{base}/m/catalogs/c/schemas/s/tables", timeout=30,
            json={"name": "slow", "columns": [{"name": "id", "type": "integer"}]})))
        create.start()
        deadline = time.monotonic() + 10
        while not requests.get(f"{server.url}/api/admin/locks", timeout=5).json()["claims"]:
            assert time.monotonic() < deadline, "the create never took its claim"
            time.sleep(0.02)

        assert server.process is not None
        os.killpg(server.process.pid, signal.SIGTERM)  # the master and its worker, like a container stop
        create.join(30)
        assert result["r"].status_code == 200, result["r"].text
        assert server.process.wait(30) == 0
        assert stub.raw("GET", "/databases/s/tables/slow")[0] == 200
        assert _count(server.store_url, "gm_scope_lease") == 0
        assert _count(server.store_url, "gm_node") == 0
    finally:
        stub.stop()
