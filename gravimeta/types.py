"""Gravitino's column type and expression JSON: validation and normalisation.

Types travel in their wire form (a lowercase string such as "integer" or "varchar(10)", or an object
for list/map/struct/union/unparsed/external). The server stores and returns exactly the normalised
wire form, so the official client reads back the type it sent.
"""

from __future__ import annotations

import re
from typing import Any

from gravimeta import shape_limits

_INTEGRALS = ("byte", "short", "integer", "long")
PRIMITIVES = frozenset(
    [
        "boolean", "float", "double", "date", "time", "timestamp", "timestamp_tz", "interval_year",
        "interval_day", "string", "uuid", "binary", "null", "variant", "geometry", "geography",
        *_INTEGRALS, *(f"{t} unsigned" for t in _INTEGRALS),
    ]
)
_PARAMETERISED = [
    (re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$"), lambda m: f"decimal({m[1]},{m[2]})"),
    (re.compile(r"^(varchar|char|fixed)\(\s*(\d+)\s*\)$"), lambda m: f"{m[1]}({m[2]})"),
    (re.compile(r"^(time|timestamp|timestamp_tz)\(\s*(\d+)\s*\)$"), lambda m: f"{m[1]}({m[2]})"),
    (re.compile(r"^(geometry|geography)\((.+)\)$"), lambda m: f"{m[1]}({m[2].strip()})"),
]
EXPRESSION_KINDS = ("literal", "field", "function", "unparsed")


class TypeError_(ValueError):
    """A type or expression JSON that is not Gravitino's; the message names the offending part."""


def normalize_type(value: Any, where: str = "type", depth: int = 0) -> Any:
    """Return the canonical wire form of a Gravitino type, or raise TypeError_. `depth`: how many complex
    types enclose this one (shape_limits.TYPE_DEPTH bounds it)."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in PRIMITIVES:
            return lowered
        for pattern, render in _PARAMETERISED:
            match = pattern.match(lowered)
            if match:
                return render(match)
        raise TypeError_(
            f"{where}: unknown type {value!r}; use a Gravitino type name such as integer, long, string, "
            "varchar(10), decimal(10,2), or an unparsed type object"
        )
    if not isinstance(value, dict):
        raise TypeError_(f"{where}: a type must be a string or an object, not {type(value).__name__}")
    kind = value.get("type")
    if kind in ("list", "map", "struct", "union"):
        depth += 1
        if depth > shape_limits.TYPE_DEPTH:
            raise TypeError_(f"{where}: the type is nested more than {shape_limits.TYPE_DEPTH} levels deep; "
                             f"the limit is {shape_limits.TYPE_DEPTH} levels of list, map, struct and union")
    if kind == "list":
        return {
            "type": "list",
            "elementType": normalize_type(_required(value, "elementType", where), f"{where}.elementType", depth),
            "containsNull": _bool(value.get("containsNull", True), f"{where}.containsNull"),
        }
    if kind == "map":
        return {
            "type": "map",
            "keyType": normalize_type(_required(value, "keyType", where), f"{where}.keyType", depth),
            "valueType": normalize_type(_required(value, "valueType", where), f"{where}.valueType", depth),
            "valueContainsNull": _bool(value.get("valueContainsNull", True), f"{where}.valueContainsNull"),
        }
    if kind == "struct":
        fields = _required(value, "fields", where)
        if not isinstance(fields, list) or not fields:
            raise TypeError_(f"{where}.fields: a struct needs a non-empty list of fields")
        _at_most(fields, shape_limits.TYPE_MEMBERS, f"{where}.fields", "fields in a struct")
        return {"type": "struct",
                "fields": [_struct_field(f, f"{where}.fields[{i}]", depth) for i, f in enumerate(fields)]}
    if kind == "union":
        types = _required(value, "types", where)
        if not isinstance(types, list) or not types:
            raise TypeError_(f"{where}.types: a union needs a non-empty list of types")
        _at_most(types, shape_limits.TYPE_MEMBERS, f"{where}.types", "types in a union")
        return {"type": "union", "types": [normalize_type(t, f"{where}.types[{i}]", depth) for i, t in enumerate(types)]}
    if kind == "unparsed":
        return {"type": "unparsed", "unparsedType": _string(_required(value, "unparsedType", where), where)}
    if kind == "external":
        return {"type": "external", "catalogString": _string(_required(value, "catalogString", where), where)}
    raise TypeError_(f"{where}: unknown complex type {kind!r}; expected list, map, struct, union, unparsed or external")


def validate_expression(value: Any, where: str = "expression", depth: int = 1) -> Any:
    """Check the shape of an expression JSON (default values, function arguments, sort terms). `depth`:
    this expression's nesting level, 1 at the top (shape_limits.EXPRESSION_DEPTH bounds it)."""
    if depth > shape_limits.EXPRESSION_DEPTH:
        raise TypeError_(f"{where}: the expression is nested more than {shape_limits.EXPRESSION_DEPTH} levels deep; "
                         f"the limit is {shape_limits.EXPRESSION_DEPTH} levels of function calls")
    if not isinstance(value, dict) or value.get("type") not in EXPRESSION_KINDS:
        raise TypeError_(f"{where}: an expression must be an object with type one of {', '.join(EXPRESSION_KINDS)}")
    kind = value["type"]
    if kind == "literal":
        data_type = normalize_type(_required(value, "dataType", where), f"{where}.dataType")
        literal = value.get("value")
        if literal is not None and not isinstance(literal, str):
            raise TypeError_(f"{where}.value: a literal's value is a string or null")
        return {"type": "literal", "dataType": data_type, "value": literal}
    if kind == "field":
        names = _required(value, "fieldName", where)
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise TypeError_(f"{where}.fieldName: a non-empty list of names")
        _at_most(names, shape_limits.FIELD_PATH, f"{where}.fieldName", "names in a field path")
        return {"type": "field", "fieldName": names}
    if kind == "function":
        args = value.get("funcArgs", [])
        if not isinstance(args, list):
            raise TypeError_(f"{where}.funcArgs: a list of expressions")
        _at_most(args, shape_limits.FUNCTION_ARGUMENTS, f"{where}.funcArgs", "arguments of a function")
        return {
            "type": "function",
            "funcName": _string(_required(value, "funcName", where), f"{where}.funcName"),
            "funcArgs": [validate_expression(a, f"{where}.funcArgs[{i}]", depth + 1) for i, a in enumerate(args)],
        }
    return {"type": "unparsed", "unparsedExpression": _string(_required(value, "unparsedExpression", where), where)}


def _at_most(items: list[Any], limit: int, where: str, what: str) -> None:
    if len(items) > limit:
        raise TypeError_(f"{where}: {len(items)} {what}; the limit is {limit}")


def _struct_field(value: Any, where: str, depth: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError_(f"{where}: a struct field is an object")
    out = {
        "name": _string(_required(value, "name", where), f"{where}.name"),
        "type": normalize_type(_required(value, "type", where), f"{where}.type", depth),
        "nullable": _bool(value.get("nullable", True), f"{where}.nullable"),
    }
    if value.get("comment") is not None:
        out["comment"] = _string(value["comment"], f"{where}.comment")
    return out


def _required(value: dict[str, Any], key: str, where: str) -> Any:
    if value.get(key) is None:
        raise TypeError_(f"{where}.{key}: missing")
    return value[key]


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError_(f"{where}: must be a non-empty string")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError_(f"{where}: must be true or false")
    return value
