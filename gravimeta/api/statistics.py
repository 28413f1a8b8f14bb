"""/api/metalakes/{metalake}/objects/{type}/{fullName}/statistics[/partitions] (Gravitino's
StatisticOperations): GET lists, PUT updates, POST drops (the body names what to drop)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, request

from gravimeta import errors, metadata_objects
from gravimeta.access import rules
from gravimeta.access.facts import TABLE
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs
from gravimeta.api.errors import operation, operation_names
from gravimeta.api.requests import flag, json_body, user
from gravimeta.api.statistic_payloads import (
    PartitionStatisticsDrop,
    PartitionStatisticsUpdate,
    StatisticsDrop,
    StatisticsUpdate,
    statistic,
)
from gravimeta.dispatch.statistics import StatisticDispatcher
from gravimeta.store.statistics import PAGE_MAX, Page, PartitionRange

blueprint = Blueprint("statistics", __name__, url_prefix="/api/metalakes/<metalake>/objects/<kind>/<full_name>/statistics")


def statistics() -> StatisticDispatcher:
    return current_app.extensions["gravimeta"].dispatchers.statistics


def page() -> Page:
    """`?limit=N&offset=K` (gravimeta's extension; Gravitino 1.3 lists everything): without `limit`, the
    whole listing, which the per-table limits bound."""
    values = {}
    for name, low, high in (("limit", 1, PAGE_MAX), ("offset", 0, 2**31 - 1)):
        raw = request.args.get(name)
        if raw is None or raw == "":
            continue
        if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
            raise errors.IllegalArgument(f"Query parameter '{name}' must be an integer from {low} to {high}")
        values[name] = int(raw)
    return Page(values.get("limit"), values.get("offset", 0))


@blueprint.get("")
@needs(rules.LOAD_TABLE, on=TABLE)
@operation("statistic", "LIST", "full_name", parent_arg="metalake")
def list_statistics(metalake: str, kind: str, full_name: str) -> Any:
    found = statistics().list_statistics(metalake, metadata_objects.parse(kind, full_name), page())
    return dto.ok(statistics=[statistic(s) for s in found])


@blueprint.put("")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("statistic", "UPDATE", parent_arg="full_name")
def update_statistics(metalake: str, kind: str, full_name: str) -> Any:
    body = payloads.load(StatisticsUpdate, json_body())
    operation_names(",".join(body["updates"]))
    statistics().update_statistics(metalake, metadata_objects.parse(kind, full_name), body["updates"], user())
    return dto.ok()


@blueprint.post("")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("statistic", "DROP", parent_arg="full_name")
def drop_statistics(metalake: str, kind: str, full_name: str) -> Any:
    body = payloads.load(StatisticsDrop, json_body())
    operation_names(",".join(body["names"]))
    return dto.ok(dropped=statistics().drop_statistics(metalake, metadata_objects.parse(kind, full_name), body["names"]))


# ---------------------------------------------------------------------- partition statistics


@blueprint.get("/partitions")
@needs(rules.LOAD_TABLE, on=TABLE)
@operation("partition stats", "LIST", parent_arg="full_name")
def list_partition_statistics(metalake: str, kind: str, full_name: str) -> Any:
    span = PartitionRange(request.args.get("from"), flag("fromInclusive", True),
                          request.args.get("to"), flag("toInclusive", False))
    operation_names(f"{'(-INF' if span.lower is None else ('[' if span.lower_inclusive else '(') + span.lower},"
                    f"{'INF)' if span.upper is None else span.upper + (']' if span.upper_inclusive else ')')}")
    found = statistics().list_partitions(metalake, metadata_objects.parse(kind, full_name), span, page())
    return dto.ok(partitionStatistics=[
        {"partitionName": name, "statistics": [statistic(s) for s in stats]} for name, stats in found
    ])


@blueprint.put("/partitions")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("partition stats", "UPDATE", parent_arg="full_name")
def update_partition_statistics(metalake: str, kind: str, full_name: str) -> Any:
    body = payloads.load(PartitionStatisticsUpdate, json_body())
    updates = [(u["partitionName"], u["statistics"]) for u in body["updates"]]
    operation_names(",".join(name for name, _ in updates))
    statistics().update_partitions(metalake, metadata_objects.parse(kind, full_name), updates, user())
    return dto.ok()


@blueprint.post("/partitions")
@needs(rules.MODIFY_TABLE, on=TABLE)
@operation("partition stats", "DROP", parent_arg="full_name")
def drop_partition_statistics(metalake: str, kind: str, full_name: str) -> Any:
    body = payloads.load(PartitionStatisticsDrop, json_body())
    drops = [(d["partitionName"], d["statisticNames"]) for d in body["drops"]]
    operation_names(",".join(name for name, _ in drops))
    return dto.ok(dropped=statistics().drop_partitions(metalake, metadata_objects.parse(kind, full_name), drops))
