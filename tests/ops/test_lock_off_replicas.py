"""Several replicas on one store with the distributed lock off (the default) are allowed but never
silent: each says so in its log at start and on every node heartbeat, in a gauge, in
/api/admin/locks, in `gravimeta locks` and in its readiness details. One replica alone (however many
gunicorn workers it has) says nothing."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from gravimeta.concurrency.node_registry import NodeRegistry
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.ops.conftest import check, ready_status, wait_until
from tests.support.databases import fresh_database

LOCK_OFF = {"GRAVIMETA_DISTRIBUTED_LOCK": "false"}


@pytest.fixture
def pg_store(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        yield url


def gauge(url: str, name: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=10).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def unsafe_lines(log_path) -> list[str]:
    return [line for line in log_path.read_text().splitlines() if "UNSAFE: the distributed lock is OFF" in line]


def test_a_second_lock_off_replica_on_the_same_store_is_reported_everywhere(serve, pg_store, tmp_path):
    first = serve(pg_store, workers=2, env=LOCK_OFF)

    def both_workers_registered() -> dict:
        found = requests.get(f"{first.url}/api/admin/locks", timeout=10).json()
        return found if len([n for n in found["nodes"] if n["live"]]) == 2 else {}

    body = wait_until("both workers of the first replica in gm_node", both_workers_registered, timeout=30)
    assert len([n for n in body["nodes"] if n["live"]]) == 2  # two worker processes ...
    assert body["warnings"] == []  # ... of one replica: nothing to report
    assert "warning" not in check(ready_status(first)[1], "distributedLock")["details"]
    assert unsafe_lines(first.log_path) == []

    second = serve(pg_store, workers=2, env=LOCK_OFF)
    first_node = body["nodes"][0]["node"].rsplit(":", 1)[0]
    assert unsafe_lines(second.log_path), "the second replica did not say so at start"
    assert first_node in unsafe_lines(second.log_path)[0]
    assert gauge(second.url, "gravimeta_lock_off_peer_replicas") == 1

    status, ready = ready_status(second)
    assert status == 200  # a warning, not a reason to stop serving: the flag stays off by default
    details = check(ready, "distributedLock")["details"]
    assert details["enabled"] == "false" and details["lockOffReplicas"] == first_node
    assert details["warning"].startswith("UNSAFE: the distributed lock is OFF on this replica")

    for replica in (first, second):
        warnings = requests.get(f"{replica.url}/api/admin/locks", timeout=10).json()["warnings"]
        assert len(warnings) == 1 and warnings[0].startswith("UNSAFE: 2 live replicas share this store"), warnings

    cli = subprocess.run([sys.executable, "-m", "gravimeta", "--store-url", pg_store, "locks"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines()[1].startswith("UNSAFE: 2 live replicas share this store with the distributed lock OFF")


def test_a_lock_off_replica_says_it_again_on_every_node_heartbeat(pg_store, caplog):
    engine = create_store_engine(pg_store)
    mine, other = (NodeRegistry(engine, name, False, "NONE", live_window_ms=90_000) for name in ("mine", "other"))
    try:
        mine.register()
        other.register()
        with caplog.at_level(logging.ERROR, logger="gravimeta.concurrency.node_registry"):
            for _ in range(3):
                mine.beat()
        assert len([r for r in caplog.records if "UNSAFE" in r.getMessage()]) == 3
        assert mine.lock_off_replicas == ["other"]
    finally:
        engine.dispose()



def test_a_mixed_rollout_is_reported_on_every_node_heartbeat_too(pg_store, caplog):
    engine = create_store_engine(pg_store)
    off = NodeRegistry(engine, "off", False, "NONE", live_window_ms=90_000)
    on = NodeRegistry(engine, "on", True, "LEASE_TABLE", live_window_ms=90_000)
    try:
        off.register()
        on.register()
        with caplog.at_level(logging.WARNING, logger="gravimeta.concurrency.node_registry"):
            for _ in range(2):
                on.beat()
        assert len([r for r in caplog.records if "mixed rollout" in r.getMessage()]) == 2
        assert on.lock_off_replicas == []  # the lock is on here: not the lock-off warning
    finally:
        engine.dispose()
