"""Partitions over REST on SQLite, PostgreSQL and MariaDB (Gravitino's PartitionOperations): a `memory`
catalog keeps them in the store (visible to every worker and replica), a `hive` catalog in its
metastore with Hive's rules, a `sqlite` catalog has none (405)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from gravimeta.app import create_app
from gravimeta.config import Settings
from tests.api.helpers import Api, Ref, bad_request, column, error, ok

COLUMNS = [column("dt", "date"), column("country", "string"), column("amount", "integer")]
BY_DAY_AND_COUNTRY = [{"strategy": "identity", "fieldName": ["dt"]}, {"strategy": "identity", "fieldName": ["country"]}]


def literal(value: str, data_type: str = "string") -> dict[str, Any]:
    return {"type": "literal", "dataType": data_type, "value": value}


def identity(name: str | None, **values: tuple[str, str]) -> dict[str, Any]:
    """An identity partition; values are column -> (value, type)."""
    return {"type": "identity", "name": name, "fieldNames": [[c] for c in values],
            "values": [literal(v, t) for v, t in values.values()], "properties": {}}


def partitions_path(table: Ref) -> str:
    return f"{table.path}/partitions"


def partition_path(table: Ref, name: str) -> str:
    return f"{partitions_path(table)}/{quote(name, safe='')}"  # as the official client encodes it


def add(api: Api, table: Ref, partition: dict[str, Any]) -> Any:
    return api.post(partitions_path(table), {"partitions": [partition]})


def names(api: Api, table: Ref) -> list[str]:
    return ok(api.get(partitions_path(table)))["names"]


def day(value: str, country: str) -> dict[str, Any]:
    return identity(f"dt={value}/country={country}", dt=(value, "date"), country=(country, "string"))


# ---------------------------------------------------------------------- memory: kept in the store


def test_a_memory_table_keeps_identity_partitions(api, schema):
    table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    assert names(api, table) == []
    added = ok(add(api, table, day("2025-12-03", "us")))["partitions"]
    assert added == [day("2025-12-03", "us")]
    assert names(api, table) == ["dt=2025-12-03/country=us"]
    assert ok(api.get(partitions_path(table), query_string={"details": "true"}))["partitions"] == added
    assert ok(api.get(partition_path(table, "dt=2025-12-03/country=us")))["partition"] == added[0]

    error(add(api, table, day("2025-12-03", "us")), 409, 1004, "PartitionAlreadyExistsException",
          in_message="Failed to operate partition(s) operation [CREATE] of table [")
    error(api.get(partition_path(table, "dt=2025-12-04/country=us")), 404, 1003, "NoSuchPartitionException",
          in_message="Failed to operate partition(s) [dt=2025-12-04/country=us] operation [GET]")
    assert ok(api.delete(partition_path(table, "dt=2025-12-03/country=us")))["dropped"] is True
    assert ok(api.delete(partition_path(table, "dt=2025-12-03/country=us")))["dropped"] is False
    assert names(api, table) == []


def test_a_nameless_identity_partition_is_named_after_its_values(api, schema):
    table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    added = ok(add(api, table, identity(None, country=("fr", "string"), dt=("2025-01-02", "date"))))["partitions"][0]
    assert added["name"] == "country=fr/dt=2025-01-02"
    assert ok(api.delete(partition_path(table, added["name"]), query_string={"purge": "true"}))["dropped"] is True


def test_list_and_range_partitions_need_a_list_or_range_partitioning(api, schema):
    by_list = api.create_table(schema, columns=COLUMNS, partitioning=[{"strategy": "list", "fieldNames": [["country"]]}])
    by_range = api.create_table(schema, columns=COLUMNS, partitioning=[{"strategy": "range", "fieldName": ["amount"]}])
    europe = {"type": "list", "name": "europe", "lists": [[literal("fr")], [literal("de")]], "properties": {"k": "v"}}
    small = {"type": "range", "name": "small", "upper": literal("10", "integer"), "lower": literal("0", "integer"),
             "properties": {}}
    assert ok(add(api, by_list, europe))["partitions"] == [europe]
    assert ok(add(api, by_range, small))["partitions"] == [small]
    assert ok(api.get(partition_path(by_range, "small")))["partition"] == small
    bad_request(add(api, by_list, small), "range partitioning")
    bad_request(add(api, by_range, day("2025-12-03", "us")), "identity partitioning")
    bad_request(add(api, by_list, {**europe, "name": None}), "name")


def test_partitions_must_fit_the_table(api, schema):
    table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    bad_request(add(api, table, identity("x", dt=("2025-12-03", "date"))), "identity partitioning fields")
    bad_request(add(api, table, identity("x", dt=("1", "date"), amount=("1", "integer"))), "[country, dt]")
    bad_request(add(api, table, {**day("2025-12-03", "us"), "values": [literal("2025-12-03", "date")]}), "size")
    plain = api.create_table(schema, columns=COLUMNS)
    bad_request(add(api, plain, day("2025-12-03", "us")), "not partitioned")


def test_add_partition_requests_are_checked_as_gravitino_checks_them(api, schema):
    table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    bad_request(api.post(partitions_path(table), {}), "partitions must not be null")
    bad_request(api.post(partitions_path(table), {"partitions": []}), "Only one partition is supported")
    bad_request(api.post(partitions_path(table), {"partitions": [day("2025-01-01", "a"), day("2025-01-02", "b")]}),
                "Only one partition is supported")
    bad_request(add(api, table, {"type": "bucket", "name": "b"}), "Unknown partition type")
    bad_request(add(api, table, {**day("2025-12-03", "us"), "values": [{"type": "field", "fieldName": ["dt"]},
                                                                      literal("us")]}), "literal")
    bad_request(add(api, table, {**day("2025-12-03", "us"), "name": "*"}), "reserved")
    bad_request(add(api, table, {**day("2025-12-03", "us"), "name": "x" * 513}), "limit is 512")
    assert names(api, table) == []


def test_partitions_of_a_missing_table_or_catalog(api, schema):
    error(api.get(partitions_path(schema.child("nope"))), 404, 1003, "NoSuchTableException")
    error(add(api, schema.child("nope"), day("2025-12-03", "us")), 404, 1003, "NoSuchTableException")
    error(api.get(partitions_path(schema.sibling("nope").child("t"))), 404, 1003, "NoSuchSchemaException")
    api.set_in_use(schema.parent, False)
    error(api.get(partitions_path(schema.child("t"))), 409, 1009, "CatalogNotInUseException")
    api.set_in_use(schema.parent, True)


def test_partitions_follow_a_rename_and_go_with_a_drop(api, schema, sql):
    table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    ok(add(api, table, day("2025-12-03", "us")))
    renamed = table.sibling("moved_" + table.name)
    api.altered(table, {"@type": "rename", "newName": renamed.name})
    assert names(api, renamed) == ["dt=2025-12-03/country=us"]
    ok(api.delete(renamed.path))
    recreated = api.create_table(schema, name=renamed.name, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    assert names(api, recreated) == []
    assert sql("SELECT count(*) FROM gm_partition p WHERE NOT EXISTS (SELECT 1 FROM gm_table t WHERE t.id = p.table_id)") \
        == [(0,)]


def test_memory_partitions_are_seen_by_every_replica(api, schema, backend_url):
    """Two apps on one database are two workers (or replicas): each has its own memory engine, and both
    see the partitions, because the store keeps them."""
    other = create_app(Settings(store_url=backend_url))
    try:
        other_api = Api(other.test_client())
        table = api.create_table(schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
        ok(add(other_api, table, day("2025-12-03", "us")))
        assert names(api, table) == ["dt=2025-12-03/country=us"]
        assert ok(api.delete(partition_path(table, "dt=2025-12-03/country=us")))["dropped"] is True
        assert names(other_api, table) == []
    finally:
        other.extensions["gravimeta"].store.engine.dispose()


# ---------------------------------------------------------------------- hive: kept in the metastore


@pytest.fixture
def hive_schema(api, metalake, hive_stub) -> Ref:
    catalog = api.create_catalog(metalake, provider="hive", properties={"metastore.uris": hive_stub.uri})
    return api.create_schema(catalog)


def test_a_hive_table_keeps_partitions_as_hive_does(api, hive_schema, hive_stub):
    table = api.create_table(hive_schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    given = identity("ignored", country=("u/s:1", "string"), dt=("2025-12-03", "date"))
    added = ok(add(api, table, given))["partitions"][0]
    # Hive names it from the values, in the table's column order, escaped; it keeps strings
    assert added == {"type": "identity", "name": "dt=2025-12-03/country=u%2Fs%3A1", "fieldNames": [["dt"], ["country"]],
                     "values": [literal("2025-12-03"), literal("u/s:1")], "properties": {}}
    assert ok(api.get(partition_path(table, added["name"])))["partition"] == added
    error(add(api, table, given), 409, 1004, "PartitionAlreadyExistsException")
    ok(add(api, table, day("2025-12-04", "fr")))
    ok(add(api, table, day("2025-12-04", "de")))
    assert names(api, table) == ["dt=2025-12-03/country=u%2Fs%3A1", "dt=2025-12-04/country=de",
                                 "dt=2025-12-04/country=fr"]
    # a partial name drops every partition it matches
    assert ok(api.delete(partition_path(table, "dt=2025-12-04")))["dropped"] is True
    assert ok(api.delete(partition_path(table, "dt=2025-12-04")))["dropped"] is False
    assert ok(api.delete(partition_path(table, "region=x")))["dropped"] is False
    assert names(api, table) == [added["name"]]
    error(api.delete(partition_path(table, added["name"]), query_string={"purge": "true"}), 405, 1006,
          "UnsupportedOperationException", in_message="Partition purging is not supported")
    error(api.get(partition_path(table, "dt=2025-12-09/country=us")), 404, 1003, "NoSuchPartitionException")


def test_hive_refuses_what_hive_refuses(api, hive_schema):
    table = api.create_table(hive_schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    europe = {"type": "list", "name": "europe", "lists": [[literal("fr")]], "properties": {}}
    bad_request(add(api, table, europe), "Hive only supports identity partition")
    bad_request(add(api, table, identity("x", amount=("1", "integer"), dt=("1", "date"))),
                "must be the same as table partitioning field names: dt,country")
    bad_request(api.delete(partition_path(table, "no-equals-sign")), "Invalid partition format")


def test_hive_partitions_follow_a_rename_and_go_with_a_drop(api, hive_schema):
    table = api.create_table(hive_schema, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    ok(add(api, table, day("2025-12-03", "us")))
    renamed = table.sibling("moved_" + table.name)
    api.altered(table, {"@type": "rename", "newName": renamed.name})
    assert names(api, renamed) == ["dt=2025-12-03/country=us"]
    ok(api.delete(renamed.path))
    recreated = api.create_table(hive_schema, name=renamed.name, columns=COLUMNS, partitioning=BY_DAY_AND_COUNTRY)
    assert names(api, recreated) == []


# ---------------------------------------------------------------------- sqlite: none


def test_a_sqlite_table_has_no_partitions(api, metalake):
    catalog = api.create_catalog(metalake, provider="sqlite", properties={"path": f"{metalake.name}.db"})
    table = api.create_table(api.create_schema(catalog), columns=COLUMNS)
    for response in (api.get(partitions_path(table)), add(api, table, day("2025-12-03", "us")),
                     api.get(partition_path(table, "dt=x")), api.delete(partition_path(table, "dt=x"))):
        error(response, 405, 1006, "UnsupportedOperationException", in_message="does not support partition operations")
    # the table is looked up first, as Gravitino does
    error(api.get(partitions_path(table.sibling("nope"))), 404, 1003, "NoSuchTableException")
