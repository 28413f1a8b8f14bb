"""Request-wide input rules, checked before any schema, dispatcher, engine or store sees the request:

- the JSON body is nested at most shape_limits.JSON_DEPTH levels, and every string in it (object keys
  included) is storable: no NUL, no lone surrogate (gravimeta/capacity.py). One iterative walk, so a
  hostile body cannot make the check itself recurse;
- every entity name in the URL path (metalake, catalog, schema, table) is storable and at most
  capacity.NAME_CHARS long: a longer name cannot exist, and the scope paths of claims and journal rows
  are sized for four names of that length;
- the acting user (set by authentication) is storable and at most capacity.USER_CHARS long, because every
  change writes it as creator or lastModifier.

A violation is IllegalArgument (HTTP 400, code 1001) naming the place and the rule. Name *syntax*
(which characters a name may use) is payloads.validate_name's business; these rules only keep out what
no store can hold, so that a value can never fail halfway through an operation, after its engine step.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, g, request

from gravimeta import capacity, shape_limits
from gravimeta.errors import IllegalArgument

#: URL variables that name entities (the view arguments of the REST routes)
NAME_ARGS = ("metalake", "catalog", "schema", "table")

# a path into the body: None at the top, else (parent path, key or index)
_Path = tuple[Any, Any] | None


def check_body(body: Any) -> None:
    """Raise IllegalArgument when the parsed JSON body nests too deeply or holds an unstorable string."""
    stack: list[tuple[Any, int, _Path]] = [(body, 1, None)]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            _check_text(node, path)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > shape_limits.JSON_DEPTH:
            raise IllegalArgument(
                f"Invalid request: the JSON body is nested more than {shape_limits.JSON_DEPTH} levels deep "
                f"(at {_render(path)}); the limit is {shape_limits.JSON_DEPTH} levels"
            )
        if isinstance(node, dict):
            for key, value in node.items():
                _check_text(key, path, key=True)
                stack.append((value, depth + 1, (path, key)))
        else:
            stack.extend((value, depth + 1, (path, i)) for i, value in enumerate(node))


def check_name(value: str, what: str) -> None:
    """An entity name from the URL: storable, and no longer than the store's name columns."""
    bad = capacity.unstorable_character(value)
    if bad is not None:
        raise IllegalArgument(f"The {what} name in the URL contains {bad}")
    if len(value) > capacity.NAME_CHARS:
        raise IllegalArgument(
            f"The {what} name in the URL is {len(value)} characters long; the limit is {capacity.NAME_CHARS}"
        )


def check_user(user: str) -> None:
    """The authenticated user name, which every change records as creator or lastModifier."""
    bad = capacity.unstorable_character(user)
    if bad is not None:
        raise IllegalArgument(f"The authenticated user name contains {bad}")
    if len(user) > capacity.USER_CHARS:
        raise IllegalArgument(
            f"The authenticated user name is {len(user)} characters long; the limit is {capacity.USER_CHARS}, "
            "what the metadata store records as creator and lastModifier"
        )


def register_input_rules(app: Flask) -> None:
    """Check URL names and the acting user before every view (after authentication, so that an
    unauthenticated client learns that first)."""

    @app.before_request
    def _check_request() -> None:
        for arg in NAME_ARGS:
            value = (request.view_args or {}).get(arg)
            if isinstance(value, str):
                check_name(value, arg)
        user = g.get("user")
        if isinstance(user, str):
            check_user(user)


def _check_text(text: str, path: _Path, key: bool = False) -> None:
    bad = capacity.unstorable_character(text)
    if bad is not None:
        where = f"a key of {_render(path)}" if key else _render(path)
        raise IllegalArgument(f"Invalid request: {where} contains {bad}")


def _render(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, step = path
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step[:40]}")
    text = "".join(reversed(parts)).lstrip(".")
    return (text if len(text) <= 120 else text[:120] + "...") or "the body"
