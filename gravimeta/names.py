"""Gravitino's rules for the names of new entities, so that what is created here can be moved to
Gravitino and back (v1.3.0: MetalakeNormalizeDispatcher, CatalogNormalizeDispatcher and
Capability.DefaultCapability, which every catalog of gravimeta has):

  metalake  ^\\w{1,64}$            reserved: "system"
  catalog   ^\\w[\\w-]{0,63}$       reserved, in any case: "system", "*"
  schema, table, column
            ^\\w[\\w/=-]{0,63}$     reserved, in any case: "*"

`\\w` is ASCII (letters, digits, underscore), as in Java's String.matches.

gravimeta keeps one rule of its own on top: no '/' in schema and table names, which are single URL
path segments (a decoded %2F cannot be routed). Column names may hold '/', as in Gravitino.

The rules apply to the names a request gives to something new: creates and rename targets (including
added and renamed columns). Names already in the store are not checked again: a row created before
these rules (or under an older version) can still be loaded, altered, dropped, and renamed to a legal
name. Gravitino also checks the names of drops and of changes to existing columns; gravimeta does not,
on purpose, so such rows never become unreachable.
"""

from __future__ import annotations

import re

from gravimeta.errors import IllegalArgument

_METALAKE = re.compile(r"\w{1,64}", re.ASCII)
_CATALOG = re.compile(r"\w[\w-]{0,63}", re.ASCII)
_DEFAULT = re.compile(r"\w[\w/=-]{0,63}", re.ASCII)

METALAKE_RESERVED = frozenset({"system"})
CATALOG_RESERVED = frozenset({"system", "*"})
DEFAULT_RESERVED = frozenset({"*"})

#: the scopes of Capability.Scope that DefaultCapability checks, as Gravitino prints them
SCHEMA, TABLE, COLUMN = "SCHEMA", "TABLE", "COLUMN"
#: scopes whose names are URL path segments here
_URL_SEGMENTS = (SCHEMA, TABLE)


def check_metalake_name(name: str) -> str:
    if name in METALAKE_RESERVED:  # case-sensitive in Gravitino
        raise IllegalArgument(f"The metalake name '{name}' is reserved.")
    if not _METALAKE.fullmatch(name):
        raise IllegalArgument(f"The metalake name '{name}' is illegal.")
    return name


def check_catalog_name(name: str) -> str:
    if name.lower() in CATALOG_RESERVED:
        raise IllegalArgument(f"The catalog name '{name}' is reserved.")
    if not _CATALOG.fullmatch(name):
        raise IllegalArgument(f"The catalog name '{name}' is illegal.")
    return name


def check_entity_name(scope: str, name: str) -> str:
    """A schema, table or column name (`scope` is SCHEMA, TABLE or COLUMN)."""
    if name.lower() in DEFAULT_RESERVED:
        raise IllegalArgument(f"The {scope} name '{name}' is reserved.")
    if not _DEFAULT.fullmatch(name):
        raise IllegalArgument(f"The {scope} name '{name}' is illegal.")
    if scope in _URL_SEGMENTS and "/" in name:
        raise IllegalArgument(f"The {scope} name '{name}' is illegal here: a {scope.lower()} name is a URL "
                              "path segment and cannot contain '/'.")
    return name


#: the same rules as JSON Schema patterns (ECMA-262 `\w` is ASCII too), for the OpenAPI document;
#: reserved words are not expressed
PATTERNS = {
    "metalake": r"^\w{1,64}$",
    "catalog": r"^\w[\w-]{0,63}$",
    "schema": r"^\w[\w=-]{0,63}$",
    "table": r"^\w[\w=-]{0,63}$",
    "column": r"^\w[\w/=-]{0,63}$",
}

CHECKS = {
    "metalake": check_metalake_name,
    "catalog": check_catalog_name,
    "schema": lambda name: check_entity_name(SCHEMA, name),
    "table": lambda name: check_entity_name(TABLE, name),
    "column": lambda name: check_entity_name(COLUMN, name),
}
