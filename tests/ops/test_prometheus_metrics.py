"""/prometheus/metrics (the path Gravitino serves Prometheus text on) answers the same scrape as
/metrics, and the scrape carries each live worker's process figures (CPU, resident memory, open file
descriptors, start time) and database pool figures (checked out, overflow, wait time), one series per
worker pid, on a real `gravimeta serve` with 2 workers."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.ops.conftest import wait_until, worker_pids

PER_WORKER = ("gravimeta_worker_cpu_seconds", "gravimeta_worker_resident_memory_bytes", "gravimeta_worker_open_fds",
              "gravimeta_worker_start_time_seconds", "gravimeta_db_pool_checked_out", "gravimeta_db_pool_overflow",
              "gravimeta_db_pool_wait_seconds", "gravimeta_db_pool_checkouts")


def per_worker(text: str) -> dict[str, dict[int, float]]:
    found: dict[str, dict[int, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in PER_WORKER:
                found.setdefault(sample.name, {})[int(sample.labels["pid"])] = sample.value
    return found


def test_prometheus_path_serves_process_and_pool_metrics_of_every_worker(serve):
    server = serve(workers=2)
    pids = worker_pids(server.process.pid)
    assert len(pids) == 2

    def both_workers_reported():
        with ThreadPoolExecutor(8) as pool:  # traffic through both workers: each checks out store connections
            list(pool.map(lambda _: requests.get(f"{server.url}/api/metalakes", timeout=10), range(16)))
        response = requests.get(f"{server.url}/prometheus/metrics", timeout=10)
        assert response.status_code == 200, response.text
        found = per_worker(response.text)
        return found if all(set(found.get(name, {})) == pids for name in PER_WORKER) else None

    found = wait_until("every worker's process and pool figures in one scrape", both_workers_reported, timeout=30)
    now = time.time()
    for pid in pids:
        assert found["gravimeta_worker_resident_memory_bytes"][pid] > 10 * 1024 * 1024
        assert found["gravimeta_worker_open_fds"][pid] >= 3
        assert found["gravimeta_worker_cpu_seconds"][pid] > 0
        assert now - 3600 < found["gravimeta_worker_start_time_seconds"][pid] <= now
        assert found["gravimeta_db_pool_checkouts"][pid] >= 1
        assert found["gravimeta_db_pool_wait_seconds"][pid] >= 0
        assert found["gravimeta_db_pool_checked_out"][pid] >= 0
    plain = requests.get(f"{server.url}/metrics", timeout=10)
    assert plain.status_code == 200 and "gravimeta_worker_open_fds" in plain.text
