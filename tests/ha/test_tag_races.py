"""Tag associations when replicas race (PostgreSQL and MariaDB, two gunicorn replicas, failpoints).

Replica b associates a tag with a table (or a column) and is paused by the failpoint
`tags.after_resolve`: inside its transaction, after it found the object's row id and locked the row
FOR SHARE (for a column: its table's row), before it writes the association. Meanwhile replica a
changes the object:

- drop, cascade, delete column: the drop locks the same row FOR UPDATE, so it waits for b; once b
  commits, the drop deletes b's association along with the object. No association may point at a row
  that no longer exists (the SQL check), whatever each request answered.
  Mechanism off: GRAVIMETA_HA_DISABLE=tag_object_lock (set for both replicas) resolves the object
  without the lock; the drop then finishes while b is paused, and b writes an association to a
  deleted id: an orphan row (and an acknowledged association nobody can see).
- rename, then a new object under the old name: associations are keyed by row id, so the tag is on
  the object b found (now under its new name), and the new object under the old name has none.
"""

from __future__ import annotations

import time

import pytest
import requests

from tests.attached.conftest import orphan_associations
from tests.conftest import require_backend
from tests.ha.conftest import DISABLED
from tests.ha.race_support import Request, finished_or_blocked, sql_runner
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

API = "/api/metalakes"
M, C, S, T, TAG = "m", "c", "s", "t", "pii"
COLUMNS = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"}]
POINT = "tags.after_resolve"


@pytest.fixture(params=["postgresql", "mysql"])
def replicas(request, tmp_path):
    """Replicas a and b (lock on, LEASE_TABLE) on one fresh database, failpoints armed per replica."""
    require_backend(request.param)
    fp = Failpoints(tmp_path / "fp")
    with fresh_database(request.param, tmp_path) as url:
        env = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
               "GRAVIMETA_LEASE_TTL_MS": "15000"}
        started = [ServerProcess(url, workers=1, env={**env, **fp.env(tag)}, log_path=tmp_path / f"{tag}.log")
                   for tag in "ab"]
        try:
            start_all(*started)
            yield url, fp, started[0], started[1]
        finally:
            fp.clear()
            discard(*started)


def post(base: str, path: str, body: dict) -> dict:
    response = requests.post(base + path, json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def log_tail(server: ServerProcess, lines: int = 40) -> str:
    """The end of a replica's log, for a failure message (CI keeps no temporary directories)."""
    assert server.log_path is not None
    return "\n".join(server.log_path.read_text(errors="replace").splitlines()[-lines:])


def tree(base: str) -> None:
    post(base, API, {"name": M})
    post(base, f"{API}/{M}/catalogs", {"name": C, "type": "relational", "provider": "memory"})
    post(base, f"{API}/{M}/catalogs/{C}/schemas", {"name": S})
    post(base, f"{API}/{M}/catalogs/{C}/schemas/{S}/tables", {"name": T, "columns": COLUMNS})
    post(base, f"{API}/{M}/tags", {"name": TAG})


def tagged(base: str) -> list[tuple[str, str]]:
    body = requests.get(f"{base}{API}/{M}/tags/{TAG}/objects", timeout=30).json()
    return [(o["type"], o["fullName"]) for o in body["metadataObjects"]]


TABLE = f"{API}/{M}/catalogs/{C}/schemas/{S}/tables/{T}"
CHANGES = {
    # what replica a does: (the object b tags, method, path, body)
    "drop table": ("table", f"{C}.{S}.{T}", "DELETE", TABLE, None),
    "cascade drop schema": ("table", f"{C}.{S}.{T}", "DELETE", f"{API}/{M}/catalogs/{C}/schemas/{S}?cascade=true", None),
    "delete column": ("column", f"{C}.{S}.{T}.name", "PUT", TABLE,
                      {"updates": [{"@type": "deleteColumn", "fieldName": ["name"]}]}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_an_association_never_outlives_an_object_dropped_by_another_replica(replicas, change):
    url, fp, a, b = replicas
    tree(a.url)
    kind, full_name, method, path, body = CHANGES[change]
    fp.arm(POINT, tag="b")
    associate = Request("POST", f"{b.url}{API}/{M}/objects/{kind}/{full_name}/tags", {"tagsToAdd": [TAG]})
    paused = fp.wait_reached(POINT, tag="b")
    drop = Request(method, a.url + path, body)
    state = finished_or_blocked(drop, url)
    fp.resume(paused)
    resumed = time.monotonic()
    associate.wait()
    drop.wait()

    assert drop.status == 200, (f"the {change} {state} while the association was paused, then answered {drop.json} "
                                f"after {drop.took:.1f} s; the association answered {associate.status} {associate.json} "
                                f"after {associate.took:.1f} s, {resumed - associate.started:.1f} s of it paused\n"
                                f"--- replica a:\n{log_tail(a)}\n--- replica b:\n{log_tail(b)}")
    orphans = orphan_associations(sql_runner(url))
    assert not orphans, (f"{change}: association rows point at deleted objects {orphans} (the {change} {state} while "
                         f"the association was paused; the association answered {associate.status} {associate.json})")
    if associate.status == 200:  # it came first: the change waited for it and took the association along
        assert state == "blocked" and associate.json["names"] == [TAG]
    assert tagged(a.url) == []
    if not DISABLED:
        assert state == "blocked", f"the {change} did not wait for the association's lock on the object"


def test_an_association_follows_the_object_renamed_by_another_replica(replicas):
    url, fp, a, b = replicas
    tree(a.url)
    fp.arm(POINT, tag="b")
    associate = Request("POST", f"{b.url}{API}/{M}/objects/table/{C}.{S}.{T}/tags", {"tagsToAdd": [TAG]})
    paused = fp.wait_reached(POINT, tag="b")
    rename = Request("PUT", a.url + TABLE, {"updates": [{"@type": "rename", "newName": "t_renamed"}]})
    state = finished_or_blocked(rename, url)
    fp.resume(paused)
    assert associate.wait().status == 200 and associate.json["names"] == [TAG], associate.json
    assert rename.wait().status == 200, (f"the rename {state} while the association was paused, then answered "
                                         f"{rename.json} after {rename.took:.1f} s (the association took "
                                         f"{associate.took:.1f} s)\n--- replica a:\n{log_tail(a)}\n--- replica b:\n{log_tail(b)}")
    post(a.url, f"{API}/{M}/catalogs/{C}/schemas/{S}/tables", {"name": T, "columns": COLUMNS})

    # the tag is on the table b found, under its new name; the new table under the old name has none
    assert tagged(b.url) == [("table", f"{C}.{S}.t_renamed")]
    names = requests.get(f"{a.url}{API}/{M}/objects/table/{C}.{S}.{T}/tags", timeout=30).json()["names"]
    assert names == []
    assert not orphan_associations(sql_runner(url))
    if not DISABLED:
        assert state == "blocked", "the rename did not wait for the association's lock on the table"
