"""Access decisions when replicas race (gravimeta/api/door.py). Two replicas with the distributed lock
on (LEASE_TABLE) and authorization on, on PostgreSQL.

A drop passes the door on replica a, and is paused there (failpoint access.after_check) before its
dispatcher takes the claim. Meanwhile, on replica b, the object is dropped and created again under the
same name, by someone else, for someone else. When a's drop goes on, it checks again once its claim is
held (the coordinator's `when_held`), sees that the object of that name is no longer the caller's, and
answers 403: the new object survives. With GRAVIMETA_HA_DISABLE=no_access_recheck (the replicas
inherit it) the second check is skipped, and the first caller drops an object it was never allowed to.
"""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess

API = "/api/metalakes"
ADMIN = "admin"
POINT = "access.after_check"


def call(base: str, method: str, path: str, body: Any = None, user: str = ADMIN) -> requests.Response:
    auth = "Basic " + base64.b64encode(f"{user}:x".encode()).decode()
    return requests.request(method, base + path, json=body, headers={"Authorization": auth}, timeout=60)


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def replicas(tmp_path):
    """Replicas a and b on one fresh PostgreSQL database; failpoints armed per replica."""
    require_backend("postgresql")
    fp = Failpoints(tmp_path / "fp")
    env = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": ADMIN}
    with fresh_database("postgresql", tmp_path) as url:
        started = [ServerProcess(url, workers=1, env={**env, **fp.env(tag)}, log_path=tmp_path / f"{tag}.log")
                   for tag in "ab"]
        try:
            with ThreadPoolExecutor(2) as starting:
                list(starting.map(ServerProcess.start, started))
            yield fp, started[0].url, started[1].url
        finally:
            fp.clear()
            for server in started:
                server.stop()


def catalog(base: str, name: str, owner: str) -> None:
    ok(call(base, "POST", f"{API}/m/catalogs", {"name": name, "type": "relational", "provider": "memory"}))
    ok(call(base, "PUT", f"{API}/m/owners/catalog/{name}", {"name": owner, "type": "USER"}))


def test_a_drop_checked_before_a_drop_and_recreate_does_not_drop_the_new_object(replicas):
    fp, a, b = replicas
    ok(call(b, "POST", API, {"name": "m"}))
    for user in ("alice", "bob"):
        ok(call(b, "POST", f"{API}/m/users", {"name": user}))
    catalog(b, "c", "alice")
    fp.arm(POINT, tag="a")
    with ThreadPoolExecutor(1) as pool:
        dropping = pool.submit(call, a, "DELETE", f"{API}/m/catalogs/c?force=true", None, "alice")
        paused = fp.wait_reached(POINT, tag="a")  # alice's drop passed the door: she owns c
        assert ok(call(b, "DELETE", f"{API}/m/catalogs/c?force=true"))["dropped"] is True
        catalog(b, "c", "bob")  # the same name, another catalog, bob's
        fp.resume(paused)
        answer = dropping.result(60)

    assert answer.status_code == 403, f"alice's drop removed bob's new catalog: {answer.status_code} {answer.text}"
    assert answer.json()["type"] == "ForbiddenException"
    owner = ok(call(b, "GET", f"{API}/m/owners/catalog/c"))["owner"]
    assert owner == {"name": "bob", "type": "USER"}
