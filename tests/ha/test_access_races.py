"""Access decisions, roles and grants when replicas race. Two replicas with the distributed lock on
(LEASE_TABLE) and authorization on, on PostgreSQL; each test drives them through one interleaving with
failpoints, and names the mechanism that makes it safe and the switch that removes it
(GRAVIMETA_HA_DISABLE, which the replicas inherit):

- a structural change passes the door on replica a and is paused there (access.after_check) before its
  claim; meanwhile, on b, the object is dropped and made again for someone else, or the privilege the
  change rests on is revoked. Once its claim is held, the change checks again (the coordinator's
  `when_held`) and answers 403. Without it (no_access_recheck) the stale decision goes through.
- a revoke on one replica is seen by the very next request on the other: the door reads the caller's
  roles and privileges from the database for each request. With a per-replica cache of those facts
  (access_cache, a cache like the one Gravitino keeps) the revoked user goes on for the cache's life.
- a grant of a role to a user, paused with the role's row locked FOR SHARE (role.after_lock), makes a
  deletion of the role on b wait; the deletion then takes the grant with it. A grant of a privilege on a
  table, paused with the table's row locked FOR SHARE, makes a drop of the table wait; the drop then
  takes the grant with it. Without the locks (no_role_lock) the deletion or drop commits first and the
  grant's insert meets the foreign key of a deleted row: a 500 instead of Gravitino's clean answer (the
  foreign keys still keep the orphan out).
- a rename racing a grant on the renamed table: the grant is keyed by the table's id, so it follows
  the rename, and a new table of the old name inherits nothing (no switch: a grant keyed by name is
  not an option of this code).
"""

from __future__ import annotations

import base64
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

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
    """(failpoints, replica a's URL, replica b's URL, the database URL): replicas a and b on one fresh
    PostgreSQL database, failpoints armed per replica."""
    require_backend("postgresql")
    fp = Failpoints(tmp_path / "fp")
    env = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": ADMIN}
    with fresh_database("postgresql", tmp_path) as url:
        started = [ServerProcess(url, workers=1, env={**env, **fp.env(tag)}, log_path=tmp_path / f"{tag}.log")
                   for tag in "ab"]
        try:
            start_all(*started)
            yield fp, started[0].url, started[1].url, url
        finally:
            fp.clear()
            discard(*started)


def catalog(base: str, name: str, owner: str) -> None:
    """Catalog `name` of metalake m, given to `owner`."""
    ok(call(base, "POST", f"{API}/m/catalogs", {"name": name, "type": "relational", "provider": "memory"}))
    ok(call(base, "PUT", f"{API}/m/owners/catalog/{name}", {"name": owner, "type": "USER"}))


def test_a_drop_checked_before_a_drop_and_recreate_does_not_drop_the_new_object(replicas):
    fp, a, b, db = replicas
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


# ---------------------------------------------------------------------- roles


def tree_with_role(base: str) -> None:
    """Metalake m with users bob and carol, catalog c (the admin's) with schema s and table t, and role
    r holding USE_CATALOG, USE_SCHEMA and CREATE_TABLE on c."""
    ok(call(base, "POST", API, {"name": "m"}))
    for user in ("bob", "carol"):
        ok(call(base, "POST", f"{API}/m/users", {"name": user}))
    ok(call(base, "POST", f"{API}/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}))
    ok(call(base, "POST", f"{API}/m/catalogs/c/schemas", {"name": "s"}))
    ok(call(base, "POST", f"{API}/m/catalogs/c/schemas/s/tables", {"name": "t", "columns": COLUMNS}))
    privileges = [{"name": p, "condition": "allow"} for p in ("USE_CATALOG", "USE_SCHEMA", "CREATE_TABLE")]
    ok(call(base, "POST", f"{API}/m/roles", {"name": "r", "securableObjects": [
        {"fullName": "c", "type": "catalog", "privileges": privileges}]}))


COLUMNS = [{"name": "id", "type": "integer", "nullable": True}]
TABLES = f"{API}/m/catalogs/c/schemas/s/tables"


def test_a_create_checked_before_a_revoke_is_refused_under_its_claim(replicas):
    fp, a, b, db = replicas
    tree_with_role(b)
    ok(call(b, "PUT", f"{API}/m/permissions/users/bob/grant", {"roleNames": ["r"]}))
    fp.arm(POINT, tag="a")
    with ThreadPoolExecutor(1) as pool:
        creating = pool.submit(call, a, "POST", TABLES, {"name": "bobs", "columns": COLUMNS}, "bob")
        paused = fp.wait_reached(POINT, tag="a")  # bob's create passed the door: r lets him create
        ok(call(b, "PUT", f"{API}/m/permissions/users/bob/revoke", {"roleNames": ["r"]}))
        fp.resume(paused)
        answer = creating.result(60)

    assert answer.status_code == 403, f"a create went through after its privilege was revoked: {answer.text}"
    assert call(b, "GET", f"{TABLES}/bobs").status_code == 404


def test_a_revoke_on_one_replica_is_seen_by_the_next_request_on_the_other(replicas):
    _, a, b, _ = replicas
    tree_with_role(b)
    ok(call(b, "PUT", f"{API}/m/permissions/users/bob/grant", {"roleNames": ["r"]}))
    assert ok(call(a, "GET", f"{API}/m/catalogs/c", user="bob"))["catalog"]["name"] == "c"
    ok(call(b, "PUT", f"{API}/m/permissions/users/bob/revoke", {"roleNames": ["r"]}))
    answer = call(a, "GET", f"{API}/m/catalogs/c", user="bob")
    assert answer.status_code == 403, f"replica a still let bob in after the revoke committed on b: {answer.text}"
    ok(call(b, "PUT", f"{API}/m/permissions/users/bob/grant", {"roleNames": ["r"]}))
    ok(call(a, "GET", f"{API}/m/catalogs/c", user="bob"))
    privileges = [{"name": "USE_CATALOG", "condition": "allow"}]
    ok(call(b, "PUT", f"{API}/m/permissions/roles/r/catalog/c/revoke", {"privileges": privileges}))
    answer = call(a, "GET", f"{API}/m/catalogs/c", user="bob")
    assert answer.status_code == 403, f"replica a still let bob in after the privilege was revoked: {answer.text}"


def test_a_role_deleted_while_it_is_being_granted_leaves_no_grant_behind(replicas):
    b = replicas[2]
    tree_with_role(b)
    granted, deleted = grant_racing(replicas, ("PUT", f"{API}/m/permissions/users/bob/grant", {"roleNames": ["r"]}),
                                    ("DELETE", f"{API}/m/roles/r", None))

    assert granted.status_code in (200, 400), f"the grant failed: {granted.status_code} {granted.text}"
    assert ok(deleted)["deleted"] is True
    assert ok(call(b, "GET", f"{API}/m/users/bob"))["user"]["roles"] == []


def test_a_table_dropped_while_a_privilege_on_it_is_granted_takes_the_grant_with_it(replicas):
    b = replicas[2]
    tree_with_role(b)
    granted, dropped = grant_racing(replicas, ("PUT", f"{API}/m/permissions/roles/r/table/c.s.t/grant", SELECT),
                                    ("DELETE", f"{TABLES}/t", None))

    assert granted.status_code in (200, 404), f"the grant failed: {granted.status_code} {granted.text}"
    assert ok(dropped)["dropped"] is True
    objects = ok(call(b, "GET", f"{API}/m/roles/r"))["role"]["securableObjects"]
    assert [o["fullName"] for o in objects] == ["c"], "a grant outlived its table"
    ok(call(b, "POST", TABLES, {"name": "t", "columns": COLUMNS}))
    assert ok(call(b, "GET", f"{API}/m/objects/table/c.s.t/roles"))["names"] == []  # the new t inherits nothing


def test_a_grant_racing_a_rename_follows_the_table_to_its_new_name(replicas):
    b = replicas[2]
    tree_with_role(b)
    granted, renamed = grant_racing(replicas, ("PUT", f"{API}/m/permissions/roles/r/table/c.s.t/grant", SELECT),
                                    ("PUT", f"{TABLES}/t", {"updates": [{"@type": "rename", "newName": "t2"}]}))
    ok(granted)
    ok(renamed)

    objects = ok(call(b, "GET", f"{API}/m/roles/r"))["role"]["securableObjects"]
    assert {"fullName": "c.s.t2", "type": "table", "privileges": [{"name": "select_table", "condition": "allow"}]} \
        in objects
    ok(call(b, "POST", TABLES, {"name": "t", "columns": COLUMNS}))
    assert ok(call(b, "GET", f"{API}/m/objects/table/c.s.t/roles"))["names"] == []
    assert ok(call(b, "GET", f"{API}/m/objects/table/c.s.t2/roles"))["names"] == ["r"]


SELECT = {"privileges": [{"name": "SELECT_TABLE", "condition": "allow"}]}


def grant_racing(replicas: Any, grant: tuple[str, str, Any], other: tuple[str, str, Any]
                 ) -> tuple[requests.Response, requests.Response]:
    """The grant on replica a held at `role.after_lock` (its role row locked) while `other` runs on replica
    b until it finishes or waits for a row lock; then the grant goes on. Both answers."""
    fp, a, b, db = replicas
    fp.arm("role.after_lock", tag="a")
    with ThreadPoolExecutor(2) as pool:
        granting = pool.submit(call, a, *grant)
        paused = fp.wait_reached("role.after_lock", tag="a")
        racing = pool.submit(call, b, *other)
        wait_blocked_or_done(db, racing)
        fp.resume(paused)
        return granting.result(60), racing.result(60)


def wait_blocked_or_done(db: str, request: Any, timeout: float = 30.0) -> str:
    """Until `request` has finished or a session of database `db` waits for a row lock."""
    deadline = time.monotonic() + timeout
    engine = create_engine(db, poolclass=NullPool)
    query = text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND wait_event_type = 'Lock'")
    try:
        while time.monotonic() < deadline:
            if request.done():
                return "done"
            with engine.connect() as conn:
                if conn.scalar(query, {"db": make_url(db).database}):
                    return "blocked"
            time.sleep(0.02)
    finally:
        engine.dispose()
    raise AssertionError(f"the racing request neither finished nor waited for a lock within {timeout}s")
