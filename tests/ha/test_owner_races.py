"""Owners when replicas race (gravimeta/ownership/store.py): a change of owner through one replica is
paused (failpoint owner.after_lock: the object's row is locked, the owner not yet written) while another
replica drops, cascade-drops or renames the object, or removes the new owner. The owner row is keyed by
the object's id and deleted with the object by its foreign key; the change of owner holds the object's
row FOR UPDATE, so a drop waits for it and then takes the new owner row with it.

The replicas run with the distributed lock off: none of this rests on the claim.

With GRAVIMETA_HA_DISABLE=no_owner_lock (the replicas inherit it) the change of owner reads the object
unlocked. On PostgreSQL and MariaDB the drop then commits while the change is paused, and the change's
insert meets the foreign key of a deleted table: the request fails with a 500 instead of a clean answer
(the foreign key still keeps the orphan row out). SQLite passes even then: the paused change holds the
database's write lock (BEGIN IMMEDIATE), so the drop waits anyway."""

from __future__ import annotations

import base64
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
import requests
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from gravimeta.ownership.models import OwnerRow
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

pytestmark = pytest.mark.slow  # tens of seconds each: start them first

API = "/api/metalakes"
ADMIN = "admin"
REPLICA_ENV = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": ADMIN}


def auth(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:x".encode()).decode()}


def call(method: str, url: str, body: Any = None, user: str = ADMIN) -> requests.Response:
    return requests.request(method, url, json=body, headers=auth(user), timeout=60)


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def replicas(db_url, tmp_path):
    """(a, b, failpoints): replica a has failpoints on (tag "a"); both have authorization on."""
    fp = Failpoints(tmp_path / "fp")
    a = ServerProcess(db_url, workers=1, env={**REPLICA_ENV, **fp.env("a")}, log_path=tmp_path / "a.log")
    b = ServerProcess(db_url, workers=1, env=REPLICA_ENV, log_path=tmp_path / "b.log")
    start_all(a, b)
    try:
        yield a, b, fp
    finally:
        fp.clear()
        discard(a, b)


def build_tree(base: str) -> None:
    """Metalake m (admin) owned by its user alice, users bob and carol, catalog c, schema s and table t
    created by alice."""
    ok(call("POST", base + API, {"name": "m"}))
    for user in ("alice", "bob", "carol"):
        ok(call("POST", f"{base}{API}/m/users", {"name": user}))
    ok(call("PUT", f"{base}{API}/m/owners/metalake/m", {"name": "alice", "type": "USER"}))
    ok(call("POST", f"{base}{API}/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}, "alice"))
    ok(call("POST", f"{base}{API}/m/catalogs/c/schemas", {"name": "s"}, "alice"))
    columns = [{"name": "id", "type": "integer", "nullable": True}]
    ok(call("POST", f"{base}{API}/m/catalogs/c/schemas/s/tables", {"name": "t", "columns": columns}, "alice"))


def owner(base: str, full_name: str, kind: str = "table") -> Any:
    return ok(call("GET", f"{base}{API}/m/owners/{kind}/{full_name}"))["owner"]


def set_owner(base: str, user: str) -> requests.Response:
    return call("PUT", f"{base}{API}/m/owners/table/c.s.t", {"name": user, "type": "USER"})


def owner_rows(db_url: str, kind: str) -> int:
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(OwnerRow).where(OwnerRow.object_kind == kind))
    finally:
        engine.dispose()


def wait_blocked_or_done(db_url: str, request: Future, timeout: float = 30.0) -> str:
    """Until `request` has finished or a session of this database waits for a row lock (what a drop does
    while the paused change of owner holds the row): 'done' or 'blocked'. SQLite shows no lock waits:
    there the answer is 'done', or 'unobserved' after a second (its outcome does not depend on it)."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        try:
            request.result(timeout=1.0)
            return "done"
        except TimeoutError:
            return "unobserved"
    if url.get_backend_name() == "postgresql":
        query = text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND wait_event_type = 'Lock'")
    else:
        query = text("SELECT count(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p "
                     "ON p.id = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.db = :db")
    engine = create_engine(db_url, poolclass=NullPool)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if request.done():
                return "done"
            with engine.connect() as conn:
                if conn.scalar(query, {"db": url.database}):
                    return "blocked"
            time.sleep(0.02)
    finally:
        engine.dispose()
    raise AssertionError(f"the racing request neither finished nor waited for a lock within {timeout}s")


@pytest.mark.parametrize("dropped", ["table", "catalog"])
def test_a_drop_racing_a_change_of_owner_deletes_the_new_owner_row_with_the_table(db_url, replicas, dropped):
    a, b, fp = replicas
    build_tree(b.url)
    fp.arm("owner.after_lock", tag="a")
    with ThreadPoolExecutor(2) as pool:
        changing = pool.submit(set_owner, a.url, "bob")
        paused = fp.wait_reached("owner.after_lock", tag="a")
        path = {"table": f"{API}/m/catalogs/c/schemas/s/tables/t", "catalog": f"{API}/m/catalogs/c?force=true"}
        dropping = pool.submit(call, "DELETE", b.url + path[dropped])
        wait_blocked_or_done(db_url, dropping)
        fp.resume(paused)
        changed, drop = changing.result(60), dropping.result(60)

    assert changed.status_code == 200, f"the change of owner failed: {changed.status_code} {changed.text}"
    assert ok(drop)["dropped"] is True
    assert owner_rows(db_url, "TABLE") == 0, "an owner row outlived its table"
    if dropped == "catalog":
        ok(call("POST", f"{b.url}{API}/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}))
        ok(call("POST", f"{b.url}{API}/m/catalogs/c/schemas", {"name": "s"}))
    ok(call("PUT", f"{b.url}{API}/m/owners/catalog/c", {"name": "carol", "type": "USER"}))  # carol may create in c
    columns = [{"name": "id", "type": "integer", "nullable": True}]
    ok(call("POST", f"{b.url}{API}/m/catalogs/c/schemas/s/tables", {"name": "t", "columns": columns}, "carol"))
    assert owner(a.url, "c.s.t") == {"name": "carol", "type": "USER"}  # the new t inherits nothing


@pytest.mark.parametrize("kind", ["tag", "role"])
def test_a_delete_racing_a_change_of_owner_of_a_tag_or_role_takes_the_new_owner_row_with_it(db_url, replicas, kind):
    a, b, fp = replicas
    build_tree(b.url)
    collection = f"{b.url}{API}/m/{kind}s"
    body = {"name": "x", **({"securableObjects": []} if kind == "role" else {})}
    ok(call("POST", collection, body, "alice"))
    fp.arm("owner.after_lock", tag="a")
    with ThreadPoolExecutor(2) as pool:
        changing = pool.submit(call, "PUT", f"{a.url}{API}/m/owners/{kind}/x", {"name": "bob", "type": "USER"})
        paused = fp.wait_reached("owner.after_lock", tag="a")
        deleting = pool.submit(call, "DELETE", f"{collection}/x")
        wait_blocked_or_done(db_url, deleting)
        fp.resume(paused)
        changed, deleted = changing.result(60), deleting.result(60)

    assert changed.status_code == 200, f"the change of owner failed: {changed.status_code} {changed.text}"
    assert ok(deleted)["dropped"] is True
    assert owner_rows(db_url, kind.upper()) == 0, f"an owner row outlived its {kind}"
    ok(call("PUT", f"{b.url}{API}/m/owners/metalake/m", {"name": "carol", "type": "USER"}))
    ok(call("POST", collection, body, "carol"))
    assert owner(a.url, "x", kind) == {"name": "carol", "type": "USER"}  # the new namesake inherits nothing


def test_a_rename_racing_a_change_of_owner_keeps_the_new_owner_on_the_renamed_table(db_url, replicas):
    a, b, fp = replicas
    build_tree(b.url)
    fp.arm("owner.after_lock", tag="a")
    with ThreadPoolExecutor(2) as pool:
        changing = pool.submit(set_owner, a.url, "bob")
        paused = fp.wait_reached("owner.after_lock", tag="a")
        renaming = pool.submit(call, "PUT", f"{b.url}{API}/m/catalogs/c/schemas/s/tables/t",
                               {"updates": [{"@type": "rename", "newName": "t2"}]})
        wait_blocked_or_done(db_url, renaming)
        fp.resume(paused)
        assert changing.result(60).status_code == 200
        ok(renaming.result(60))

    assert owner(a.url, "c.s.t2") == {"name": "bob", "type": "USER"}
    assert call("GET", f"{a.url}{API}/m/owners/table/c.s.t").status_code == 404


def test_a_change_of_owner_racing_the_removal_of_that_user_never_leaves_it_owning(db_url, replicas):
    a, b, fp = replicas
    build_tree(b.url)
    fp.arm("owner.after_lock", tag="a")
    with ThreadPoolExecutor(2) as pool:
        changing = pool.submit(set_owner, a.url, "bob")
        paused = fp.wait_reached("owner.after_lock", tag="a")
        removing = pool.submit(call, "DELETE", f"{b.url}{API}/m/users/bob")
        wait_blocked_or_done(db_url, removing)
        fp.resume(paused)
        changed, removed = changing.result(60), removing.result(60)

    assert ok(removed)["removed"] is True
    final = owner(a.url, "c.s.t")
    if changed.status_code == 200:  # it committed before the removal: the removal cleared it
        assert final is None
    else:  # the removal committed first: the change found no user bob
        assert changed.status_code == 404 and "or owner bob is not found" in changed.json()["message"]
        assert final == {"name": "alice", "type": "USER"}
    assert call("GET", f"{a.url}{API}/m/users/bob").status_code == 404
    if os.environ.get("GRAVIMETA_HA_DISABLE") != "no_owner_lock":
        assert owner_rows(db_url, "TABLE") == (1 if changed.status_code == 200 else 0)
