"""A catalog whose connector is process-local (memory) runs each schema/table create, rename and drop
in ONE store transaction, the store's change first, then the engine mirror (gravimeta/dispatch/
intents.py, `direct`): no intent is recorded, and an engine failure rolls the store change back, so
the request fails whole with the engine's error and nothing is half applied."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.memory import MemoryConnector
from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.dispatch import journal
from gravimeta.entities import Schema, Table
from tests.api.helpers import Api, error, ok

COLUMNS = [{"name": "id", "type": "integer", "comment": None, "nullable": True, "autoIncrement": False}]


class Failing(MemoryConnector):
    """A memory connector (still process-local) whose next mirror call raises `Failing.next_error`."""

    next_error: errors.GravitinoError | None = None

    def _fail(self) -> None:
        failure, Failing.next_error = Failing.next_error, None
        if failure is not None:
            raise failure

    def create_schema(self, schema: Schema, **fenced: Any) -> None:
        self._fail()
        super().create_schema(schema, **fenced)

    def create_table(self, schema: str, table: Table, **fenced: Any) -> None:
        self._fail()
        super().create_table(schema, table, **fenced)

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, **fenced: Any) -> None:
        self._fail()
        super().rename_table(schema, name, new_schema, new_name, **fenced)

    def drop_table(self, schema: str, name: str, **fenced: Any) -> bool:
        self._fail()
        return super().drop_table(schema, name, **fenced)


@pytest.fixture
def api(sqlite_url):
    app = create_app(Settings(store_url=sqlite_url))
    services = app.extensions["gravimeta"]
    services.connectors.registry = ConnectorRegistry(extra={"failing": Failing})
    recorded: list[Any] = []
    insert_in = services.reconciler.journal.insert_in
    services.reconciler.journal.insert_in = lambda *a: recorded.append(a) or insert_in(*a)
    yield Api(app.test_client()), recorded
    Failing.next_error = None


FAILURES = [
    (errors.ConnectionFailed("mirror unreachable"), 502, 1007, "ConnectionFailedException"),
    (errors.IllegalArgument("mirror says no"), 400, 1001, "IllegalArgumentException"),
]


def test_operations_record_no_intent(api):
    client, recorded = api
    schema = client.create_schema(client.create_catalog(client.create_metalake(), provider="failing"))
    ok(client.post(schema.children(), {"name": "t", "columns": COLUMNS}))
    ok(client.put(schema.child("t").path, {"updates": [{"@type": "rename", "newName": "u"}]}))
    assert ok(client.delete(schema.child("u").path))["dropped"] is True
    assert client.names(schema.children()) == []
    assert recorded == []


def test_operations_build_no_journal_payload(api, monkeypatch):
    """The intent's JSON (intent_records.encode: dataclasses.asdict, json.dumps) is built only for an
    intent that is written: a process-local catalog's direct path never builds it."""
    client, _ = api
    encoded: list[Any] = []
    encode = journal.encode
    monkeypatch.setattr(journal, "encode", lambda record: encoded.append(record) or encode(record))
    schema = client.create_schema(client.create_catalog(client.create_metalake(), provider="failing"))
    ok(client.post(schema.children(), {"name": "t", "columns": COLUMNS}))
    ok(client.put(schema.child("t").path, {"updates": [{"@type": "rename", "newName": "u"}]}))
    ok(client.delete(schema.child("u").path))
    ok(client.delete(schema.path))
    assert encoded == []


@pytest.mark.parametrize("failure,status,code,type_name", FAILURES)
def test_a_failed_create_leaves_nothing_in_the_store(api, failure, status, code, type_name):
    client, _ = api
    catalog = client.create_catalog(client.create_metalake(), provider="failing")
    schema = client.create_schema(catalog)
    Failing.next_error = failure
    error(client.post(schema.children(), {"name": "t", "columns": COLUMNS}), status, code, type_name,
          in_message=failure.message)
    error(client.get(schema.child("t").path), 404, 1003, "NoSuchTableException")
    Failing.next_error = failure
    error(client.post(catalog.children(), {"name": "s2"}), status, code, type_name)
    error(client.get(catalog.child("s2").path), 404, 1003, "NoSuchSchemaException")


@pytest.mark.parametrize("failure,status,code,type_name", FAILURES)
def test_a_failed_rename_or_drop_keeps_the_table_as_it_was(api, failure, status, code, type_name):
    client, _ = api
    schema = client.create_schema(client.create_catalog(client.create_metalake(), provider="failing"))
    ok(client.post(schema.children(), {"name": "t", "columns": COLUMNS}))
    Failing.next_error = failure
    error(client.put(schema.child("t").path, {"updates": [{"@type": "rename", "newName": "u"}]}),
          status, code, type_name)
    Failing.next_error = failure
    error(client.delete(schema.child("t").path), status, code, type_name)
    assert client.names(schema.children()) == ["t"]
    assert ok(client.get(schema.child("t").path))["table"]["name"] == "t"
