"""/metrics as an operator scrapes it: a real `gravimeta serve` with 2 gunicorn workers and the lock on,
traffic through both workers, a claim held while another waits for it, a worker killed: one scrape must
hold the claim, contention, heartbeat and request metrics summed over every worker, the killed one
included, with a clean Content-Type; and the per-process sample files must not outlive the server."""

from __future__ import annotations

import json
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from tests.ops.conftest import claim_held, wait_until, worker_pids

LOCK_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": "1500"}
# an endpoint only this test calls (the server fixture polls /api/version until it answers, and a poll that
# timed out on the client may still be counted after the test read its baseline)
LIVE_REQUESTS = ("gravimeta_http_requests_total", {"method": "GET", "endpoint": "health.live", "status": "200"})


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = requests.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def live_requests_by_pid(metrics_dir: Path) -> dict[int, float]:
    """What each process's own sample file says it answered of GET /api/health/live."""
    found: dict[int, float] = {}
    for path in metrics_dir.glob("counter_*.db"):
        pid = int(path.stem.split("_")[1])
        for key, count, _ts in MmapedDict(str(path), read_mode=True).read_all_values():
            _metric, name, labels, _help = json.loads(key)
            if name == LIVE_REQUESTS[0] and labels == LIVE_REQUESTS[1]:
                found[pid] = found.get(pid, 0.0) + count
    return found


def test_one_scrape_sums_claims_contention_heartbeats_and_requests_over_all_workers_even_exited_ones(serve, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    server = serve(workers=2, env={**LOCK_ON, "TMPDIR": str(scratch)})
    api = f"{server.url}/api/metalakes"
    metrics_dirs = list(scratch.glob("gravimeta-metrics-*"))
    assert len(metrics_dirs) == 1, metrics_dirs
    metrics_dir = metrics_dirs[0]

    # traffic until both workers have answered some of it (each process writes its own sample file)
    sent = 0
    with ThreadPoolExecutor(8) as pool:
        for _ in range(30):
            statuses = list(pool.map(lambda _: requests.get(f"{server.url}/api/health/live", timeout=10).status_code,
                                     range(16)))
            assert statuses == [200] * 16
            sent += 16
            if len(live_requests_by_pid(metrics_dir)) == 2:
                break
    by_pid = live_requests_by_pid(metrics_dir)
    assert set(by_pid) == worker_pids(server.process.pid), by_pid

    # structural work under claims, and one claim that waits for another (contention): this test
    # process holds the catalog's claim while the server creates a schema in it
    assert requests.post(api, json={"name": "m"}, timeout=10).status_code == 200
    assert requests.post(f"{api}/m/catalogs", timeout=10, json={
        "name": "c", "type": "relational", "provider": "memory", "properties": {}}).status_code == 200
    answers: list[int] = []
    waiting = threading.Thread(target=lambda: answers.append(
        requests.post(f"{api}/m/catalogs/c/schemas", json={"name": "s1"}, timeout=30).status_code))
    with claim_held(server.store_url, "m", "c"):
        waiting.start()
        wait_until("the schema create waits for the catalog's claim", lambda: value(
            scrape(server.url), "gravimeta_claim_contention_waits_total", backend="LEASE_TABLE") >= 1)
    waiting.join(30)
    assert answers == [200]
    assert requests.post(f"{api}/m/catalogs/c/schemas", json={"name": "s2"}, timeout=10).status_code == 200

    # a worker that answered part of the traffic dies; its counts must stay in the sum
    victim = max(by_pid, key=lambda pid: by_pid[pid])
    os.kill(victim, signal.SIGKILL)
    wait_until("gunicorn replaces the killed worker", lambda: len(worker_pids(server.process.pid) - {victim}) == 2)
    answered = [requests.get(f"{server.url}/api/health/live", timeout=10).status_code for _ in range(4)]
    assert answered == [200] * 4
    sent += 4

    response = requests.get(f"{server.url}/metrics", timeout=10)
    assert response.headers["Content-Type"] == "text/plain; version=1.0.0; charset=utf-8"
    samples = scrape(server.url)
    assert value(samples, LIVE_REQUESTS[0], **LIVE_REQUESTS[1]) == sent
    assert value(samples, "gravimeta_claim_acquire_seconds_count", backend="LEASE_TABLE") >= 4
    assert value(samples, "gravimeta_claim_contention_waits_total", backend="LEASE_TABLE") >= 1
    # heartbeats run every TTL/3 (renewals) and every TTL (node rows): wait for one of each, however young
    # the workers are
    wait_until("renewals and node heartbeats in the scrape", lambda: (s := scrape(server.url)) and all(
        value(s, "gravimeta_heartbeat_runs_total", task=task) >= 1 for task in ("renew-claims", "node-registry")))
    assert value(samples, "gravimeta_http_request_duration_seconds_count", method="POST",
                 endpoint="schemas.create_schema") == 2

    server.stop(signal.SIGTERM, timeout=40)
    assert not metrics_dir.exists(), "the per-process metric files outlived the server"
    assert list(scratch.glob("gravimeta-metrics-*")) == []
