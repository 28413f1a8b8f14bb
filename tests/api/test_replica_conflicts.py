"""Two replicas (two apps on one store, distributed lock off) creating the same schema or table: when
replica B completes its create while replica A is at its engine call, A's apply step finds B's row and
A answers Gravitino's 409, not a second 200 (docs/consistency.md §3). The dispatcher-level
interleavings of every journalled operation, on every database, are in tests/ha/test_lock_off_conflicts.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from connectors.memory import MemoryConnector
from connectors.registry import ConnectorRegistry
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Schema, Table
from tests.api.helpers import Api, error, ok

COLUMNS = [{"name": "id", "type": "integer", "comment": None, "nullable": True, "autoIncrement": False}]


class Hooked(MemoryConnector):
    """A memory connector that runs `before_create()` once, before its next create call. It stands for
    an external engine (not process-local), so its operations are journalled as theirs are."""

    process_local = False

    before_create: Callable[[], object] | None = None

    def _hook(self) -> None:
        hook, Hooked.before_create = Hooked.before_create, None
        if hook:
            hook()

    def create_schema(self, schema: Schema, **fenced: Any) -> None:
        self._hook()
        super().create_schema(schema, **fenced)

    def create_table(self, schema: str, table: Table, **fenced: Any) -> None:
        self._hook()
        super().create_table(schema, table, **fenced)


@pytest.mark.parametrize("kind", ["schema", "table"])
def test_a_create_another_replica_made_while_it_ran_answers_409(sqlite_url, kind):
    a, b = (create_app(Settings(store_url=sqlite_url)) for _ in range(2))
    for app in (a, b):
        app.extensions["gravimeta"].connectors.registry = ConnectorRegistry(extra={"hooked": Hooked})
    api_a, api_b = Api(a.test_client()), Api(b.test_client())
    catalog = api_a.create_catalog(api_a.create_metalake(), provider="hooked")
    if kind == "schema":
        parent, body, type_name = catalog, {"name": "s"}, "SchemaAlreadyExistsException"
    else:
        parent, body, type_name = api_a.create_schema(catalog), {"name": "t", "columns": COLUMNS}, "TableAlreadyExistsException"
    answers = []
    Hooked.before_create = lambda: answers.append(api_b.post(parent.children(), body))
    try:
        refused = api_a.post(parent.children(), body)
    finally:
        Hooked.before_create = None
    ok(answers[0])  # B's create, run while A was at its engine call
    error(refused, 409, 1004, type_name, in_message="already exists")
    assert api_a.names(parent.children()) == [body["name"]]
    assert a.extensions["gravimeta"].reconciler.journal.pending() == []
