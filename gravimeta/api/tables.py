"""/api/metalakes/{metalake}/catalogs/{catalog}/schemas/{schema}/tables"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta.access import rules
from gravimeta.access.facts import SCHEMA, TABLE
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs, visible
from gravimeta.api.errors import operation
from gravimeta.api.requests import dispatchers, drop_flag, json_body, user
from gravimeta.entities import Column, Table

blueprint = Blueprint(
    "tables", __name__, url_prefix="/api/metalakes/<metalake>/catalogs/<catalog>/schemas/<schema>/tables"
)


def _table_of(body: dict[str, Any]) -> Table:
    columns = [
        Column(c["name"], c["type"], c["comment"], c["nullable"], c["autoIncrement"], c["defaultValue"])
        for c in body["columns"]
    ]
    distribution = body["distribution"]
    if distribution is not None:
        strategy = distribution["strategy"].lower()
        distribution = {**distribution, "strategy": "even" if strategy == "random" else strategy}
    return Table(
        name=body["name"],
        columns=columns,
        comment=body["comment"],
        properties=body["properties"] or {},
        partitioning=body["partitioning"] or [],
        distribution=distribution,
        sort_orders=[
            {**o, "direction": o["direction"].lower(), "nullOrdering": o["nullOrdering"].lower()}
            for o in body["sortOrders"] or []
        ],
        indexes=body["indexes"] or [],
    )


@blueprint.get("")
@needs(rules.LOAD_SCHEMA, on=SCHEMA, lists=rules.FILTER_TABLE)
@operation("table", "LIST")
def list_tables(metalake: str, catalog: str, schema: str) -> Any:
    names = visible(TABLE, dispatchers().tables.list(metalake, catalog, schema), str)
    return dto.ok(identifiers=dto.identifiers([metalake, catalog, schema], names))


@blueprint.post("")
@needs(rules.CREATE_TABLE, on=SCHEMA)
@operation("table", "CREATE")
def create_table(metalake: str, catalog: str, schema: str) -> Any:
    table = _table_of(payloads.load(payloads.TableCreate, json_body()))
    return dto.ok(table=dto.table(dispatchers().tables.create(metalake, catalog, schema, table, user())))


@blueprint.get("/<table>")
@needs(rules.LOAD_TABLE, on=TABLE, modify=rules.MODIFY_TABLE)
@operation("table", "LOAD", "table")
def load_table(metalake: str, catalog: str, schema: str, table: str) -> Any:
    return dto.ok(table=dto.table(dispatchers().tables.load(metalake, catalog, schema, table)))


@blueprint.put("/<table>")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("table", "ALTER", "table")
def alter_table(metalake: str, catalog: str, schema: str, table: str) -> Any:
    changes = payloads.load_updates(json_body(), payloads.TABLE_UPDATES, allow_empty=False)
    altered = dispatchers().tables.alter(metalake, catalog, schema, table, changes, user())
    return dto.ok(table=dto.table(altered))


@blueprint.delete("/<table>")
@needs(rules.DROP_TABLE, on=TABLE)
@operation("table", "DROP", "table")
def drop_table(metalake: str, catalog: str, schema: str, table: str) -> Any:
    purge = drop_flag("purge")
    return dto.ok(dropped=dispatchers().tables.drop(metalake, catalog, schema, table, purge=purge, user=user()))
