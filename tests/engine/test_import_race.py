"""Two replicas: an import is a structural change under the parent's claim.

Replica A loads a table its store lacks and the engine has; A stops at `import.before_store` (claim held,
engine described, nothing stored). Replica B loads the same table: its import waits for the claim. When A
goes on, it stores the table; B, once it holds the claim, looks again, finds A's row and answers it: one
row, one id, both answers the same (Gravitino answers the second node's EntityAlreadyExists by reloading
from the store; here the claim orders the two and the re-check after it makes the second a read).
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from connectors.base import CatalogContext
from connectors.sqlite import SQLiteCatalogConnector
from gravimeta.entities import Column, Schema, Table
from gravimeta.store.models import SchemaRow, TableRow
from tests.engine.conftest import Api, in_background, ok, path_of, sqlite_properties


@pytest.mark.parametrize("parent_imported", [True, False], ids=["table", "schema-and-table"])
def test_two_replicas_importing_one_table_store_it_once(cluster, monkeypatch, parent_imported):
    properties = sqlite_properties()
    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(cluster.root))
    outside = SQLiteCatalogConnector(CatalogContext("elsewhere", "tool", properties))
    outside.prepare_engine()
    outside.create_schema(Schema("s"))
    outside.create_table("s", Table("t", [Column("id", "long")]))

    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog("sqlite", properties))
    if parent_imported:
        ok(b.r.request("GET", path_of("m", "c", "s")))
    cluster.fp.arm("import.before_store", tag="a")
    first, a_answer = in_background(lambda: a.r.request("GET", path_of("m", "c", "s", "t")))
    reached = cluster.fp.wait_reached("import.before_store", tag="a")
    assert reached.context["entity"] in ("s", "t")
    second, b_answer = in_background(lambda: b.r.request("GET", path_of("m", "c", "s", "t")))
    time.sleep(1.0)  # B is waiting for A's claim: it must not have answered yet
    assert not b_answer, f"B answered while A held the claim: {b_answer}"
    cluster.fp.resume(reached)
    if reached.context["entity"] == "s":  # A imports the schema first, then the table
        cluster.fp.disarm("import.before_store", tag="a")
    first.join(60)
    second.join(60)
    assert a_answer and b_answer, "a replica never answered"
    assert a_answer[0][0] == b_answer[0][0] == 200, (a_answer, b_answer)
    assert a_answer[0][1]["table"] == b_answer[0][1]["table"]
    with cluster.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(SchemaRow)) == 1
        assert conn.scalar(select(func.count()).select_from(TableRow)) == 1
