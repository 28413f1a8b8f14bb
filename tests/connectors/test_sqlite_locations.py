"""A `sqlite` catalog owns its files: no other catalog, in any metalake, may use the
same catalog file, its journal files or anything in its schema directory, and no file with a second
hard link is used. Before, two catalogs could share a path (one then read and cascade-deleted the
other's schema files), and a hard link inside the root to a file outside it was accepted.

Two catalogs in different metalakes hold no common claim, so the check and the store commit run under
a lock in the catalog root (connectors/sqlite/paths.py location_guard); the race test drives two real
replicas through that window with failpoints. Run it with GRAVIMETA_HA_DISABLE=location_lock to watch
both creates succeed without the lock."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from connectors.sqlite import ROOT_ENV
from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.support.failpoints import Failpoints, Reached
from tests.support.servers import ServerProcess, discard


def sqlite_catalog(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "type": "relational", "provider": "sqlite", "properties": {"path": path}}


def refused(response, fragment: str) -> None:
    assert response.status_code == 400, (response.status_code, response.get_data(as_text=True)[:300])
    assert response.get_json()["type"] == "IllegalArgumentException"
    assert fragment in response.get_json()["message"], response.get_json()["message"]


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "sqlite-root"
    root.mkdir()
    monkeypatch.setenv(ROOT_ENV, str(root))
    return root


@pytest.fixture
def client(db_url, root):
    client = create_app(Settings(store_url=db_url)).test_client()
    for metalake in ("m1", "m2"):
        assert client.post("/api/metalakes", json={"name": metalake}).status_code == 200
    assert client.post("/api/metalakes/m1/catalogs", json=sqlite_catalog("a", "dir/a.db")).status_code == 200
    return client


def test_a_path_another_catalog_owns_is_refused_in_every_metalake(client, root):
    (root / "alias").symlink_to(root / "dir", target_is_directory=True)
    for path in ("dir/a.db", "./dir/a.db", "dir//a.db", "alias/a.db",  # the same file, however it is named
                 "dir/a.db-journal", "dir/a.db-wal",  # SQLite's files next to it
                 "dir/a.db.schemas/x.sqlite",  # inside its schema directory
                 "dir/a.db.schemas", "dir"):  # its schema directory, or a directory holding it
        for metalake in ("m1", "m2"):
            refused(client.post(f"/api/metalakes/{metalake}/catalogs", json=sqlite_catalog("b", path)),
                    "already used by another catalog")
    refused(client.post("/api/metalakes/m2/catalogs", json=sqlite_catalog("b", ".gravimeta-locations.lock")),
            "reserved")
    assert client.get("/api/metalakes/m2/catalogs").get_json()["identifiers"] == []
    # the message does not say which catalog: the other one may belong to another metalake's users
    message = client.post("/api/metalakes/m2/catalogs", json=sqlite_catalog("b", "dir/a.db")).get_json()["message"]
    assert "m1.a" not in message, message


def test_an_alter_cannot_move_a_catalog_so_never_onto_anothers_files(client):
    """`path` is immutable (docs/compatibility.md): no alter can point a catalog at other files."""
    assert client.post("/api/metalakes/m2/catalogs", json=sqlite_catalog("b", "b.db")).status_code == 200
    for path in ("dir/a.db", "dir/a.db-shm"):
        refused(client.put("/api/metalakes/m2/catalogs/b", json={"updates": [
            {"@type": "setProperty", "property": "path", "value": path}]}), "immutable")
    refused(client.put("/api/metalakes/m2/catalogs/b", json={"updates": [
        {"@type": "rename", "newName": "b2"}, {"@type": "setProperty", "property": "path", "value": "dir/a.db"}]}),
        "immutable")
    loaded = client.get("/api/metalakes/m2/catalogs/b").get_json()["catalog"]
    assert loaded["properties"]["path"] == "b.db"
    # its own path is not "another catalog's": other property changes go through
    assert client.put("/api/metalakes/m2/catalogs/b", json={"updates": [
        {"@type": "setProperty", "property": "busy-timeout-ms", "value": "100"}]}).status_code == 200


def test_a_dropped_catalogs_path_is_free_again(client):
    assert client.delete("/api/metalakes/m1/catalogs/a?force=true").get_json() == {"code": 0, "dropped": True}
    assert client.post("/api/metalakes/m2/catalogs", json=sqlite_catalog("b", "dir/a.db")).status_code == 200


def test_files_with_a_second_hard_link_are_never_used(client, root, tmp_path):
    outside = tmp_path / "outside.db"
    outside.write_bytes(b"")
    os.link(outside, root / "linked.db")
    refused(client.post("/api/metalakes/m2/catalogs", json=sqlite_catalog("b", "linked.db")), "2 hard links")
    # a link made after the catalog was created: every use refuses, naming the file by its path property
    assert client.post("/api/metalakes/m1/catalogs/a/schemas", json={"name": "s"}).status_code == 200
    os.link(root / "dir" / "a.db", tmp_path / "a-elsewhere.db")
    for response in (client.get("/api/metalakes/m1/catalogs/a/schemas/s/tables/t"),
                     client.post("/api/metalakes/m1/catalogs/a/schemas/s/tables",
                                 json={"name": "t", "columns": [{"name": "c", "type": "integer"}]})):
        body = response.get_json()
        if response.status_code == 404:  # a load reads the store only
            continue
        assert body["type"] == "ConnectionFailedException" and "'dir/a.db' has 2 hard links" in body["message"], body
        assert str(tmp_path) not in body["message"]
    os.unlink(tmp_path / "a-elsewhere.db")
    schema_files = list((root / "dir" / "a.db.schemas").glob("*.sqlite"))
    assert len(schema_files) == 1
    os.link(schema_files[0], tmp_path / "schema-elsewhere.sqlite")
    body = client.post("/api/metalakes/m1/catalogs/a/schemas/s/tables",
                       json={"name": "t2", "columns": [{"name": "c", "type": "integer"}]}).get_json()
    assert body["type"] == "ConnectionFailedException" and "hard links" in body["message"], body
    assert str(tmp_path) not in body["message"]


# ------------------------------------------------------------------ two replicas, two metalakes, one path


def http(server: ServerProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(server.url + path, method=method, headers={"Content-Type": "application/json"},
                                     data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_either(fp: Failpoints, names: list[str], tag: str, timeout: float = 30.0) -> Reached:
    """The first of `names` that a process tagged `tag` pauses at."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in names:
            try:
                return fp.wait_reached(name, tag=tag, timeout=0.01)
            except AssertionError:
                continue
    raise AssertionError(f"no process tagged {tag} reached any of {names} within {timeout}s")


def test_two_replicas_racing_for_one_path_in_different_metalakes_cannot_both_win(db_url, tmp_path):
    """Replica A checks the path under the root's lock and pauses before its store commit; replica B,
    creating a catalog in another metalake (no common claim), must then find the lock taken (it pauses
    at `catalog.location_busy`). A commits; B takes the lock, sees A's catalog and is refused. Without the
    lock B would reach `catalog.location_checked` too, and both creates would answer 200."""
    fp = Failpoints(tmp_path / "fp")
    root = tmp_path / "sqlite-root"
    env = {"GRAVIMETA_SQLITE_CATALOG_ROOT": str(root)}
    a = ServerProcess(db_url, workers=1, env={**env, **fp.env("a")}, log_path=tmp_path / "a.log").start()
    b = ServerProcess(db_url, workers=1, env={**env, **fp.env("b")}, log_path=tmp_path / "b.log").start()
    answers: dict[str, tuple[int, Any]] = {}

    def create(server: ServerProcess, metalake: str) -> threading.Thread:
        def run() -> None:
            answers[metalake] = http(server, "POST", f"/api/metalakes/{metalake}/catalogs",
                                     sqlite_catalog("c", "shared.db"))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    try:
        for server, metalake in ((a, "m1"), (b, "m2")):
            assert http(server, "POST", "/api/metalakes", {"name": metalake})[0] == 200
        fp.arm("catalog.location_checked", tag="a")
        fp.arm("catalog.location_checked", tag="b")
        fp.arm("catalog.location_busy", tag="b")
        first = create(a, "m1")
        a_checked = fp.wait_reached("catalog.location_checked", tag="a")
        second = create(b, "m2")
        b_at = wait_either(fp, ["catalog.location_busy", "catalog.location_checked"], tag="b")
        fp.resume(a_checked)
        first.join(30)
        assert answers["m1"][0] == 200, answers["m1"]
        fp.resume(b_at)
        second.join(30)
        assert not second.is_alive()
        status, body = answers["m2"]
        assert status == 400 and "already used by another catalog" in body["message"], answers["m2"]
        assert b_at.name == "catalog.location_busy", "replica B checked the path before A's create committed"
        assert http(b, "GET", "/api/metalakes/m2/catalogs")[1]["identifiers"] == []
    finally:
        fp.clear()
        discard(a, b)
