"""Checks on what a Hive metastore answers. The metastore is another system, reached at whatever address
a catalog's `metastore.uris` names: its replies are untrusted input. Every reply the hive connector
uses passes through one of these checks, so that a reply of the wrong shape (not JSON, a list where an
object belongs, a name that is not a string, duplicate columns...) is a clear 502 BadReply naming the
metastore and the call, never a 500 from deep inside the connector and never taken for success.

Text. Every string of every reply (object keys included) must be one a metadata store can hold
(gravimeta/capacity.py: no lone surrogate, which JSON's "\\ud800" escape yields and UTF-8 cannot encode;
no NUL, which PostgreSQL cannot store). The edge refuses such text in requests; a metastore can still hold
it (written there by another client), and then the reply is a BadReply naming the place in the reply
(`columns[0].comment`) and the character, checked once when the reply is read. Before, a table whose
comment held a lone surrogate was imported by a load, and the store's write failed with a 500."""

from __future__ import annotations

from typing import Any

from gravimeta import capacity, errors
from gravimeta.entities import Column, Schema, Table


class BadReply(errors.ConnectionFailed):
    """The metastore answered, but not with anything gravimeta can use (HTTP 502)."""


class NotJson:
    """The body of a reply that was not JSON (kept apart from any JSON value it could be mistaken for)."""

    def __init__(self, raw: bytes):
        self.excerpt = raw[:120].decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"a body that is not JSON ({self.excerpt!r})"


def describe(value: Any) -> str:
    """A short description of a bad value for a message (never the whole reply)."""
    if isinstance(value, NotJson):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


def unstorable_text(payload: Any) -> tuple[str, str, str] | None:
    """(place, character, text) of a string in the decoded reply, or one of its object keys, that no store
    can hold; None when there is none. Iterative: a deep reply cannot make the check recurse."""
    stack: list[tuple[Any, str]] = [(payload, "")]
    while stack:
        node, place = stack.pop()
        if isinstance(node, str):
            character = capacity.unstorable_character(node)
            if character is not None:
                return place or "the reply", character, node
        elif isinstance(node, dict):
            for key, value in node.items():
                character = capacity.unstorable_character(key) if isinstance(key, str) else None
                if character is not None:
                    return f"a key of {place or 'the reply'}", character, key
                stack.append((value, f"{place}.{key}"[:120].lstrip(".")))
        elif isinstance(node, list):
            stack.extend((value, f"{place}[{i}]"[:120]) for i, value in reversed(list(enumerate(node))))
    return None


class Reply:
    """One reply of metastore `where` to call `op`; `bad(why)` builds the 502 for it."""

    def __init__(self, where: str, op: str, payload: Any):
        self.where, self.op, self.payload = where, op, payload
        found = unstorable_text(payload)
        if found is not None:
            place, character, value = found
            raise self.bad(f"{place} holds {character} ({value!r:.80}): text no metadata store can hold")

    def bad(self, why: str) -> BadReply:
        return BadReply(f"Hive metastore at {self.where} answered {self.op} with an invalid reply: {why}")

    def obj(self, value: Any = None, what: str = "the reply") -> dict[str, Any]:
        value = self.payload if value is None else value
        if not isinstance(value, dict):
            raise self.bad(f"{what} must be a JSON object, not {describe(value)}")
        return value

    def names(self, key: str) -> list[str]:
        """`{key: [name, ...]}`: a list of distinct non-empty strings."""
        found = self.obj().get(key)
        if not isinstance(found, list):
            raise self.bad(f"'{key}' must be a list of names, not {describe(found)}")
        for name in found:
            if not isinstance(name, str) or not name:
                raise self.bad(f"'{key}' holds {describe(name)}, which is not a name")
        if len(set(found)) != len(found):
            raise self.bad(f"'{key}' lists a name twice")
        return list(found)

    def named(self, name: str, what: str) -> dict[str, Any]:
        """An object for `name` (the echo of a create, alter or rename; a loaded schema or table)."""
        found = self.obj()
        if found.get("name") != name:
            raise self.bad(f"the {what} it returned is named {describe(found.get('name'))}, not {name!r}")
        return found

    def dropped(self) -> None:
        if self.obj().get("dropped") is not True:
            raise self.bad(f"a drop must answer {{\"dropped\": true}}, not {describe(self.payload)}")

    # ---------------------------------------------------------------- parts of schemas and tables

    def _optional_text(self, found: dict[str, Any], key: str, where: str) -> str | None:
        value = found.get(key)
        if value is not None and not isinstance(value, str):
            raise self.bad(f"{where} '{key}' must be a string or null, not {describe(value)}")
        return value

    def _properties(self, found: dict[str, Any], where: str) -> dict[str, str]:
        value = found.get("properties")
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise self.bad(f"{where} 'properties' must be an object of strings, not {describe(value)}")
        return dict(value)

    def _list(self, found: dict[str, Any], key: str, where: str) -> list[Any]:
        value = found.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.bad(f"{where} '{key}' must be a list, not {describe(value)}")
        return list(value)

    def schema(self, name: str) -> Schema:
        found = self.named(name, "schema")
        return Schema(name, self._optional_text(found, "comment", "the schema's"), self._properties(found, "the schema's"))

    def table(self, name: str) -> Table:
        found = self.named(name, "table")
        where = f"table {name!r}:"
        raw_columns = found.get("columns")
        if not isinstance(raw_columns, list):
            raise self.bad(f"{where} 'columns' must be a list, not {describe(raw_columns)}")
        columns, seen = [], set()
        for position, raw in enumerate(raw_columns):
            column = self.obj(raw, f"{where} column {position}")
            column_name = column.get("name")
            if not isinstance(column_name, str) or not column_name:
                raise self.bad(f"{where} column {position} has no name ({describe(column_name)})")
            if column_name.lower() in seen:
                raise self.bad(f"{where} column {column_name!r} appears twice")
            seen.add(column_name.lower())
            kind = column.get("type")
            if not isinstance(kind, str | dict) or not kind:
                raise self.bad(f"{where} column {column_name!r} has no type ({describe(kind)})")
            for flag, default in (("nullable", True), ("autoIncrement", False)):
                if not isinstance(column.get(flag, default), bool):
                    raise self.bad(f"{where} column {column_name!r} '{flag}' must be true or false")
            columns.append(Column(column_name, kind, self._optional_text(column, "comment", f"{where} column's"),
                                  column.get("nullable", True), column.get("autoIncrement", False),
                                  column.get("defaultValue")))
        distribution = found.get("distribution")
        if distribution is not None and not isinstance(distribution, dict):
            raise self.bad(f"{where} 'distribution' must be an object or null, not {describe(distribution)}")
        return Table(name, columns, self._optional_text(found, "comment", where), self._properties(found, where),
                     self._list(found, "partitioning", where), distribution, self._list(found, "sortOrders", where),
                     self._list(found, "indexes", where))

    def partitions(self) -> list[dict[str, Any]]:
        found = self.obj().get("partitions")
        if not isinstance(found, list):
            raise self.bad(f"'partitions' must be a list, not {describe(found)}")
        for position, partition in enumerate(found):
            if not isinstance(self.obj(partition, f"partition {position}").get("name"), str):
                raise self.bad(f"partition {position} has no name")
        return found

    def partition(self) -> dict[str, Any]:
        found = self.obj()
        if not isinstance(found.get("name"), str):
            raise self.bad(f"the partition it returned has no name ({describe(found.get('name'))})")
        return found
