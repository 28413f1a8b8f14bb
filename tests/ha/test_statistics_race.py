"""Statistics updates of one table through two replicas are never lost (PostgreSQL and MariaDB).

Replica b sets the new statistic `custom-rows` and is paused by the failpoint
`statistics.before_write`: inside its transaction, after it locked the table's row FOR UPDATE and
looked for the statistics it sets (none yet), before it writes. Replica a then sets the same statistic.
With the lock, a waits for b, then finds b's row and updates it: both are acknowledged and the
statistic holds a's value, the later one.
Mechanism off: GRAVIMETA_HA_DISABLE=statistics_row_lock (both replicas) reads without the lock; a
inserts the statistic while b is paused, and b's insert then breaks the unique key: b's acknowledged
request fails (HTTP 500), although it only set a value."""

from __future__ import annotations

import pytest
import requests

from tests.conftest import require_backend
from tests.ha.conftest import DISABLED
from tests.ha.race_support import Request, finished_or_blocked
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

API = "/api/metalakes"
STATS = f"{API}/m/objects/table/c.s.t/statistics"
POINT = "statistics.before_write"


@pytest.fixture(params=["postgresql", "mysql"])
def replicas(request, tmp_path):
    require_backend(request.param)
    fp = Failpoints(tmp_path / "fp")
    with fresh_database(request.param, tmp_path) as url:
        started = [ServerProcess(url, workers=1, env=fp.env(tag), log_path=tmp_path / f"{tag}.log") for tag in "ab"]
        try:
            start_all(*started)
            yield url, fp, started[0], started[1]
        finally:
            fp.clear()
            discard(*started)


def create_table(base: str) -> None:
    for path, body in [
        (API, {"name": "m"}),
        (f"{API}/m/catalogs", {"name": "c", "type": "relational", "provider": "memory"}),
        (f"{API}/m/catalogs/c/schemas", {"name": "s"}),
        (f"{API}/m/catalogs/c/schemas/s/tables", {"name": "t", "columns": [{"name": "id", "type": "integer"}]}),
    ]:
        assert requests.post(base + path, json=body, timeout=30).status_code == 200


@pytest.mark.parametrize("partition", [False, True], ids=["table", "partition"])
def test_two_replicas_setting_the_same_new_statistic_are_both_acknowledged(replicas, partition):
    url, fp, a, b = replicas
    create_table(a.url)
    path = STATS + ("/partitions" if partition else "")

    def body(value: int) -> dict:
        if partition:
            return {"updates": [{"partitionName": "dt=2025-12-03", "statistics": {"custom-rows": value}}]}
        return {"updates": {"custom-rows": value}}

    fp.arm(POINT, tag="b")
    first = Request("PUT", b.url + path, body(1))
    paused = fp.wait_reached(POINT, tag="b")
    second = Request("PUT", a.url + path, body(2))
    state = finished_or_blocked(second, url)
    fp.resume(paused)
    first.wait()
    second.wait()

    assert (first.status, second.status) == (200, 200), (
        f"b (paused, then resumed): {first.status} {first.json}; a ({state} meanwhile): {second.status} {second.json}")
    listed = requests.get(b.url + path, timeout=30).json()
    values = ([s["value"] for p in listed["partitionStatistics"] for s in p["statistics"]] if partition
              else [s["value"] for s in listed["statistics"]])
    assert values == [2]  # a's write came last: it waited for b's
    if not DISABLED:
        assert state == "blocked", "a's update did not wait for b's lock on the table row"
