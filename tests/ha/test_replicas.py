"""End to end through real gunicorn replicas sharing one database: structural changes race through
both replicas with the flag on, every worker registers itself, and a replica started with the other
flag setting warns about the mixed rollout."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from sqlalchemy import func, select

from gravimeta.concurrency.tables import node, scope_lease
from gravimeta.store.database import create_store_engine
from tests.support.servers import ServerProcess, discard

pytestmark = pytest.mark.slow  # tens of seconds each: start them first

FLAG_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": "3000"}


def post(base: str, path: str, body: dict) -> requests.Response:
    return requests.post(f"{base}/api/metalakes{path}", json=body, timeout=30)


def test_two_flag_on_replicas_serialize_structural_changes(db_url, tmp_path):
    a = ServerProcess(db_url, env=FLAG_ON, log_path=tmp_path / "a.log").start()
    b = ServerProcess(db_url, env=FLAG_ON, log_path=tmp_path / "b.log").start()
    off = None
    try:
        assert post(a.url, "", {"name": "m", "properties": {}}).status_code == 200
        assert post(b.url, "/m/catalogs", {"name": "c", "type": "relational", "provider": "memory",
                                          "properties": {}}).status_code == 200
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(
                lambda i: post((a, b)[i % 2].url, "/m/catalogs/c/schemas", {"name": f"s{i}"}).status_code,
                range(24),
            ))
        assert statuses == [200] * 24
        listed = requests.get(f"{a.url}/api/metalakes/m/catalogs/c/schemas", timeout=10).json()["identifiers"]
        assert sorted(i["name"] for i in listed) == sorted(f"s{i}" for i in range(24))

        off = ServerProcess(db_url, log_path=tmp_path / "off.log").start()
        engine = create_store_engine(db_url)
        with engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(scope_lease)) == 0
        deadline = time.monotonic() + 15  # gunicorn starts the second worker of a replica on its own time
        while True:
            with engine.connect() as conn:
                flags = sorted(bool(r) for r in conn.scalars(select(node.c.lock_enabled)))
            if flags == [False, False, True, True, True, True] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        engine.dispose()
        assert flags == [False, False, True, True, True, True]  # 2 workers per replica
    finally:
        discard(*(server for server in (a, b, off) if server is not None))
    assert "mixed rollout" in (tmp_path / "off.log").read_text()
