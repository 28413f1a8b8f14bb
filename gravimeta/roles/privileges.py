"""Gravitino's privileges (v1.3.0 `Privilege.Name`, `Privileges`): their names, the kinds of object each
can be granted on, and the checks a grant goes through (`AuthorizationUtils.checkPrivilege`,
`checkDuplicatedNamePrivilege`).

A privilege is a name and a condition, ALLOW or DENY. Names and conditions are read in any case and
written in lower case, as Gravitino's JSON mapper does (WRITE_ENUMS_TO_LOWERCASE). The deprecated
CREATE_MODEL and CREATE_MODEL_VERSION are the same privileges as REGISTER_MODEL and LINK_MODEL_VERSION
(Gravitino's DEPRECATED_PRIVILEGE_MAP): stored and shown under their new names.
"""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta import errors

ALLOW, DENY = "ALLOW", "DENY"
_SCHEMA = ("METALAKE", "CATALOG", "SCHEMA")
_TABLE = (*_SCHEMA, "TABLE")
_GRANTS = (*_TABLE, "VIEW", "TOPIC", "FILESET", "MODEL", "FUNCTION")

#: every privilege name, with the kinds of object it can be granted on (Privileges.X.canBindTo)
BINDS_TO: dict[str, tuple[str, ...]] = {
    "CREATE_CATALOG": ("METALAKE",),
    "USE_CATALOG": ("METALAKE", "CATALOG"),
    "CREATE_SCHEMA": _SCHEMA,
    "USE_SCHEMA": _SCHEMA,
    "CREATE_TABLE": _SCHEMA,
    "MODIFY_TABLE": _TABLE,
    "SELECT_TABLE": _TABLE,
    "CREATE_FILESET": _SCHEMA,
    "WRITE_FILESET": (*_SCHEMA, "FILESET"),
    "READ_FILESET": (*_SCHEMA, "FILESET"),
    "CREATE_TOPIC": _SCHEMA,
    "PRODUCE_TOPIC": (*_SCHEMA, "TOPIC"),
    "CONSUME_TOPIC": (*_SCHEMA, "TOPIC"),
    "MANAGE_USERS": ("METALAKE",),
    "MANAGE_GROUPS": ("METALAKE",),
    "CREATE_ROLE": ("METALAKE",),
    "MANAGE_GRANTS": _GRANTS,
    "REGISTER_MODEL": _SCHEMA,
    "LINK_MODEL_VERSION": (*_SCHEMA, "MODEL"),
    "USE_MODEL": (*_SCHEMA, "MODEL"),
    "CREATE_TAG": ("METALAKE",),
    "APPLY_TAG": ("METALAKE", "TAG"),
    "CREATE_POLICY": ("METALAKE",),
    "APPLY_POLICY": ("METALAKE", "POLICY"),
    "REGISTER_JOB_TEMPLATE": ("METALAKE",),
    "USE_JOB_TEMPLATE": ("METALAKE", "JOB_TEMPLATE"),
    "RUN_JOB": ("METALAKE",),
    "CREATE_VIEW": _SCHEMA,
    "SELECT_VIEW": (*_SCHEMA, "VIEW"),
    "REGISTER_FUNCTION": _SCHEMA,
    "EXECUTE_FUNCTION": (*_SCHEMA, "FUNCTION"),
    "MODIFY_FUNCTION": (*_SCHEMA, "FUNCTION"),
}
#: deprecated names and the privilege they mean
LEGACY = {"CREATE_MODEL": "REGISTER_MODEL", "CREATE_MODEL_VERSION": "LINK_MODEL_VERSION"}
#: the privileges that need a catalog of one type when granted on a catalog or a schema
#: (AuthorizationUtils.checkPrivilege); gravimeta's catalogs are all relational
NEEDS_CATALOG_TYPE = {
    "FILESET": ("CREATE_FILESET", "WRITE_FILESET", "READ_FILESET"),
    "MESSAGING": ("CREATE_TOPIC", "PRODUCE_TOPIC", "CONSUME_TOPIC"),
    "MODEL": ("REGISTER_MODEL", "LINK_MODEL_VERSION", "USE_MODEL"),
}


@dataclass(frozen=True)
class Privilege:
    name: str  # upper case, the current name
    condition: str  # ALLOW or DENY

    def dto(self) -> dict[str, str]:
        return {"name": self.name.lower(), "condition": self.condition.lower()}

    def __str__(self) -> str:
        return f"{self.condition.lower()} {self.name.lower().replace('_', ' ')}"


def parse(raw: object) -> Privilege:
    """A PrivilegeDTO ({"name", "condition"}, any case) -> Privilege; IllegalArgument otherwise."""
    if not isinstance(raw, dict):
        raise errors.IllegalArgument(f"A privilege must be an object with name and condition, not {raw!r}")
    name, condition = raw.get("name"), raw.get("condition")
    if not isinstance(name, str) or not isinstance(condition, str):
        raise errors.IllegalArgument("A privilege needs a name and a condition (allow or deny)")
    upper = name.strip().upper()
    upper = LEGACY.get(upper, upper)
    if upper not in BINDS_TO:
        raise errors.IllegalArgument(f"Unknown privilege {name!r}; Gravitino's privileges are "
                                     f"{', '.join(sorted(BINDS_TO))}")
    if condition.strip().upper() not in (ALLOW, DENY):
        raise errors.IllegalArgument(f"Unknown privilege condition {condition!r}: allow or deny")
    return Privilege(upper, condition.strip().upper())


def check_binding(privilege: Privilege, kind: str, full_name: str, catalog_type: str | None = None) -> None:
    """IllegalPrivilege unless `privilege` can be granted on an object of `kind` (upper case), and, on
    a catalog or schema, on its catalog's type (`catalog_type`, upper case)."""
    if kind not in BINDS_TO[privilege.name]:
        raise errors.IllegalPrivilege(f"Securable object {full_name} type {kind} don't support binding privilege "
                               f"{privilege}")
    if catalog_type is None or kind not in ("CATALOG", "SCHEMA"):
        return
    for needed, names in NEEDS_CATALOG_TYPE.items():
        if privilege.name in names and catalog_type != needed:
            raise errors.IllegalPrivilege(f"Catalog {full_name.split('.')[0]} type {catalog_type} doesn't support "
                                   f"privilege {privilege}")


def check_no_duplicates(privileges: list[Privilege]) -> None:
    """One condition per privilege name on one object (checkDuplicatedNamePrivilege)."""
    seen: dict[str, str] = {}
    for p in privileges:
        if seen.get(p.name, p.condition) != p.condition:
            raise errors.IllegalPrivilege(f"Doesn't support duplicated privilege name {p.name} with different condition")
        seen[p.name] = p.condition
