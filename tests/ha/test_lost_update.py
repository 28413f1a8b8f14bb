"""No lost updates across replicas: property changes of one entity sent concurrently through two
gunicorn replicas (2 workers each) sharing one database all survive. Each update
reads the entity row FOR UPDATE, applies the change and bumps the version in one transaction, so a
concurrent update waits for it and then works on its result.

With GRAVIMETA_HA_DISABLE=no_row_lock (set for the replicas too) updates read the row without FOR
UPDATE. On PostgreSQL and MariaDB two updates then start from the same properties and the second
overwrites the first one's key, although both were acknowledged. SQLite keeps every key even then:
its write transactions are BEGIN IMMEDIATE, so they never overlap at all."""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.support.servers import ServerProcess, discard, start_all

REPLICA_ENV = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_LEASE_TTL_MS": "5000"}
KEYS_PER_ENTITY = 40  # keys named gravitino.* are accepted on catalogs of every provider
CLIENT_THREADS = 16
API = "/api/metalakes"
M, C, S, T = "m", "c", "s", "t"
ENTITIES = {
    "metalake": f"{API}/{M}",
    "catalog": f"{API}/{M}/catalogs/{C}",
    "schema": f"{API}/{M}/catalogs/{C}/schemas/{S}",
    "table": f"{API}/{M}/catalogs/{C}/schemas/{S}/tables/{T}",
}


def create_tree(base: str) -> None:
    column = {"name": "id", "type": "integer", "comment": None, "nullable": True, "autoIncrement": False}
    for path, body in [
        (API, {"name": M}),
        (f"{API}/{M}/catalogs", {"name": C, "type": "relational", "provider": "memory", "comment": None}),
        (f"{API}/{M}/catalogs/{C}/schemas", {"name": S}),
        (f"{API}/{M}/catalogs/{C}/schemas/{S}/tables", {"name": T, "columns": [column]}),
    ]:
        response = requests.post(base + path, json=body, timeout=30)
        assert response.status_code == 200, response.text


def set_property(base: str, path: str, key: str) -> int:
    update = {"@type": "setProperty", "property": key, "value": key}
    try:
        return requests.put(base + path, json={"updates": [update]}, timeout=30).status_code
    except requests.RequestException:
        return -1


def test_concurrent_property_changes_through_two_replicas_are_never_lost(db_url, tmp_path):
    replicas = [ServerProcess(db_url, env=REPLICA_ENV, log_path=tmp_path / f"{name}.log") for name in "ab"]
    try:
        start_all(*replicas)
        create_tree(replicas[0].url)
        jobs = [(kind, f"gravitino.test.k{i:03d}") for kind in ENTITIES for i in range(KEYS_PER_ENTITY)]
        random.Random(4).shuffle(jobs)
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            statuses = list(pool.map(
                lambda ij: set_property(replicas[ij[0] % 2].url, ENTITIES[ij[1][0]], ij[1][1]), enumerate(jobs)
            ))
        acknowledged = [job for job, status in zip(jobs, statuses, strict=True) if status == 200]
        lost = set()  # read back through both replicas
        for kind, path in ENTITIES.items():
            for replica in replicas:
                body = requests.get(replica.url + path, timeout=30).json()
                properties = body[kind]["properties"] or {}
                lost |= {(kind, key) for k, key in acknowledged if k == kind and key not in properties}
    finally:
        discard(*replicas)

    assert len(acknowledged) >= len(jobs) // 2, f"most updates failed: {Counter(statuses)}"
    assert not lost, f"{len(lost)} acknowledged property changes lost (of {len(acknowledged)}), e.g. {sorted(lost)[:5]}"
    print(f"\n{len(acknowledged)}/{len(jobs)} acknowledged ({dict(Counter(statuses))}), 0 lost")
