"""Gravitino types and MySQL/MariaDB types, as Gravitino 1.3's MysqlTypeConverter maps them.

To MySQL (fromGravitino): byte tinyint, short smallint, integer int, long bigint (each `unsigned` too),
float, double, string text, date, time[(p)], timestamp_tz[(p)] timestamp[(p)] (MySQL's TIMESTAMP is kept
in UTC), timestamp[(p)] datetime[(p)], decimal(p,s), varchar(n), char(n), binary, boolean bit, external:
its catalog string. Any other type is refused ("Couldn't convert ...").

From MySQL (toGravitino), from information_schema.COLUMNS as Connector/J 8.0.16+ reports it: bit(1)
boolean and wider bits binary, the integer types with `unsigned`, float, double, date, time(p),
timestamp(p) timestamp_tz(p), datetime(p) timestamp(p), decimal(p,s), varchar(n), char(n), text string,
binary, tinyint(1) boolean (Connector/J's BIT for it); any other type is an external type named as
Connector/J names it (upper case, UNSIGNED).
"""

from __future__ import annotations

import re
from typing import Any

from connectors.jdbc.pgtypes import check_external, simple_string
from gravimeta import errors

_INTEGERS = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint"}
_FROM_INTEGERS = {v: k for k, v in _INTEGERS.items()}
_SIMPLE = {"float": "float", "double": "double", "string": "text", "date": "date", "binary": "binary",
           "boolean": "bit", "time": "time"}
_PARAM = re.compile(r"^(decimal|varchar|char|time|timestamp|timestamp_tz)\((\d+)(?:,(\d+))?\)$")


def to_mysql(t: Any) -> str:
    """The MySQL type for Gravitino type `t` (IllegalArgument when there is none)."""
    if isinstance(t, str):
        words = t.split()
        if words[0] in _INTEGERS and (len(words) == 1 or words[1:] == ["unsigned"]):
            return _INTEGERS[words[0]] + (" unsigned" if len(words) == 2 else "")
        if t in _SIMPLE:
            return _SIMPLE[t]
        if t == "timestamp":
            return "datetime"
        if t == "timestamp_tz":
            return "timestamp"
        match = _PARAM.match(t)
        if match:
            name, first, second = match.groups()
            return {"decimal": f"decimal({first},{second})", "varchar": f"varchar({first})", "char": f"char({first})",
                    "time": f"time({first})", "timestamp": f"datetime({first})",
                    "timestamp_tz": f"timestamp({first})"}[name]
    elif t.get("type") == "external":
        return check_external(t["catalogString"], "MySQL")
    raise errors.IllegalArgument(f"Couldn't convert Gravitino type {simple_string(t)} to MySQL type")


def from_mysql(data_type: str, column_type: str, length: int | None, precision: int | None, scale: int | None,
               datetime_precision: int | None) -> Any:
    """The Gravitino type of a column information_schema.COLUMNS describes by these fields."""
    name = data_type.lower()
    unsigned = " unsigned" in f" {column_type.lower()} "
    if name == "bit":
        return "boolean" if precision in (None, 1) else "binary"
    if name == "tinyint" and column_type.lower().startswith("tinyint(1)") and not unsigned:
        return "boolean"  # Connector/J reports tinyint(1) as BIT (its tinyInt1isBit default), read as boolean
    if name in _FROM_INTEGERS:
        return _FROM_INTEGERS[name] + (" unsigned" if unsigned else "")
    if name in ("float", "double", "date"):
        return name
    if name == "real":
        return "double"
    if name in ("time", "datetime", "timestamp"):
        base = {"time": "time", "datetime": "timestamp", "timestamp": "timestamp_tz"}[name]
        return f"{base}({datetime_precision or 0})"
    if name == "decimal" and precision is not None and 1 <= precision <= 38 and scale is not None:
        return f"decimal({precision},{scale})"
    if name in ("varchar", "char") and length is not None and length > 0:
        return f"{name}({length})"
    if name == "text":
        return "string"
    if name == "binary":
        return "binary"
    return {"type": "external", "catalogString": name.upper() + (" UNSIGNED" if unsigned else "")}


_DECLARED = re.compile(r"^\s*([A-Za-z]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?(.*)$")


def described(t: Any) -> Any:
    """How MySQL describes a column gravimeta declared with type `t`: time and timestamps without a
    precision read back with precision 0 (MySQL's default), an external type as MySQL reads its
    declaration back; a type it cannot declare is returned as it is."""
    try:
        declared = to_mysql(t)
    except errors.IllegalArgument:
        return t
    if t in ("time", "timestamp", "timestamp_tz"):
        return f"{t}(0)"
    if isinstance(t, dict):
        match = _DECLARED.match(declared)
        if match is None:
            return t
        name, first, second, rest = match.groups()
        size = int(first) if first else None
        return from_mysql(name, declared, size, size if name.lower() != "bit" or size else 1,
                          int(second) if second else (0 if first else None), size or 0)
    return t
