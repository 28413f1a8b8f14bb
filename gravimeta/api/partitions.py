"""/api/metalakes/{m}/catalogs/{c}/schemas/{s}/tables/{t}/partitions (Gravitino's PartitionOperations).

Partition names contain "/" (`dt=2025-12-03/country=us`); the official client percent-encodes it, and
the WSGI server decodes it before routing, so the name is matched as a path (`<path:partition>`)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app

from gravimeta import errors, partitions
from gravimeta.access import rules
from gravimeta.access.facts import TABLE
from gravimeta.api import dto, limits
from gravimeta.api.door import needs
from gravimeta.api.errors import operation
from gravimeta.api.requests import drop_flag, flag, json_body, user
from gravimeta.dispatch.partitions import PartitionDispatcher

blueprint = Blueprint(
    "partitions", __name__,
    url_prefix="/api/metalakes/<metalake>/catalogs/<catalog>/schemas/<schema>/tables/<table>/partitions",
)


def dispatcher() -> PartitionDispatcher:
    return current_app.extensions["gravimeta"].dispatchers.partitions


def partition_dto(p: partitions.Partition) -> dict[str, Any]:
    """PartitionDTO as Gravitino writes it: type, name, the kind's fields, properties."""
    fields = {"identity": ("fieldNames", "values"), "list": ("lists",), "range": ("upper", "lower")}[p["type"]]
    return {"type": p["type"], "name": p["name"], **{f: p[f] for f in fields}, "properties": p.get("properties") or {}}


@blueprint.get("")
@needs(rules.LOAD_TABLE, on=TABLE)
@operation("partition", "LIST", parent_arg="table")
def list_partitions(metalake: str, catalog: str, schema: str, table: str) -> Any:
    found = dispatcher().list(metalake, catalog, schema, table)
    if flag("details"):
        return dto.ok(partitions=[partition_dto(p) for p in found])
    return dto.ok(names=[p["name"] for p in found])


@blueprint.post("")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("partition", "CREATE", parent_arg="table")
def add_partitions(metalake: str, catalog: str, schema: str, table: str) -> Any:
    body = json_body()
    given = body.get("partitions") if isinstance(body, dict) else None
    if not isinstance(given, list):
        raise errors.IllegalArgument("partitions must not be null")
    if len(given) != 1:
        raise errors.IllegalArgument("Only one partition is supported")
    partition = partitions.parse(given[0])
    limits.check_payload({"properties": partition["properties"]})
    added = dispatcher().add(metalake, catalog, schema, table, partition, user())
    return dto.ok(partitions=[partition_dto(added)])


@blueprint.get("/<path:partition>")
@needs(rules.LOAD_TABLE, on=TABLE)
@operation("partition", "GET", "partition", parent_arg="table")
def get_partition(metalake: str, catalog: str, schema: str, table: str, partition: str) -> Any:
    return dto.ok(partition=partition_dto(dispatcher().get(metalake, catalog, schema, table, partition)))


@blueprint.delete("/<path:partition>")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("partition", "DROP", parent_arg="table")
def drop_partition(metalake: str, catalog: str, schema: str, table: str, partition: str) -> Any:
    purge = drop_flag("purge")
    return dto.ok(dropped=dispatcher().drop(metalake, catalog, schema, table, partition, purge))
