"""The Hive stub keeps real partitions in its own storage, with Hive's rules, and the hive connector
serves them: they survive a restart of the metastore and an alter of their table, move with a rename,
go with a drop, and an answer lost after the write leaves the partition there (the retry is
PartitionAlreadyExists: the metastore is the only place partitions live, so nothing else needs repair)."""

from __future__ import annotations

import pytest

from connectors.base import Fence
from connectors.hive_stub.faults import CRASH_EXIT_CODE
from connectors.hive_stub.partitions import escape, unescape
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table


def literal(value: str, data_type: str = "string") -> dict:
    return {"type": "literal", "dataType": data_type, "value": value}


def partition(dt: str, country: str) -> dict:
    return {"type": "identity", "name": None, "fieldNames": [["country"], ["dt"]],
            "values": [literal(country), literal(dt, "date")], "properties": {"k": "v"}}


def kept(dt: str, country: str) -> dict:
    return {"type": "identity", "name": f"dt={escape(dt)}/country={escape(country)}",
            "fieldNames": [["dt"], ["country"]], "values": [literal(dt), literal(country)], "properties": {"k": "v"}}


@pytest.fixture
def db(hive_connector, name):
    schema = name("db")
    hive_connector.create_schema(Schema(schema))
    partitioning = [{"strategy": "identity", "fieldName": ["dt"]}, {"strategy": "identity", "fieldName": ["country"]}]
    hive_connector.create_table(schema, Table("t", [Column("dt", "date"), Column("country", "string"),
                                                    Column("v", "long")], partitioning=partitioning))
    return schema


def test_partitions_survive_a_restart_and_an_alter_and_move_with_a_rename(stub, hive_connector, db):
    assert hive_connector.add_partition(db, "t", partition("2025-12-03", "us")) == kept("2025-12-03", "us")
    stub.restart()
    assert hive_connector.list_partitions(db, "t") == [kept("2025-12-03", "us")]
    before = Table("t", [Column("dt", "date"), Column("country", "string"), Column("v", "long")])
    hive_connector.alter_table(db, before, Table("t", before.columns, comment="altered",
                                                 partitioning=[{"strategy": "identity", "fieldName": ["dt"]},
                                                               {"strategy": "identity", "fieldName": ["country"]}]))
    assert [p["name"] for p in hive_connector.list_partitions(db, "t")] == ["dt=2025-12-03/country=us"]
    hive_connector.rename_table(db, "t", db, "t2")
    assert hive_connector.get_partition(db, "t2", "dt=2025-12-03/country=us") == kept("2025-12-03", "us")
    hive_connector.drop_table(db, "t2")
    hive_connector.create_table(db, Table("t2", [Column("dt", "date"), Column("country", "string")],
                                          partitioning=[{"strategy": "identity", "fieldName": ["dt"]},
                                                        {"strategy": "identity", "fieldName": ["country"]}]))
    assert hive_connector.list_partitions(db, "t2") == []


def test_names_are_escaped_as_hive_escapes_them_and_found_either_way(hive_connector, db):
    odd = "a/b=c:d%e#f"
    added = hive_connector.add_partition(db, "t", partition("2025-12-03", odd))
    assert added["name"] == "dt=2025-12-03/country=a%2Fb%3Dc%3Ad%25e%23f"
    assert unescape(escape(odd)) == odd
    assert hive_connector.get_partition(db, "t", added["name"])["values"][1]["value"] == odd
    with pytest.raises(errors.NoSuchPartition):
        hive_connector.get_partition(db, "t", "country=x/dt=2025-12-03")  # Hive matches columns in order


def test_an_answer_lost_after_the_write_leaves_the_partition_added(stub, hive_connector, db):
    stub.fault("crash", when="after", ops=["create_partition"])
    with pytest.raises(errors.ConnectionFailed, match="may or may not"):
        hive_connector.add_partition(db, "t", partition("2025-12-03", "us"))
    assert stub.wait_exit() == CRASH_EXIT_CODE
    stub.start()
    assert hive_connector.list_partitions(db, "t") == [kept("2025-12-03", "us")]
    with pytest.raises(errors.PartitionAlreadyExists):
        hive_connector.add_partition(db, "t", partition("2025-12-03", "us"))


def test_a_dropped_database_takes_its_partitions(hive_connector, db, name):
    hive_connector.add_partition(db, "t", partition("2025-12-03", "us"))
    assert hive_connector.drop_schema(db, cascade=True) is True
    hive_connector.create_schema(Schema(db))
    hive_connector.create_table(db, Table("t", [Column("dt", "date"), Column("country", "string")],
                                          partitioning=[{"strategy": "identity", "fieldName": ["dt"]},
                                                        {"strategy": "identity", "fieldName": ["country"]}]))
    assert hive_connector.list_partitions(db, "t") == []


def test_partition_calls_carry_the_claims_fence_and_a_stale_one_changes_nothing(hive_connector, db, name):
    """A partition add/drop is a mutating engine call like any other: the stub refuses a token lower than
    one it has seen on the table's scope (or a related one), and changes nothing."""
    scope = f"/lake/{name('c')}/{db}/t"
    hive_connector.add_partition(db, "t", partition("2025-12-03", "us"), fence=Fence(scope, 5))
    with pytest.raises(errors.StaleFence):
        hive_connector.add_partition(db, "t", partition("2025-12-04", "us"), fence=Fence(scope, 4))
    with pytest.raises(errors.StaleFence):
        hive_connector.drop_partition(db, "t", "dt=2025-12-03/country=us", fence=Fence(scope, 4))
    assert hive_connector.list_partitions(db, "t") == [kept("2025-12-03", "us")]
    assert hive_connector.drop_partition(db, "t", "dt=2025-12-03/country=us", fence=Fence(scope, 5))
