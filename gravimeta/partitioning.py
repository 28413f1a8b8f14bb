"""Gravitino's table partitioning JSON (and the partition DTOs inside list and range partitioning):
validation and normalisation to the form Gravitino's server writes back (JsonUtils' PartitioningSerializer
and writePartition), so nothing a client sends is stored unchecked.

Forms, by strategy:
  identity, year, month, day, hour   {"strategy", "fieldName": [name, ...]}
  bucket                             {"strategy", "numBuckets": int, "fieldNames": [[name, ...], ...]}
  truncate                           {"strategy", "width": int, "fieldName": [name, ...]}
  list                               {"strategy", "fieldNames": [[...], ...], "assignments": [list partition, ...]}
  range                              {"strategy", "fieldName": [...], "assignments": [range partition, ...]}
  function                           {"strategy", "funcName", "funcArgs": [expression, ...]}
Partitions:
  identity  {"type", "name", "fieldNames": [[...], ...], "values": [literal, ...], "properties"}
  list      {"type", "name", "lists": [[literal, ...], ...], "properties"}
  range     {"type", "name", "upper": literal, "lower": literal, "properties"}
Like Gravitino, keys a strategy does not use are dropped, and list/range partitioning always has
`assignments` (empty when none were given). Sizes and nesting are bounded by gravimeta.shape_limits.
"""

from __future__ import annotations

from typing import Any

from gravimeta import shape_limits
from gravimeta.types import TypeError_, validate_expression

SINGLE_FIELD = ("identity", "year", "month", "day", "hour")
STRATEGIES = (*SINGLE_FIELD, "bucket", "truncate", "list", "range", "function")
_INT32 = (-(2**31), 2**31 - 1)


def normalize_partitioning(value: Any, where: str = "partitioning") -> dict[str, Any]:
    """The canonical form of one partitioning, or TypeError_ naming the offending part."""
    if not isinstance(value, dict) or not isinstance(value.get("strategy"), str) \
            or value["strategy"].lower() not in STRATEGIES:
        raise TypeError_(f"{where}: a partitioning needs a strategy, one of {', '.join(STRATEGIES)}")
    strategy = value["strategy"].lower()
    out: dict[str, Any] = {"strategy": strategy}
    if strategy in SINGLE_FIELD:
        out["fieldName"] = _field_name(value, "fieldName", where)
    elif strategy == "bucket":
        out["numBuckets"] = _int(value, "numBuckets", where)
        out["fieldNames"] = _field_names(value, "fieldNames", where)
    elif strategy == "truncate":
        out["width"] = _int(value, "width", where)
        out["fieldName"] = _field_name(value, "fieldName", where)
    elif strategy == "list":
        out["fieldNames"] = _field_names(value, "fieldNames", where)
        out["assignments"] = _assignments(value, where, "list")
    elif strategy == "range":
        out["fieldName"] = _field_name(value, "fieldName", where)
        out["assignments"] = _assignments(value, where, "range")
    else:
        name = value.get("funcName")
        if not isinstance(name, str) or not name:
            raise TypeError_(f"{where}.funcName: must be a non-empty string")
        args = value.get("funcArgs")
        if not isinstance(args, list):
            raise TypeError_(f"{where}.funcArgs: a list of expressions")
        _at_most(args, shape_limits.FUNCTION_ARGUMENTS, f"{where}.funcArgs", "arguments of a function")
        out["funcName"] = name
        out["funcArgs"] = [validate_expression(a, f"{where}.funcArgs[{i}]", 2) for i, a in enumerate(args)]
    return out


def normalize_partition(value: Any, where: str = "partition") -> dict[str, Any]:
    """The canonical form of one partition (identity, list or range), or TypeError_."""
    kinds = ("identity", "list", "range")
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or value["type"].lower() not in kinds:
        raise TypeError_(f"{where}: a partition needs a type, one of {', '.join(kinds)}")
    kind = value["type"].lower()
    name = value.get("name")
    if name is not None and not isinstance(name, str):
        raise TypeError_(f"{where}.name: must be a string")
    if kind != "identity" and "name" not in value:
        raise TypeError_(f"{where}.name: a {kind} partition must have a name")
    out: dict[str, Any] = {"type": kind, "name": name}
    if kind == "identity":
        out["fieldNames"] = _field_names(value, "fieldNames", where)
        out["values"] = _literals(value.get("values"), f"{where}.values")
    elif kind == "list":
        lists = value.get("lists")
        if not isinstance(lists, list):
            raise TypeError_(f"{where}.lists: a list partition must have a list of value lists")
        _at_most(lists, shape_limits.PARTITION_ASSIGNMENTS, f"{where}.lists", "value lists")
        out["lists"] = [_literals(v, f"{where}.lists[{i}]") for i, v in enumerate(lists)]
    else:
        for bound in ("upper", "lower"):
            out[bound] = _literal(value.get(bound), f"{where}.{bound}")
    out["properties"] = _properties(value.get("properties"), f"{where}.properties")
    return out


def _assignments(value: dict[str, Any], where: str, kind: str) -> list[dict[str, Any]]:
    assignments = value.get("assignments")
    if assignments is None:
        return []
    if not isinstance(assignments, list):
        raise TypeError_(f"{where}.assignments: must be a list of {kind} partitions")
    _at_most(assignments, shape_limits.PARTITION_ASSIGNMENTS, f"{where}.assignments", "partitions")
    result = [normalize_partition(a, f"{where}.assignments[{i}]") for i, a in enumerate(assignments)]
    if any(p["type"] != kind for p in result):
        raise TypeError_(f"{where}.assignments: {kind} partitioning takes {kind} partitions only")
    return result


def _field_name(value: dict[str, Any], key: str, where: str) -> list[str]:
    return _path(value.get(key), f"{where}.{key}")


def _field_names(value: dict[str, Any], key: str, where: str) -> list[list[str]]:
    paths = value.get(key)
    if not isinstance(paths, list):
        raise TypeError_(f"{where}.{key}: must be a list of field names (lists of names)")
    _at_most(paths, shape_limits.INDEX_FIELDS, f"{where}.{key}", "fields")
    return [_path(p, f"{where}.{key}[{i}]") for i, p in enumerate(paths)]


def _path(names: Any, where: str) -> list[str]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TypeError_(f"{where}: must be a list of names")
    _at_most(names, shape_limits.FIELD_PATH, where, "names in a field path")
    return list(names)


def _int(value: dict[str, Any], key: str, where: str) -> int:
    number = value.get(key)
    if not isinstance(number, int) or isinstance(number, bool) or not _INT32[0] <= number <= _INT32[1]:
        raise TypeError_(f"{where}.{key}: must be a 32-bit integer")
    return number


def _literals(values: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(values, list):
        raise TypeError_(f"{where}: must be a list of literals")
    _at_most(values, shape_limits.FUNCTION_ARGUMENTS, where, "values")
    return [_literal(v, f"{where}[{i}]") for i, v in enumerate(values)]


def _literal(value: Any, where: str) -> dict[str, Any]:
    expression = validate_expression(value, where)
    if expression["type"] != "literal":
        raise TypeError_(f"{where}: a partition value must be a literal")
    return dict(expression)


def _properties(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError_(f"{where}: must be a map of strings")
    return dict(value)


def _at_most(items: list[Any], limit: int, where: str, what: str) -> None:
    if len(items) > limit:
        raise TypeError_(f"{where}: {len(items)} {what}; the limit is {limit}")
