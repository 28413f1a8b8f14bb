"""Gravitino types and PostgreSQL types, as Gravitino 1.3's PostgreSqlTypeConverter maps them.

To PostgreSQL (fromGravitino): boolean bool, short int2, integer int4, long int8, float float4, double
float8, string text, date, time[(p)], timestamp[(p)], timestamp_tz[(p)] timestamptz[(p)], decimal(p,s)
numeric(p,s), varchar(n), char(n) bpchar(n), binary bytea, uuid, list<T> T[] (its elements not nullable,
one dimension), external: its catalog string. Any other type is refused ("Couldn't convert ...").

From PostgreSQL (toGravitino), from the column's type name and modifier as pgjdbc reports them: the
names above back to their types, `varchar` without a length as varchar(2147483647) (pgjdbc's unknown
length), `numeric` without a precision as decimal(38,18), time and timestamps without a precision as
precision 6 (PostgreSQL's default, which pgjdbc reports), an array `_T` as list<T> without nulls
whose element carries no length or precision (pgjdbc reports none for it), and any other type as an
external type named as PostgreSQL names it.

An external type's catalog string goes into DDL as it is, so it must look like a type name (a
qualified name, a modifier of numbers, array brackets): anything else is refused.
"""

from __future__ import annotations

import re
from typing import Any

from gravimeta import errors

_SIMPLE_TO_PG = {"boolean": "bool", "short": "int2", "integer": "int4", "long": "int8", "float": "float4",
                 "double": "float8", "string": "text", "date": "date", "binary": "bytea", "uuid": "uuid"}
_PG_TO_SIMPLE = {"bool": "boolean", "int2": "short", "int4": "integer", "int8": "long", "float4": "float",
                 "float8": "double", "text": "string", "date": "date", "bytea": "binary", "uuid": "uuid"}
_PARAM = re.compile(r"^(decimal|varchar|char|time|timestamp|timestamp_tz)\((\d+)(?:,(\d+))?\)$")
#: pgjdbc's length of a varchar or bpchar without one (its unknownLength default, Integer.MAX_VALUE)
UNKNOWN_LENGTH = 2147483647
DEFAULT_NUMERIC = "decimal(38,18)"
DEFAULT_PRECISION = 6
#: what an external type's catalog string may be: a (qualified, quoted or plain) type name, words
#: ("double precision", "timestamp with time zone"), a modifier of numbers, array brackets
SAFE_EXTERNAL = re.compile(
    r'^(?:[A-Za-z_][A-Za-z0-9_$]*|"[^"\x00]+")(?:\.(?:[A-Za-z_][A-Za-z0-9_$]*|"[^"\x00]+"))?'
    r"(?: [A-Za-z_][A-Za-z0-9_]*)*(?:\(\s*\d+\s*(?:,\s*-?\d+\s*)?\))?(?: [A-Za-z_][A-Za-z0-9_]*)*(?:\[\d*\])*$")


def simple_string(t: Any) -> str:
    """A type as Gravitino's simpleString() prints it (for messages)."""
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "list":
        return f"list<{simple_string(t['elementType'])}>"
    if kind == "map":
        return f"map<{simple_string(t['keyType'])},{simple_string(t['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{simple_string(f['type'])}" for f in t["fields"]) + ">"
    if kind == "union":
        return "union<" + ",".join(simple_string(x) for x in t["types"]) + ">"
    if kind == "external":
        return f"external({t['catalogString']})"
    return f"unparsed({t.get('unparsedType')})"


def check_external(catalog_string: str, engine: str) -> str:
    if not SAFE_EXTERNAL.match(catalog_string.strip()):
        raise errors.IllegalArgument(f"External type {catalog_string[:80]!r} does not look like a {engine} type name")
    return catalog_string.strip()


def to_postgresql(t: Any) -> str:
    """The PostgreSQL type for Gravitino type `t` (IllegalArgument when there is none)."""
    if isinstance(t, str):
        if t in _SIMPLE_TO_PG:
            return _SIMPLE_TO_PG[t]
        if t in ("time", "timestamp"):
            return t
        if t == "timestamp_tz":
            return "timestamptz"
        match = _PARAM.match(t)
        if match:
            name, first, second = match.groups()
            return {"decimal": f"numeric({first},{second})", "varchar": f"varchar({first})",
                    "char": f"bpchar({first})", "time": f"time({first})", "timestamp": f"timestamp({first})",
                    "timestamp_tz": f"timestamptz({first})"}[name]
    elif t.get("type") == "list":
        element = t["elementType"]
        if t.get("containsNull", True):
            raise errors.IllegalArgument("PostgreSQL doesn't support element to nullable")
        if isinstance(element, dict) and element.get("type") == "list":
            raise errors.IllegalArgument(
                "PostgreSQL doesn't support multidimensional list internally, please use one dimensional list")
        return to_postgresql(element) + "[]"
    elif t.get("type") == "external":
        return check_external(t["catalogString"], "PostgreSQL")
    raise errors.IllegalArgument(f"Couldn't convert Gravitino type {simple_string(t)} to PostgreSQL type")


def from_postgresql(typname: str, typmod: int, element: bool = False) -> Any:
    """The Gravitino type of a column of PostgreSQL type `typname` with modifier `typmod` (-1: none).
    `element`: the type of an array's elements, of which pgjdbc reports no length or precision."""
    name = typname.lower()
    if name.startswith("_") and not element:
        if name == "_bpchar":  # Gravitino fails on it (a fixed char without a length): external here
            return {"type": "external", "catalogString": typname}
        return {"type": "list", "elementType": from_postgresql(name[1:], -1, element=True), "containsNull": False}
    if name in _PG_TO_SIMPLE:
        return _PG_TO_SIMPLE[name]
    if name in ("time", "timestamp", "timestamptz"):
        base = "timestamp_tz" if name == "timestamptz" else name
        if element:
            return base
        return f"{base}({typmod if typmod >= 0 else DEFAULT_PRECISION})"
    if element and name == "varchar":
        return "string"
    if name == "numeric":
        if typmod < 0:
            return DEFAULT_NUMERIC
        precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        if 1 <= precision <= 38 and scale <= precision:
            return f"decimal({precision},{scale})"
        return {"type": "external", "catalogString": typname}  # beyond Gravitino's decimal (or a negative scale)
    if name == "varchar":
        return f"varchar({typmod - 4 if typmod >= 4 else UNKNOWN_LENGTH})"
    if name == "bpchar":
        return f"char({typmod - 4 if typmod >= 4 else UNKNOWN_LENGTH})"
    return {"type": "external", "catalogString": typname}


def engine_form(t: Any) -> tuple[str, int]:
    """(type name, modifier) PostgreSQL keeps for a column declared as to_postgresql(t)."""
    sql = to_postgresql(t)
    if sql.endswith("[]"):
        return "_" + engine_form(t["elementType"])[0], -1
    match = re.match(r"^(\w+)(?:\((\d+)(?:,(\d+))?\))?$", sql)
    if match is None:
        return sql, -1
    name, first, second = match.groups()
    if first is None:
        return name, -1
    if name == "numeric":
        return name, ((int(first) << 16) | int(second or 0)) + 4
    if name in ("varchar", "bpchar"):
        return name, int(first) + 4
    return name, int(first)


def described(t: Any) -> Any:
    """How PostgreSQL describes a column gravimeta declared with type `t` (timestamp -> timestamp(6),
    list<varchar(10)> -> list<string>, ...); a type it cannot declare is returned as it is."""
    try:
        return from_postgresql(*engine_form(t))
    except errors.IllegalArgument:
        return t


def auto_increment_allowed(t: Any) -> bool:
    """Types.allowAutoIncrement: the integral types."""
    return isinstance(t, str) and t.split()[0] in ("byte", "short", "integer", "long")
