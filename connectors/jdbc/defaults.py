"""Column default values: Gravitino's expression JSON to SQL, and the engine's default text back to JSON, as
Gravitino 1.3's JdbcColumnDefaultValueConverter, PostgreSqlColumnDefaultValueConverter and
MysqlColumnDefaultValueConverter do it.

To SQL: no default writes none; a null literal NULL; a numeric literal its digits (checked to be a
number); a timestamp literal its text with 'T' as a space, quoted; any other literal its text, quoted;
current_timestamp() CURRENT_TIMESTAMP; another function `(name(args))` with literal, field and
function arguments. An unparsed expression is refused, as Gravitino refuses it ("Not a supported column
default value"): its text would go into DDL as it is.

From the engine: no default is a null literal for a nullable column and "not set" otherwise; NULL the
null literal; a literal of the column's type its typed literal (values printed as Java prints them:
2021-10-01T00:00, 1.0E10); CURRENT_TIMESTAMP the function; anything else an unparsed expression with the
engine's text. Three fixes on Gravitino: a PostgreSQL default is a typed literal only when it is all of
one ('x'::type; Gravitino also takes the first quoted value inside a function call, so abs(-4) read
as the literal -4), a PostgreSQL string's doubled quotes are read as one, and MariaDB's quoted literals
(information_schema quotes them, MySQL does not) are read without their quotes.
"""

from __future__ import annotations

import math
import re
import struct
from datetime import date, datetime, time
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from connectors.jdbc.sqltext import Quoting
from gravimeta import errors

NULL_LITERAL = {"type": "literal", "dataType": "null", "value": "NULL"}
CURRENT_TIMESTAMP = {"type": "function", "funcName": "current_timestamp", "funcArgs": []}
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INTEGRAL = ("byte", "short", "integer", "long")


def literal(data_type: Any, value: str) -> dict[str, Any]:
    return {"type": "literal", "dataType": data_type, "value": value}


def unparsed(text: str) -> dict[str, Any]:
    return {"type": "unparsed", "unparsedExpression": text}


def is_null(expression: Any) -> bool:
    return (isinstance(expression, dict) and expression.get("type") == "literal"
            and (expression.get("dataType") == "null" or expression.get("value") is None))


def _numeric(data_type: Any) -> bool:
    return isinstance(data_type, str) and (data_type.split()[0] in (*_INTEGRAL, "float", "double")
                                           or data_type.startswith("decimal("))


def to_sql(expression: Any, q: Quoting) -> str | None:
    """The SQL of a default (None: no default)."""
    if expression is None:
        return None
    return _sql(expression, q, top=True)


def _sql(expression: Any, q: Quoting, top: bool) -> str:
    kind = expression.get("type") if isinstance(expression, dict) else None
    if kind == "literal":
        value = expression.get("value")
        if is_null(expression):
            return "NULL"
        data_type = expression.get("dataType")
        if _numeric(data_type):
            if not value.strip():
                return q.literal(value)  # as Gravitino: an empty numeric literal is written as ''
            if not _NUMBER.match(value.strip()):
                raise errors.IllegalArgument(f"Default value {value[:40]!r} is not a number of type {data_type}")
            return value.strip()
        if isinstance(data_type, str) and data_type.startswith("timestamp"):
            return q.literal(value.replace("T", " "))
        return q.literal(value)
    if kind == "function":
        name, args = expression.get("funcName", ""), expression.get("funcArgs") or []
        if name.lower() == "current_timestamp" and not args:
            return "CURRENT_TIMESTAMP"
        if not _FUNCTION_NAME.match(name):
            raise errors.IllegalArgument(f"Default function name {name[:40]!r} is not a plain name")
        call = f"{name}({', '.join(_sql(a, q, top=False) for a in args)})"
        return f"({call})" if top else call
    if kind == "field" and not top and len(expression.get("fieldName") or []) == 1:
        return q.ident(expression["fieldName"][0])
    raise errors.IllegalArgument(f"Not a supported column default value: {_shown(expression)}")


def _shown(expression: Any) -> str:
    if isinstance(expression, dict) and expression.get("type") == "unparsed":
        return str(expression.get("unparsedExpression"))[:80]
    return str(expression)[:80]


# ------------------------------------------------------------------ Java's way of printing values


def java_time(t: time) -> str:
    """LocalTime.toString: HH:mm, HH:mm:ss or HH:mm:ss.SSS[SSS]."""
    text = f"{t.hour:02d}:{t.minute:02d}"
    if t.second or t.microsecond:
        text += f":{t.second:02d}"
    if t.microsecond:
        text += f".{t.microsecond // 1000:03d}" if t.microsecond % 1000 == 0 else f".{t.microsecond:06d}"
    return text


def java_floating(value: float, single: bool) -> str:
    """Float.toString / Double.toString: the shortest digits that read back, Java's layout."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if single:
        target = struct.unpack("f", struct.pack("f", value))[0]
        digits = next(f"{target:.{p}g}" for p in range(1, 10)
                      if struct.unpack("f", struct.pack("f", float(f"{target:.{p}g}")))[0] == target)
        value = float(digits)
        mantissa = Decimal(digits)
    else:
        mantissa = Decimal(repr(value))
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = format(mantissa, "f")
        return text if "." in text else text + ".0"
    sign, digits_t, exponent = mantissa.normalize().as_tuple()
    digits = "".join(map(str, digits_t))
    power = len(digits) - 1 + int(exponent)
    body = digits[0] + "." + (digits[1:] or "0")
    return ("-" if sign else "") + f"{body}E{power}"


def _integral(data_type: str, text: str) -> dict[str, Any]:
    number = int(text.strip())
    base = data_type.split()[0]
    bits = {"byte": 8, "short": 16, "integer": 32, "long": 64}[base]
    low, high = (0, 2 ** bits - 1) if data_type.endswith("unsigned") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not low <= number <= high:
        raise ValueError(f"{number} is out of range for {data_type}")
    return literal(data_type, str(number))


def _decimal(data_type: str, text: str) -> dict[str, Any]:
    precision, scale = (int(x) for x in data_type[len("decimal("):-1].split(","))
    value = Decimal(text.strip()).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if len(value.as_tuple().digits) > max(precision, 1) and value != 0:
        raise ValueError(f"{text} does not fit {data_type}")
    return literal(data_type, str(value))


def typed_literal(data_type: Any, text: str) -> dict[str, Any]:
    """A literal of Gravitino type `data_type` read from the engine's `text`; ValueError when the text is
    not a value of that type (the caller then keeps it unparsed)."""
    if not isinstance(data_type, str):
        raise ValueError("no literal of a complex type")
    base = data_type.split("(")[0]
    if data_type.split()[0] in _INTEGRAL:
        return _integral(data_type, text)
    if base == "boolean":
        return literal("boolean", "true" if text.strip().lower() == "true" else "false")  # Boolean.valueOf
    if base in ("float", "double"):
        return literal(base, java_floating(float(text), single=base == "float"))
    if base == "decimal":
        try:
            return _decimal(data_type, text)
        except InvalidOperation as exc:
            raise ValueError(str(exc)) from None
    if base == "date":
        return literal("date", date.fromisoformat(text.strip()).isoformat())
    if base == "time":
        return literal("time", java_time(time.fromisoformat(text.strip())))
    if base in ("timestamp", "timestamp_tz"):
        stamp = datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S")
        return literal("timestamp", stamp.date().isoformat() + "T" + java_time(stamp.time()))
    if base in ("varchar", "char"):
        return literal(data_type, text)
    if base == "string":
        return literal("string", text)
    raise ValueError(f"no literal of type {data_type}")


# ------------------------------------------------------------------ what the engine says


_PG_TYPED = re.compile(r"'(.*)'::\s*([\w .\[\]()\"]+)", re.S)


def from_postgresql(text: str | None, column_type: Any, generated: bool, nullable: bool) -> Any:
    """The default of a PostgreSQL column whose pg_get_expr text is `text` (None: no default)."""
    if text is None:
        return NULL_LITERAL if nullable else None
    if generated:
        return unparsed(text)
    match = _PG_TYPED.fullmatch(text)
    value = match.group(1).replace("''", "'") if match else text
    if value.startswith("NULL::"):
        return NULL_LITERAL
    try:
        if column_type == "string" or (isinstance(column_type, str) and column_type.startswith("char(")):
            return literal("string", value)  # bpchar and text: string literals (Literals.stringLiteral)
        return typed_literal(column_type, value)
    except ValueError:
        return CURRENT_TIMESTAMP if text == "CURRENT_TIMESTAMP" else unparsed(text)


def from_mysql(text: str | None, column_type: Any, expression: bool, nullable: bool, mariadb: bool) -> Any:
    """The default of a MySQL/MariaDB column whose information_schema COLUMN_DEFAULT is `text`.
    `expression`: MySQL marks it DEFAULT_GENERATED; MariaDB writes literals quoted, so there any other
    text that is not a number is an expression."""
    if text is None:
        return NULL_LITERAL if nullable else None
    if text.upper() == "NULL":
        return NULL_LITERAL
    if mariadb:
        if len(text) >= 2 and text[0] == text[-1] == "'":
            text = text[1:-1].replace("''", "'").replace("\\\\", "\\")
        elif not _NUMBER.match(text):
            expression = True
    if expression:
        return CURRENT_TIMESTAMP if text.upper().startswith("CURRENT_TIMESTAMP") else unparsed(text)
    if isinstance(column_type, str) and column_type.startswith(("timestamp", "timestamp_tz")) \
            and text.upper().startswith("CURRENT_TIMESTAMP"):
        return CURRENT_TIMESTAMP
    if column_type == "boolean" or column_type == "binary" or not isinstance(column_type, str):
        return unparsed(text)  # bit and binary defaults: Gravitino keeps them unparsed
    try:
        return typed_literal(column_type, text)
    except ValueError:
        return unparsed(text)
