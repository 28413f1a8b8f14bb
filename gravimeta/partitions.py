"""Gravitino's partition JSON (PartitionDTO: identity, list, range), checked as its JSON reader checks
it, and the rules for partitions the store keeps itself (a `memory` catalog). Pure functions: the API
validates a request with `parse`; the dispatcher checks a store-kept partition against its table with
`for_table`. An engine that keeps partitions (the Hive stub) applies its own rules.

Wire forms (JsonUtils.writePartition):
  {"type": "identity", "name": n, "fieldNames": [["col"], ...], "values": [literal, ...], "properties": {}}
  {"type": "list", "name": n, "lists": [[literal, ...], ...], "properties": {}}
  {"type": "range", "name": n, "upper": literal, "lower": literal, "properties": {}}
"""

from __future__ import annotations

import re
from typing import Any

from gravimeta import errors
from gravimeta.types import TypeError_, validate_expression

Partition = dict[str, Any]
KINDS = ("identity", "list", "range")
NAME_MAX = 512  # gm_partition.name, gm_partition_statistic.partition_name
RESERVED_NAME = "*"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def parse(data: Any) -> Partition:
    """A partition of a request, normalised (type lowercase, properties {}), or IllegalArgument."""
    if not isinstance(data, dict) or not data:
        raise errors.IllegalArgument(f"Partition must be a valid JSON object, but found: {data!r}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise errors.IllegalArgument(f"Partition must have a type field, but found: {data!r}")
    kind = kind.lower()
    if kind not in KINDS:
        raise errors.IllegalArgument(f"Unknown partition type: {data['type']}; expected identity, list or range")
    name = data.get("name")
    if name is not None:
        check_name(name)
    out: Partition = {"type": kind, "name": name}
    if kind == "identity":
        field_names = data.get("fieldNames")
        if not isinstance(field_names, list) or not all(_is_path(f) for f in field_names):
            raise errors.IllegalArgument("Identity partition must have array of fieldNames (lists of names)")
        values = data.get("values")
        if not isinstance(values, list):
            raise errors.IllegalArgument("Identity partition must have array of values")
        out["fieldNames"] = [list(f) for f in field_names]
        out["values"] = [_literal(v, f"values[{i}]") for i, v in enumerate(values)]
    elif kind == "list":
        lists = data.get("lists")
        if "name" not in data or not isinstance(lists, list) or not all(isinstance(v, list) for v in lists):
            raise errors.IllegalArgument("List partition must have a name and an array of lists")
        out["lists"] = [[_literal(v, f"lists[{i}][{j}]") for j, v in enumerate(vs)] for i, vs in enumerate(lists)]
    else:
        if "name" not in data or "upper" not in data or "lower" not in data:
            raise errors.IllegalArgument("Range partition must have name, upper and lower")
        out["upper"], out["lower"] = _literal(data["upper"], "upper"), _literal(data["lower"], "lower")
    properties = data.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in properties.items()):
        raise errors.IllegalArgument("Partition properties must be an object of strings")
    out["properties"] = dict(properties)
    return out


def check_name(name: Any) -> str:
    """A partition name as a path segment of the API can carry it."""
    if not isinstance(name, str) or not name.strip():
        raise errors.IllegalArgument("Partition name must not be null or empty")
    if name == RESERVED_NAME:
        raise errors.IllegalArgument("Can't create a partition with reserved partition name `*`")
    if len(name) > NAME_MAX:
        raise errors.IllegalArgument(f"Partition name is {len(name)} characters long; the limit is {NAME_MAX}")
    if _CONTROL.search(name):
        raise errors.IllegalArgument(f"Partition name {name!r} contains a control character")
    return name


def for_table(partition: Partition, partitioning: list[dict[str, Any]], table: str) -> Partition:
    """A store-kept partition checked against its table's partitioning: identity partitions name
    exactly the columns of the table's identity transforms (in any order, with one literal each; the
    name defaults to `col=value/...`), list and range partitions need a list or range partitioning.
    Returns the partition as kept."""
    strategies = {p.get("strategy") for p in partitioning}
    if not partitioning:
        raise errors.IllegalArgument(f"Table {table} is not partitioned; it has no partitions to add")
    kind = partition["type"]
    if kind == "identity":
        columns = [p["fieldName"] for p in partitioning if p.get("strategy") == "identity" and "fieldName" in p]
        wanted = sorted(".".join(c) for c in columns)
        given = sorted(".".join(f) for f in partition["fieldNames"])
        if not columns or given != wanted:
            raise errors.IllegalArgument(
                f"Identity partition field names must be the table's identity partitioning fields "
                f"[{', '.join(wanted)}], but got [{', '.join(given)}]")
        if len(partition["values"]) != len(partition["fieldNames"]):
            raise errors.IllegalArgument(
                f"Partition field names size {len(partition['fieldNames'])} must equal values size "
                f"{len(partition['values'])}")
        if partition["name"] is None:
            partition = {**partition, "name": check_name(identity_name(partition["fieldNames"], partition["values"]))}
    elif kind not in strategies:
        raise errors.IllegalArgument(f"A {kind} partition needs a {kind} partitioning; table {table} is partitioned "
                                     f"by {', '.join(sorted(str(s) for s in strategies))}")
    if partition["name"] is None:
        raise errors.IllegalArgument("Partition name must not be null or empty")
    return partition


def identity_name(field_names: list[list[str]], values: list[dict[str, Any]]) -> str:
    """`col=value/col2=value2`: the name Hive (and Gravitino's HivePartition) gives an identity partition."""
    return "/".join(f"{'.'.join(f)}={v.get('value')}" for f, v in zip(field_names, values, strict=True))


def _is_path(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(n, str) and n for n in value)


def _literal(value: Any, where: str) -> dict[str, Any]:
    try:
        checked = validate_expression(value, where)
    except TypeError_ as exc:
        raise errors.IllegalArgument(f"Invalid partition value: {exc}") from None
    if checked["type"] != "literal":
        raise errors.IllegalArgument(f"Invalid partition value: {where} must be a literal")
    return checked
