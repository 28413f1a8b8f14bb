"""A role create resolves its securable objects in a snapshot before its write, and the write verifies
them by id: two replicas with authorization on, driven with the failpoint role.after_resolve (the
objects resolved, nothing written yet).

- SQLite: replica a's create of a role naming 1,000 objects (the cap) is paused right after their
  resolution; replica b's write in another metalake answers at once, and a's create then answers
  200. Off (GRAVIMETA_HA_DISABLE=role_resolve_in_write: resolved one by one inside the write, as
  before) a holds SQLite's write lock while it resolves, and b's write waits behind it.
- PostgreSQL: while a's create is paused, b drops the table it names: the write finds the table's row
  gone, resolves again and answers Gravitino's 400 IllegalMetadataObjectException. b renames the table
  and makes a new one of its name: the privilege goes to the table of that name at commit. Off
  (role_verify: the snapshot's ids written as they are) the drop fails the create with a 500 (the
  foreign key), the rename gives the privilege to the renamed table.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.support import access_seed
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

API = "/api/metalakes"
ADMIN = "admin"
POINT = "role.after_resolve"
#: what a plain write takes on an idle replica, with room for a loaded machine
WRITE_BOUND_S = 3.0


def call(base: str, method: str, path: str, body: Any = None, timeout: float = 60) -> requests.Response:
    auth = "Basic " + base64.b64encode(f"{ADMIN}:x".encode()).decode()
    return requests.request(method, base + path, json=body, headers={"Authorization": auth}, timeout=timeout)


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def replicas_on(backend: str, tmp_path: Any) -> Iterator[tuple[Failpoints, str, str, str]]:
    require_backend(backend)
    fp = Failpoints(tmp_path / "fp")
    env = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": ADMIN}
    with fresh_database(backend, tmp_path) as url:
        started = [ServerProcess(url, workers=1, env={**env, **fp.env(tag)}, log_path=tmp_path / f"{tag}.log")
                   for tag in "ab"]
        try:
            start_all(*started)
            yield fp, started[0].url, started[1].url, url
        finally:
            fp.clear()
            discard(*started)


@pytest.fixture
def sqlite_replicas(tmp_path):
    yield from replicas_on("sqlite", tmp_path)


@pytest.fixture
def pg_replicas(tmp_path):
    yield from replicas_on("postgresql", tmp_path)


def securable(kind: str, full_name: str, privilege: str) -> dict[str, Any]:
    return {"fullName": full_name, "type": kind, "privileges": [{"name": privilege, "condition": "allow"}]}


@pytest.mark.slow
def test_a_big_role_create_on_a_sqlite_store_holds_no_other_write(sqlite_replicas):
    fp, a, b, db = sqlite_replicas
    for metalake in ("m", "other"):
        ok(call(b, "POST", API, {"name": metalake}))
    engine = create_store_engine(db)
    try:
        catalogs = sorted(access_seed.seed(engine, "m", "catalog", [f"k{i:04d}" for i in range(999)]))
    finally:
        engine.dispose()
    objects = [securable("metalake", "m", "CREATE_CATALOG"), *(securable("catalog", c, "USE_CATALOG") for c in catalogs)]
    fp.arm(POINT, tag="a")
    with ThreadPoolExecutor(2) as pool:
        creating = pool.submit(call, a, "POST", f"{API}/m/roles", {"name": "big", "securableObjects": objects})
        paused = fp.wait_reached(POINT, tag="a", timeout=120)  # 1,000 objects resolved, nothing written
        writing = pool.submit(call, b, "POST", f"{API}/other/tags", {"name": "t"}, 60)
        try:
            writing.result(WRITE_BOUND_S)
        except TimeoutError:
            pass
        in_time, still_paused = writing.done(), fp.is_paused(paused)
        fp.resume(paused)
        created, answer = creating.result(120), writing.result(60)

    assert still_paused, "replica a went on before the write on b was done: the test proves nothing"
    assert in_time, f"the write on b waited for the role create past {WRITE_BOUND_S}s: {answer.status_code} {answer.text}"
    assert answer.status_code == 200, answer.text
    assert len(ok(created)["role"]["securableObjects"]) == 1000


def paused_create(replicas: Any, objects: list[dict[str, Any]], meanwhile: list[tuple[str, str, Any]]
                  ) -> requests.Response:
    """Role r's create on replica a, paused once its objects are resolved while `meanwhile` runs on b."""
    fp, a, b, _ = replicas
    fp.arm(POINT, tag="a")
    with ThreadPoolExecutor(1) as pool:
        creating = pool.submit(call, a, "POST", f"{API}/m/roles", {"name": "r", "securableObjects": objects})
        paused = fp.wait_reached(POINT, tag="a")
        for method, path, body in meanwhile:
            ok(call(b, method, path, body))
        fp.resume(paused)
        return creating.result(60)


TABLES = f"{API}/m/catalogs/c/schemas/s/tables"
COLUMNS = [{"name": "id", "type": "integer", "nullable": True}]


def tree(base: str) -> None:
    ok(call(base, "POST", API, {"name": "m"}))
    ok(call(base, "POST", f"{API}/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}))
    ok(call(base, "POST", f"{API}/m/catalogs/c/schemas", {"name": "s"}))
    ok(call(base, "POST", TABLES, {"name": "t", "columns": COLUMNS}))


def test_a_table_dropped_while_a_role_naming_it_is_created_fails_the_create_cleanly(pg_replicas):
    b = pg_replicas[2]
    tree(b)
    answer = paused_create(pg_replicas, [securable("catalog", "c", "USE_CATALOG"),
                                         securable("table", "c.s.t", "SELECT_TABLE")],
                           [("DELETE", f"{TABLES}/t", None)])

    assert answer.status_code == 400, f"the create of a role naming a dropped table: {answer.status_code} {answer.text}"
    assert answer.json()["type"] == "IllegalMetadataObjectException"
    assert call(b, "GET", f"{API}/m/roles/r").status_code == 404


def test_a_table_renamed_while_a_role_naming_it_is_created_gives_the_privilege_to_the_table_of_that_name(
        pg_replicas):
    b = pg_replicas[2]
    tree(b)
    answer = paused_create(pg_replicas, [securable("table", "c.s.t", "SELECT_TABLE")], [
        ("PUT", f"{TABLES}/t", {"updates": [{"@type": "rename", "newName": "t2"}]}),
        ("POST", TABLES, {"name": "t", "columns": COLUMNS})])

    assert [o["fullName"] for o in ok(answer)["role"]["securableObjects"]] == ["c.s.t"]
    assert ok(call(b, "GET", f"{API}/m/objects/table/c.s.t/roles"))["names"] == ["r"]
    assert ok(call(b, "GET", f"{API}/m/objects/table/c.s.t2/roles"))["names"] == [], \
        "the role names c.s.t but its privilege went to the table renamed away"
