"""Reading the parts of a request: the JSON body, boolean query flags, the acting user."""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, g, request

from gravimeta.api import input_rules
from gravimeta.dispatch import Dispatchers
from gravimeta.errors import IllegalArgument

ANONYMOUS = "anonymous"


def json_body(required: bool = True) -> Any:
    """The parsed JSON body, strictly as to syntax. Its Content-Type was checked before any view: a body
    that is not application/json is a 415 (gravimeta/api/browsers.py)."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            raise IllegalArgument("Request body cannot be null")
        return None
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IllegalArgument(f"Malformed json request: {exc}") from None
    except RecursionError:  # absurdly deep nesting: still the client's mistake, not a 500
        raise IllegalArgument("Malformed json request: the JSON is nested too deeply") from None
    input_rules.check_body(body)  # depth, NUL and lone surrogates, before any schema sees it
    return body


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (Jackson rejects them too)."""
    raise ValueError(f"{name} is not valid JSON")


def flag(name: str, default: bool = False) -> bool:
    """A boolean query parameter that only shapes an answer (`details`, `fromInclusive`), read as
    Gravitino's JAX-RS `boolean` parameters are: `true` in any case is true, any other value false
    (`?details=yes` lists names only); absent or empty, the default. The Python client sends
    True/False, others true/false."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    return raw.lower() == "true"


def drop_flag(name: str) -> bool:
    """`force`, `cascade`, `purge`: true or false in any case, else a 400. Gravitino reads any other
    value as false; gravimeta refuses it, because each value picks another drop (`?purge=yes` would
    drop the table without purging it, `?cascade=sure` an empty schema): nothing is dropped on a typo."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return False
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise IllegalArgument(f"Query parameter {name} must be true or false, not {raw!r}")


def user() -> str:
    """The acting user, set by authentication when it is on; anonymous otherwise."""
    return getattr(g, "user", None) or ANONYMOUS


def dispatchers() -> Dispatchers:
    return current_app.extensions["gravimeta"].dispatchers
