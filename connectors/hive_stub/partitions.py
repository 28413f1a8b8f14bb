"""Hive's partition rules, as the stub metastore applies them (and as Gravitino 1.3's Hive catalog
serves them: catalogs/catalog-hive HiveTableOperations, hive-metastore-common HivePartition and
HiveTableConverter).

- Only identity partitions, one per combination of values of the table's partition columns: the
  columns of its identity partitioning, in the table's order. A partition must name exactly those
  columns (in any order), each once, with one non-null literal each.
- The metastore keeps the values as strings. A partition reads back as
  {"type": "identity", "name": "col=v/col2=v2", "fieldNames": [["col"], ["col2"]],
   "values": [string literals], "properties": {...}}, its name built from the values in the table's
  column order with Hive's path escaping (FileUtils.makePartName), whatever name the request gave.
- A drop names a partial specification ("dt=2025-12-03" drops every partition of that day); a key
  that is not a partition column matches nothing.
"""

from __future__ import annotations

from typing import Any

from connectors.hive_stub.errors import StubError

# FileUtils.escapePathName: control characters and these are written as %XX in partition names
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 0x20)}


def partition_columns(table: dict[str, Any]) -> list[str]:
    """The table's partition columns: its identity transforms' fields, in order."""
    return [p["fieldName"][0] for p in table.get("partitioning") or []
            if str(p.get("strategy", "")).lower() == "identity" and len(p.get("fieldName") or []) == 1]


def escape(value: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "%" and _is_hex(value[i + 1:i + 3]):
            out.append(chr(int(value[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def part_name(columns: list[str], values: list[str]) -> str:
    return "/".join(f"{escape(c)}={escape(v)}" for c, v in zip(columns, values, strict=True))


def new_partition(table: dict[str, Any], partition: Any) -> dict[str, Any]:
    """What the metastore keeps of a partition to add: {"values": [...], "parameters": {...}}."""
    if not isinstance(partition, dict):
        raise StubError(400, "BadRequest", "the partition must be a JSON object")
    if partition.get("name") == "*":
        raise StubError(400, "BadRequest", "Can't create a partition with reserved partition name `*`")
    if str(partition.get("type", "")).lower() != "identity":
        raise StubError(400, "BadRequest", "Hive only supports identity partition")
    fields, values = partition.get("fieldNames") or [], partition.get("values") or []
    if any(not isinstance(f, list) or len(f) != 1 for f in fields):
        raise StubError(400, "BadRequest", "Hive catalog does not support nested partition field names")
    if len(fields) != len(values):
        raise StubError(400, "BadRequest",
                        f"Partition field names size {len(fields)} must equal values size {len(values)}")
    columns = partition_columns(table)
    given = [f[0] for f in fields]
    if len(set(columns)) != len(given) or set(given) != set(columns):
        raise StubError(400, "BadRequest",
                        f"Hive partition field names must be the same as table partitioning field names: "
                        f"{','.join(columns)}, but got {','.join(given)}")
    by_column: dict[str, str] = {}
    for column, literal in zip(given, values, strict=True):
        value = literal.get("value") if isinstance(literal, dict) else None
        if not isinstance(value, str):
            raise StubError(400, "BadRequest", f"Hive partition value of {column} must be a non-null literal")
        by_column[column] = value
    parameters = partition.get("properties") or {}
    return {"values": [by_column[c] for c in columns], "parameters": dict(parameters)}


def as_gravitino(table: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """A kept partition as Gravitino's Hive catalog returns it."""
    columns = partition_columns(table)
    return {
        "type": "identity",
        "name": part_name(columns, kept["values"]),
        "fieldNames": [[c] for c in columns],
        "values": [{"type": "literal", "dataType": "string", "value": v} for v in kept["values"]],
        "properties": dict(kept.get("parameters") or {}),
    }


def spec_of(name: str) -> list[tuple[str, str]]:
    """`col=v/col2=v2` -> [(col, v), (col2, v2)], values unescaped; 400 for a part without `=`."""
    pairs = []
    for part in name.split("/"):
        key, sep, value = part.partition("=")
        if not sep:
            raise StubError(400, "BadRequest", f"Invalid partition format: {name}")
        pairs.append((unescape(key), unescape(value)))
    return pairs


def matches(columns: list[str], kept: dict[str, Any], spec: list[tuple[str, str]]) -> bool:
    """Whether a kept partition has every value the (partial) specification names."""
    values = dict(zip(columns, kept["values"], strict=True))
    return all(key in values and values[key] == value for key, value in spec)
