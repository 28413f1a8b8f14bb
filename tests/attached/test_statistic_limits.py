"""Statistics are bounded and paged, on SQLite, PostgreSQL and MariaDB: a value of more than 8,192
characters of JSON, an update setting more than 1,000 statistics, a table with more than 1,000
statistics (or 1 MiB of values) or more than 10,000 partition statistics (or 4 MiB) are refused with a
400 that changes nothing; GET takes `limit` and `offset` (partitions are paged by partition).

Before this change five 1 MB updates gave one table 150,000 statistics and one GET returned 32 MiB:
every update here was accepted and `limit` was ignored."""

from __future__ import annotations

from gravimeta.store import statistics
from tests.api.helpers import bad_request, ok
from tests.attached.test_statistics import listed, partition_stats, stats_path


def test_a_value_longer_than_the_limit_is_refused(api, schema):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {"custom-fits": "x" * 8_000}}))
    bad_request(api.put(stats_path(table), {"updates": {"custom-big": "x" * 8_200}}), "limit is 8192")
    bad_request(api.put(f"{stats_path(table)}/partitions",
                        {"updates": [{"partitionName": "p1", "statistics": {"custom-big": ["y" * 5_000] * 2}}]}),
                "limit is 8192")
    assert set(listed(api, table)) == {"custom-fits"}


def test_one_update_sets_at_most_1000_statistics(api, schema):
    table = api.create_table(schema)
    bad_request(api.put(stats_path(table), {"updates": {f"custom-{i}": i for i in range(1_001)}}))
    bad_request(api.put(f"{stats_path(table)}/partitions", {"updates": [
        {"partitionName": f"p{i}", "statistics": {f"custom-{j}": j for j in range(11)}} for i in range(100)]}),
        "at most 1000")
    assert listed(api, table) == {} and partition_stats(api, table) == {}


def test_a_table_holds_at_most_1000_statistics_and_1_mib_of_values(api, schema):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {f"custom-{i:04}": i for i in range(1_000)}}))
    bad_request(api.put(stats_path(table), {"updates": {"custom-one-more": 1}}), "the limit is 1000")
    ok(api.put(stats_path(table), {"updates": {"custom-0000": "replaced"}}))  # updating an existing one is fine
    assert len(listed(api, table)) == 1_000 and "custom-one-more" not in listed(api, table)
    other = api.create_table(schema)
    big = "z" * 8_000
    for batch in range(5):  # 32 values of 8,002 characters each: 1,024,256 after 4, 1,280,320 (> 1 MiB) after 5
        response = api.put(stats_path(other), {"updates": {f"custom-{batch}-{i}": big for i in range(32)}})
        if batch < 4:
            ok(response)
        else:
            bad_request(response, "characters of statistics values; the limit is 1048576")
    assert len(listed(api, other)) == 128


def test_a_table_holds_at_most_its_limit_of_partition_statistics(api, schema, monkeypatch):
    # The limit is 10,000; the check is the same at any value, and 10,000 partition statistics written
    # here took three minutes of the suite on PostgreSQL, so the test lowers it to 300.
    assert statistics.PARTITION_STATISTICS_MAX == 10_000
    monkeypatch.setattr(statistics, "PARTITION_STATISTICS_MAX", 300)
    table = api.create_table(schema)
    path = f"{stats_path(table)}/partitions"
    for batch in range(3):
        ok(api.put(path, {"updates": [{"partitionName": f"p{batch}-{i:03}", "statistics": {"custom-rows": i}}
                                      for i in range(100)]}))
    bad_request(api.put(path, {"updates": [{"partitionName": "p-extra", "statistics": {"custom-rows": 1}}]}),
                "301 partition statistics; the limit is 300")
    assert "p-extra" not in partition_stats(api, table, limit="1000")
    assert len(partition_stats(api, table, limit="1000")) == 300


def test_get_pages_statistics_and_partitions(api, schema):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {f"custom-{i:02}": i for i in range(25)}}))
    first = ok(api.get(stats_path(table), query_string={"limit": "10"}))["statistics"]
    third = ok(api.get(stats_path(table), query_string={"limit": "10", "offset": "20"}))["statistics"]
    assert [s["name"] for s in first] == [f"custom-{i:02}" for i in range(10)]
    assert [s["name"] for s in third] == [f"custom-{i:02}" for i in range(20, 25)]
    assert len(listed(api, table)) == 25  # no limit: everything (the limits above bound it)
    ok(api.put(f"{stats_path(table)}/partitions", {"updates": [
        {"partitionName": f"p{i}", "statistics": {"custom-a": i, "custom-b": -i}} for i in range(6)]}))
    page = partition_stats(api, table, limit="2", offset="1")
    assert page == {"p1": {"custom-a": 1, "custom-b": -1}, "p2": {"custom-a": 2, "custom-b": -2}}
    assert list(partition_stats(api, table, limit="3", **{"from": "p2"})) == ["p2", "p3", "p4"]
    for bad in ({"limit": "0"}, {"limit": "1001"}, {"limit": "x"}, {"offset": "-1"}, {"limit": "１"}):
        bad_request(api.get(stats_path(table), query_string=bad), next(iter(bad)))
