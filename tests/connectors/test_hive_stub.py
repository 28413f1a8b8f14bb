"""The Hive-like stub runs as its own process with its own storage, and every fault kind it offers
works: latency, failing the next N calls (HTTP 500 or connection reset, before or after the write),
hanging (until released or for a time), and crashing (before the write, or after it is persisted but
before the answer). The hive connector turns each into a clear gravimeta error."""

from __future__ import annotations

import threading
import time

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.hive_stub.faults import CRASH_EXIT_CODE
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table


def table(table_name: str = "t") -> Table:
    return Table(table_name, [Column("id", "long", nullable=False), Column("v", "string")])


@pytest.fixture
def db(hive_connector, name):
    schema = name("db")
    hive_connector.create_schema(Schema(schema, comment="c", properties={"k": "v"}))
    return schema


def test_the_stub_keeps_its_data_across_a_restart(stub, hive_connector, db):
    hive_connector.create_table(db, table())
    stub.restart()
    assert hive_connector.list_tables(db) == ["t"]
    status, stored = stub.raw("GET", f"/databases/{db}")
    assert status == 200 and stored == {"name": db, "comment": "c", "properties": {"k": "v"}}


def test_added_latency_delays_every_call(stub, hive_connector, db):
    stub.fault("latency", ms=300)
    started = time.monotonic()
    hive_connector.list_tables(db)
    assert time.monotonic() - started >= 0.3
    stub.clear_faults()
    started = time.monotonic()
    hive_connector.list_tables(db)
    assert time.monotonic() - started < 0.3


def test_failing_the_next_calls_with_http_500_then_recovering(stub, hive_connector, db):
    stub.fault("fail", count=2, ops=["create_table"])
    for _ in range(2):
        with pytest.raises(errors.GravitinoError, match="HTTP 500"):
            hive_connector.create_table(db, table())
    assert hive_connector.list_tables(db) == []  # failed before the write
    hive_connector.create_table(db, table())
    assert hive_connector.list_tables(db) == ["t"]


def test_a_reset_connection_is_a_connection_failure_that_says_the_outcome_is_unknown(stub, hive_connector, db):
    stub.fault("fail", mode="reset", ops=["drop_table"])
    hive_connector.create_table(db, table())
    with pytest.raises(errors.ConnectionFailed, match="may or may not have been applied"):
        hive_connector.drop_table(db, "t")
    assert hive_connector.list_tables(db) == ["t"]


def test_a_failure_after_the_write_leaves_the_change_applied(stub, hive_connector, db):
    stub.fault("fail", when="after", ops=["create_table"])
    with pytest.raises(errors.GravitinoError):
        hive_connector.create_table(db, table())
    assert hive_connector.list_tables(db) == ["t"]
    hive_connector.create_table(db, table())  # the retry a repair would make is accepted


def test_a_hung_call_resumes_when_released(stub, hive_connector, db):
    stub.fault("hang", ops=["create_table"])
    done = threading.Event()
    worker = threading.Thread(target=lambda: (hive_connector.create_table(db, table()), done.set()))
    worker.start()
    stub.wait_hung()
    assert not done.is_set()
    hive_connector.list_tables(db)  # other calls are not blocked
    stub.release()
    worker.join(10)
    assert done.is_set() and hive_connector.list_tables(db) == ["t"]


def test_a_call_hanging_longer_than_the_client_timeout_fails_clearly(stub, db):
    impatient = HiveConnector(CatalogContext("m", "c", {"metastore.uris": stub.uri, "client.timeout-ms": "300"}))
    stub.fault("hang", seconds=5, ops=["list_tables"])
    with pytest.raises(errors.ConnectionFailed, match="did not answer list tables within 0.3s"):
        impatient.list_tables(db)
    stub.release()


def test_a_timed_hang_ends_by_itself(stub, hive_connector, db):
    stub.fault("hang", seconds=0.3, ops=["list_tables"])
    started = time.monotonic()
    assert hive_connector.list_tables(db) == []
    assert 0.3 <= time.monotonic() - started < 3


def test_a_crash_before_the_write_loses_the_call(stub, hive_connector, db):
    stub.fault("crash", ops=["create_table"])
    with pytest.raises(errors.ConnectionFailed):
        hive_connector.create_table(db, table())
    assert stub.wait_exit() == CRASH_EXIT_CODE
    stub.start()
    assert hive_connector.list_tables(db) == []


def test_a_crash_after_the_write_is_persisted_keeps_the_change(stub, hive_connector, db):
    hive_connector.create_table(db, table())
    stub.fault("crash", when="after", ops=["rename_table"])
    with pytest.raises(errors.ConnectionFailed, match="may or may not"):
        hive_connector.rename_table(db, "t", db, "t2")
    assert stub.wait_exit() == CRASH_EXIT_CODE
    stub.start()
    assert hive_connector.list_tables(db) == ["t2"]
    hive_connector.rename_table(db, "t", db, "t2")  # repeating the rename is accepted


def test_a_crash_can_wait_for_the_nth_call(stub, hive_connector, db):
    stub.fault("crash", calls=3, ops=["create_table"])
    hive_connector.create_table(db, table("a"))
    hive_connector.create_table(db, table("b"))
    with pytest.raises(errors.ConnectionFailed):
        hive_connector.create_table(db, table("c"))
    stub.wait_exit()
    stub.start()
    assert hive_connector.list_tables(db) == ["a", "b"]


def test_a_stopped_metastore_is_a_connection_failure(stub, hive_connector):
    stub.stop()
    with pytest.raises(errors.ConnectionFailed, match="Cannot connect to the Hive metastore"):
        hive_connector.test_connection()
    with pytest.raises(errors.ConnectionFailed):
        hive_connector.list_schemas()
    stub.start()
    hive_connector.test_connection()


def test_a_second_uri_is_tried_when_the_first_refuses(stub, db):
    from tests.support.servers import free_port

    connector = HiveConnector(CatalogContext("m", "c", {"metastore.uris": f"http://127.0.0.1:{free_port()},{stub.uri}"}))
    assert db in connector.list_schemas()


def test_bad_fault_requests_are_rejected(stub):
    assert stub.raw("PUT", "/_faults/meteor", {})[0] == 400
    assert stub.raw("PUT", "/_faults/fail", {"mode": "explode"})[0] == 400
    assert stub.raw("PUT", "/_faults/fail", {"ops": ["format_disk"]})[0] == 400


@pytest.mark.parametrize("properties, message", [
    ({}, "required and must be set"),
    ({"metastore.uris": "thrift://h:9083"}, "http://host:port"),
    ({"metastore.uris": "http://h:99999"}, "bad port"),
    ({"metastore.uris": "http://h:1", "client.timeout-ms": "0"}, "timeout"),
    ({"metastore.uris": "http://h:1", "in-use": "x"}, "reserved"),
    ({"metastore.uris": "http://h:1", "client.pool-size": "many"}, "client.pool-size"),
])
def test_hive_catalog_properties_are_validated(properties, message):
    with pytest.raises(errors.IllegalArgument, match=message):
        HiveConnector.validate_properties(properties)


def test_storage_is_replaced_atomically(stub, hive_connector, db):
    hive_connector.create_table(db, table())
    files = sorted(p.name for p in stub.data_dir.iterdir())
    assert "metastore.json" in files and not any(f.endswith(".tmp") for f in files)
