"""Scope paths as the claim layer stores them: '/' for the root, '/m/c/s' for a schema scope.

Relatedness is decided on the string: P and Q are related when equal or when one is a prefix of the
other followed by '/'. A name that itself contains '/' can only make two paths look related that are
not (false contention), never hide a real ancestor, so the check errs on the safe side.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, bindparam, or_

from gravimeta.entities import NameIdentifier

ROOT_PATH = "/"
LIKE_ESCAPE = "!"


def scope_path(ident: NameIdentifier) -> str:
    return "/" + "/".join(ident.levels)


def ancestors(path: str) -> list[str]:
    """Proper ancestors of `path`, root first: '/m/c' -> ['/', '/m']."""
    if path == ROOT_PATH:
        return []
    parts = path.split("/")[1:]
    return [ROOT_PATH] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def is_ancestor(a: str, b: str) -> bool:
    return a != b and (a == ROOT_PATH or b.startswith(a + "/"))


def related(a: str, b: str) -> bool:
    return a == b or is_ancestor(a, b) or is_ancestor(b, a)


def escape_like(text: str) -> str:
    """Escape LIKE wildcards (and the escape character itself) with LIKE_ESCAPE."""
    return text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2).replace("%", LIKE_ESCAPE + "%").replace("_", LIKE_ESCAPE + "_")


def descendant_pattern(path: str) -> str:
    """A LIKE pattern (escape LIKE_ESCAPE) matching every proper descendant of `path`."""
    prefix = ROOT_PATH if path == ROOT_PATH else path + "/"
    return escape_like(prefix) + "%"


def related_in_sql(column: ColumnElement[str], path: str) -> ColumnElement[bool]:
    """SQL: `column` holds `path`, an ancestor or a descendant of it. SQLite's LIKE ignores ASCII
    case, so callers re-check the rows they get with related()."""
    return or_(column.in_([path, *ancestors(path)]), column.like(descendant_pattern(path), escape=LIKE_ESCAPE))


def related_in_sql_bound(column: ColumnElement[str]) -> ColumnElement[bool]:
    """related_in_sql with the path left to bind when the statement runs (related_sql_values), for a
    statement built once. The parameters are named as SQLAlchemy names related_in_sql's on a column
    called scope_path, so the two send the same SQL (tests/unit/test_related_sql.py)."""
    return or_(column.in_(bindparam("scope_path_1", expanding=True)),
               column.like(bindparam("scope_path_2"), escape=LIKE_ESCAPE))


def related_sql_values(path: str) -> dict[str, Any]:
    """The values of related_in_sql_bound's parameters for `path`."""
    return {"scope_path_1": [path, *ancestors(path)], "scope_path_2": descendant_pattern(path)}


def anchor_of(path: str) -> str:
    """The serializer row a claim on `path` locks exclusively: '/' for the root, else '/<first level>'."""
    if path == ROOT_PATH:
        return ROOT_PATH
    return "/" + path.split("/")[1]
