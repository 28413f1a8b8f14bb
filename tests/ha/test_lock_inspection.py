"""Operators can see live claims and replicas: the admin endpoint, `gravimeta locks`, and /metrics."""

from __future__ import annotations

import json
import subprocess
import sys

from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import NameIdentifier


def _services(app):
    return app.extensions["gravimeta"]


def test_a_held_claim_is_listed_by_the_admin_endpoint_and_the_cli_until_released(sqlite_url, unique):
    app = create_app(Settings(store_url=sqlite_url, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE"))
    client = app.test_client()
    claim = _services(app).coordinator.claims.claim(NameIdentifier.of(f"m{unique}", "c"))
    try:
        body = client.get("/api/admin/locks").get_json()
        assert body["code"] == 0
        assert body["distributedLock"] == {"enabled": True, "backend": "LEASE_TABLE"}
        assert [c["path"] for c in body["claims"]] == [f"/m{unique}/c"]
        assert body["claims"][0]["live"] is True
        assert any(n["live"] and n["lockEnabled"] for n in body["nodes"])

        cli = subprocess.run(
            [sys.executable, "-m", "gravimeta", "--store-url", sqlite_url, "locks", "--json"],
            capture_output=True, text=True, timeout=60, check=True,
        )
        assert [c["path"] for c in json.loads(cli.stdout)["claims"]] == [f"/m{unique}/c"]
    finally:
        claim.release()
    assert client.get("/api/admin/locks").get_json()["claims"] == []


def test_metrics_count_claims_and_snapshot_reads(sqlite_url, unique):
    app = create_app(Settings(store_url=sqlite_url, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE"))
    client = app.test_client()

    def sample(name: str) -> float:
        text = client.get("/metrics").get_data(as_text=True)
        lines = [line for line in text.splitlines() if line.startswith(name)]
        return float(lines[0].rsplit(" ", 1)[1]) if lines else 0.0

    claims_before = sample('gravimeta_claim_acquire_seconds_count{backend="LEASE_TABLE"}')
    reads_before = sample("gravimeta_snapshot_read_transactions_total")
    assert client.post("/api/metalakes", json={"name": f"m{unique}"}).status_code == 200
    assert client.get(f"/api/metalakes/m{unique}").status_code == 200
    assert sample('gravimeta_claim_acquire_seconds_count{backend="LEASE_TABLE"}') == claims_before + 1
    assert sample("gravimeta_snapshot_read_transactions_total") >= reads_before + 1
