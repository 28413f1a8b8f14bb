"""SQL text for the JDBC engines: quoted identifiers and literals, and Gravitino's rules for names.

Every identifier is quoted (PostgreSQL "...", MySQL `...`, the quote doubled) and every value is a quoted
literal, so no name, comment or default can change the statement it is put in. PostgreSQL literals use
the escape-string form E'...' (backslash and quote escaped), which reads the same whatever the server's
standard_conforming_strings; MySQL literals are escaped by the connection (PyMySQL knows whether the
session has NO_BACKSLASH_ESCAPES).

Names (Gravitino 1.3 PostgreSqlCatalogCapability and MysqlCatalogCapability) apply to the names a call
gives to something new (schema and table creates, rename targets, column names), never to existing
ones, which may be anything the engine allowed:

  PostgreSQL  ^[_a-zA-Z\\p{L}/][\\w\\p{L}-$/=]{0,62}$, schemas pg_catalog and information_schema reserved;
              and here also at most 63 bytes in UTF-8 (PostgreSQL would cut a longer name short)
  MySQL       ^[\\w\\p{L}-$/=]{1,64}$, schemas mysql, information_schema, performance_schema, sys reserved
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gravimeta import errors

#: Gravitino writes this into the comments of the objects it creates in a JDBC engine
#: (StringIdentifier.addToComment); a described comment is shown without it
_GRAVITINO_ID = re.compile(r"\s*\(From Gravitino, DO NOT EDIT: gravitino\.v1\.uid-?\d+\)\s*$")


def without_gravitino_id(comment: str | None) -> str | None:
    """`comment` without the id Gravitino appends to it; None for an empty one."""
    if not comment:
        return None
    return _GRAVITINO_ID.sub("", comment) or None


def _no_nul(text: str, what: str) -> str:
    if "\x00" in text:
        raise errors.IllegalArgument(f"{what} contains a NUL character, which the engine cannot hold")
    return text


def pg_ident(name: str) -> str:
    return '"' + _no_nul(name, f"Name {name[:40]!r}").replace('"', '""') + '"'


def pg_literal(text: str) -> str:
    return "E'" + _no_nul(text, "A value").replace("\\", "\\\\").replace("'", "''") + "'"


def my_ident(name: str) -> str:
    return "`" + _no_nul(name, f"Name {name[:40]!r}").replace("`", "``") + "`"


@dataclass(frozen=True)
class Quoting:
    """How a dialect writes a name and a string value into SQL."""

    ident: Callable[[str], str]
    literal: Callable[[str], str]


PG_QUOTING = Quoting(pg_ident, pg_literal)


@dataclass(frozen=True)
class NameRules:
    """Gravitino's specification of names for one engine."""

    engine: str
    pattern: re.Pattern[str]
    reserved_schemas: frozenset[str]
    max_bytes: int

    def check(self, scope: str, name: str) -> str:
        """IllegalArgument, in Gravitino's words, for a name the engine's catalog does not allow."""
        if not self.pattern.fullmatch(name):
            raise errors.IllegalArgument(f"The {scope} name '{name}' is illegal.")
        if scope == "SCHEMA" and name.lower() in self.reserved_schemas:
            raise errors.IllegalArgument(f"The {scope} name '{name}' is reserved and cannot be used.")
        if len(name.encode("utf-8")) > self.max_bytes:
            raise errors.IllegalArgument(f"The {scope} name '{name}' is longer than the {self.max_bytes} bytes "
                                         f"{self.engine} keeps of a name.")
        return name


# Java's \w is ASCII and \p{L} any letter; Python's str \w is any letter, digit or underscore, close to both
PG_NAMES = NameRules("PostgreSQL", re.compile(r"(?:[^\W\d]|/)[\w$/=-]{0,62}"),
                     frozenset({"pg_catalog", "information_schema"}), 63)
MYSQL_NAMES = NameRules("MySQL", re.compile(r"[\w$/=-]{1,64}"),
                        frozenset({"mysql", "information_schema", "performance_schema", "sys"}), 192)
