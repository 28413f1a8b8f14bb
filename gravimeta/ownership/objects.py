"""Gravitino's metadata objects (`{type}/{fullName}` in owner URLs) as paths in gravimeta's tree, with
the rules of Gravitino's MetadataObjects.parse and MetadataObjectUtil.checkMetadataObject (v1.3.0):

- the type is one of MetadataObject.Type, in any case; another word is a 400;
- single-level types (metalake, catalog, role, tag, policy, job, job_template) take the full name as it
  is; the others split it on '.', into 2 names for a schema, 3 for a table (and fileset, topic, model,
  view, function), 4 for a column; a wrong count, a blank full name or a `*` name is a 400;
- a metalake object must name the metalake of the URL (IllegalMetadataObjectException, a 400).

gravimeta has metalakes, catalogs, schemas, tables, tags and roles. The objects of the other types cannot
exist here, so they are NoSuchMetadataObjectException (404) like any missing object; columns exist but
have no owners here (405). Names that contain '.' (only rows stored before the name rules can) cannot be
addressed, as in Gravitino.
"""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta import errors

SINGLE_LEVEL = ("metalake", "catalog", "role", "tag", "policy", "job", "job_template")
LEVELS = {"schema": 2, "table": 3, "fileset": 3, "topic": 3, "model": 3, "view": 3, "function": 3, "column": 4}
#: the types whose objects gravimeta keeps, and the kind of each in gm_owner
OWNED_KINDS = {"metalake": "METALAKE", "catalog": "CATALOG", "schema": "SCHEMA", "table": "TABLE", "tag": "TAG",
               "role": "ROLE"}
#: the kinds of one name in a metalake, outside its tree of catalogs, schemas and tables
BESIDE_TREE = ("TAG", "ROLE")
RESERVED_NAME = "*"


@dataclass(frozen=True)
class OwnedObject:
    """A metadata object that can have an owner here: its kind and its path from the metalake down (for
    a tag or a role, its metalake alone: the object's name is `full_name`)."""

    type: str  # lower case, as in URLs: metalake, catalog, schema, table, tag, role
    full_name: str
    path: tuple[str, ...]

    @property
    def kind(self) -> str:
        return OWNED_KINDS[self.type]

    @property
    def metalake(self) -> str:
        return self.path[0]


def parse(metalake: str, type_name: str, full_name: str) -> OwnedObject:
    """The object `type_name`/`full_name` under `metalake`, or the error Gravitino answers."""
    kind = type_name.lower()
    if kind not in SINGLE_LEVEL and kind not in LEVELS:
        raise errors.IllegalArgument(f"No enum constant org.apache.gravitino.MetadataObject.Type.{type_name.upper()}")
    if not full_name.strip():
        raise errors.IllegalArgument("Metadata object full name cannot be blank")
    names = [full_name] if kind in SINGLE_LEVEL else full_name.split(".")
    if kind in LEVELS and len(names) != LEVELS[kind]:
        raise errors.IllegalArgument(f"If the type is {kind.upper()}, the length of names must be {LEVELS[kind]}")
    if RESERVED_NAME in names:
        raise errors.IllegalArgument("Cannot create a metadata object with `*` name.")
    if kind == "metalake" and full_name != metalake:
        raise errors.IllegalMetadataObject(f"The metalake object name must be {metalake}")
    if kind == "column":
        raise errors.UnsupportedOperation("Owners of columns are not supported; set the owner of the table")
    if kind not in OWNED_KINDS:
        raise errors.NoSuchMetadataObject(f"Metadata object {full_name} type {kind.upper()} doesn't exist")
    path = (metalake,) if kind in ("metalake", "tag", "role") else (metalake, *names)
    return OwnedObject(kind, full_name, path)
