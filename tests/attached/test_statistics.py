"""Statistics over REST on SQLite, PostgreSQL and MariaDB: a table's statistics and its partitions'
(Gravitino 1.3's StatisticOperations), kept in the store by the table's id."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import Api, Ref, bad_request, error, ok

VALUES: dict[str, Any] = {
    "custom-bool": True,
    "custom-long": 100,
    "custom-double": 99.99,
    "custom-whole-double": 3.0,
    "custom-string": "test_stat",
    "custom-list": ["a", 1, False],
    "custom-object": {"key": 1, "nested": {"deeper": [1.5]}},
}


def stats_path(table: Ref) -> str:
    metalake, catalog, schema, name = table.levels
    return f"/api/metalakes/{metalake}/objects/table/{catalog}.{schema}.{name}/statistics"


def listed(api: Api, table: Ref) -> dict[str, Any]:
    return {s["name"]: s for s in ok(api.get(stats_path(table)))["statistics"]}


def partition_stats(api: Api, table: Ref, **query: str) -> dict[str, dict[str, Any]]:
    body = ok(api.get(f"{stats_path(table)}/partitions", query_string=query))
    return {p["partitionName"]: {s["name"]: s["value"] for s in p["statistics"]} for p in body["partitionStatistics"]}


def test_statistics_of_every_kind_are_set_listed_and_read_back_exactly(api, schema):
    table = api.create_table(schema)
    assert listed(api, table) == {}
    assert ok(api.put(stats_path(table), {"updates": VALUES})) == {"code": 0}
    found = listed(api, table)
    assert {name: s["value"] for name, s in found.items()} == VALUES
    assert isinstance(found["custom-whole-double"]["value"], float)  # a double stays a double
    first = found["custom-long"]
    assert (first["reserved"], first["modifiable"]) == (False, True)
    assert first["audit"]["creator"] == "anonymous" and first["audit"]["createTime"]


def test_an_update_overwrites_the_named_statistics_and_keeps_the_others(api, schema):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {"custom-a": 1, "custom-b": 2}}))
    created = listed(api, table)["custom-a"]["audit"]["createTime"]
    ok(api.put(stats_path(table), {"updates": {"custom-a": "changed"}}))
    found = listed(api, table)
    assert {n: s["value"] for n, s in found.items()} == {"custom-a": "changed", "custom-b": 2}
    assert found["custom-a"]["audit"]["createTime"] == created


def test_dropping_statistics_says_whether_any_existed(api, schema):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {"custom-a": 1, "custom-b": 2, "custom-c": 3}}))
    assert ok(api.post(stats_path(table), {"names": ["custom-a", "custom-b", "custom-missing"]}))["dropped"] is True
    assert list(listed(api, table)) == ["custom-c"]
    assert ok(api.post(stats_path(table), {"names": ["custom-a"]}))["dropped"] is False


def test_statistic_requests_are_checked_as_gravitino_checks_them(api, schema):
    table = api.create_table(schema)
    error(api.put(stats_path(table), {"updates": {"row_count": 5}}), 400, 1001, "IllegalStatisticNameException",
          in_message="Statistic name must start with custom-")
    bad_request(api.put(stats_path(table), {"updates": {}}), "updates")
    bad_request(api.put(stats_path(table), {"updates": {"custom-a": None}}), "updates")
    bad_request(api.put(stats_path(table), {"updates": {"custom-a": [1, None]}}), "not null")
    bad_request(api.put(stats_path(table), {"updates": {"custom-a": 2**63}}), "long")
    bad_request(api.put(stats_path(table), None), "body")
    bad_request(api.post(stats_path(table), {"names": []}), "names")
    bad_request(api.post(stats_path(table), {"names": [" "]}), "names")
    assert listed(api, table) == {}


def test_only_tables_have_statistics(api, schema):
    metalake, catalog = schema.levels[:2]
    for kind, name in [("catalog", catalog), ("schema", f"{catalog}.{schema.name}")]:
        path = f"/api/metalakes/{metalake}/objects/{kind}/{name}/statistics"
        error(api.get(path), 405, 1006, "UnsupportedOperationException", in_message="only supported for tables")
        error(api.put(path, {"updates": {"custom-a": 1}}), 405, 1006, "UnsupportedOperationException")
        error(api.post(f"{path}/partitions", {"drops": [{"partitionName": "p", "statisticNames": ["custom-a"]}]}),
              405, 1006, "UnsupportedOperationException")


def test_statistics_of_a_missing_table_or_schema(api, schema):
    error(api.get(stats_path(schema.child("nope"))), 404, 1003, "NoSuchMetadataObjectException")
    error(api.put(stats_path(schema.child("nope")), {"updates": {"custom-a": 1}}), 404, 1003,
          "NoSuchMetadataObjectException")
    error(api.get(stats_path(schema.sibling("nope").child("t"))), 404, 1003, "NoSuchSchemaException")
    error(api.get("/api/metalakes/nowhere/objects/table/c.s.t/statistics"), 404, 1003, "NoSuchMetalakeException")


def test_statistics_follow_a_rename_and_go_with_a_drop(api, schema, sql):
    table = api.create_table(schema)
    ok(api.put(stats_path(table), {"updates": {"custom-a": 1}}))
    ok(api.put(f"{stats_path(table)}/partitions", {"updates": [{"partitionName": "p=1", "statistics": {"custom-b": 2}}]}))
    renamed = table.sibling("renamed_" + table.name)
    api.altered(table, {"@type": "rename", "newName": renamed.name})
    assert {n: s["value"] for n, s in listed(api, renamed).items()} == {"custom-a": 1}
    assert partition_stats(api, renamed) == {"p=1": {"custom-b": 2}}
    error(api.get(stats_path(table)), 404, 1003, "NoSuchMetadataObjectException")

    ok(api.delete(renamed.path))
    recreated = api.create_table(schema, name=renamed.name)
    assert listed(api, recreated) == {} and partition_stats(api, recreated) == {}
    assert sql("SELECT count(*) FROM gm_table_statistic s WHERE NOT EXISTS "
               "(SELECT 1 FROM gm_table t WHERE t.id = s.table_id)") == [(0,)]


# ---------------------------------------------------------------------- partition statistics


def test_partition_statistics_are_set_listed_by_name_range_and_dropped(api, schema):
    table = api.create_table(schema)
    updates = [{"partitionName": f"p{i}", "statistics": {"custom-rows": i, "custom-size": i * 10}} for i in range(1, 5)]
    assert ok(api.put(f"{stats_path(table)}/partitions", {"updates": updates})) == {"code": 0}
    every = {f"p{i}": {"custom-rows": i, "custom-size": i * 10} for i in range(1, 5)}
    assert partition_stats(api, table) == every
    # Gravitino's defaults: `from` inclusive, `to` exclusive
    assert list(partition_stats(api, table, **{"from": "p2", "to": "p4"})) == ["p2", "p3"]
    assert list(partition_stats(api, table, **{"from": "p2", "to": "p4", "fromInclusive": "false",
                                                "toInclusive": "true"})) == ["p3", "p4"]
    assert list(partition_stats(api, table, **{"to": "p2"})) == ["p1"]
    assert list(partition_stats(api, table, **{"from": "p3"})) == ["p3", "p4"]

    ok(api.put(f"{stats_path(table)}/partitions", {"updates": [{"partitionName": "p1", "statistics": {"custom-rows": 7}}]}))
    assert partition_stats(api, table)["p1"] == {"custom-rows": 7, "custom-size": 10}
    drops = {"drops": [{"partitionName": "p1", "statisticNames": ["custom-rows", "custom-size"]},
                       {"partitionName": "p2", "statisticNames": ["custom-size"]}]}
    assert ok(api.post(f"{stats_path(table)}/partitions", drops))["dropped"] is True
    assert ok(api.post(f"{stats_path(table)}/partitions", drops))["dropped"] is False
    assert partition_stats(api, table) == {"p2": {"custom-rows": 2}, "p3": every["p3"], "p4": every["p4"]}


def test_partition_statistic_requests_are_checked(api, schema):
    table = api.create_table(schema)
    path = f"{stats_path(table)}/partitions"
    error(api.put(path, {"updates": [{"partitionName": "p", "statistics": {"rows": 1}}]}), 400, 1001,
          "IllegalStatisticNameException")
    bad_request(api.put(path, {"updates": []}), "updates")
    bad_request(api.put(path, {"updates": [{"partitionName": " ", "statistics": {"custom-a": 1}}]}), "partitionName")
    bad_request(api.put(path, {"updates": [{"partitionName": "p", "statistics": {}}]}), "statistics")
    bad_request(api.post(path, {"drops": [{"partitionName": "p", "statisticNames": []}]}), "statisticNames")
    # fromInclusive is a JAX-RS boolean in Gravitino: a value other than "true" reads as false, not a 400
    assert api.get(path, query_string={"fromInclusive": "maybe"}).status_code == 200
    assert partition_stats(api, table) == {}


def test_partition_names_are_ordered_byte_for_byte_on_every_backend(api, schema):
    """Ranges of partition names mean the same everywhere: "B" < "a" < "b" (no locale collation)."""
    table = api.create_table(schema)
    updates = [{"partitionName": name, "statistics": {"custom-n": 1}} for name in ("b", "a", "B")]
    ok(api.put(f"{stats_path(table)}/partitions", {"updates": updates}))
    assert list(partition_stats(api, table)) == ["B", "a", "b"]
    assert list(partition_stats(api, table, **{"from": "B", "to": "b"})) == ["B", "a"]
