"""The role and permission operations, with Gravitino's checks in its order: authorization enabled
(else 405, as Gravitino's AccessControlNotAllowedFilter answers), the request's own checks (duplicated
objects or privileges, privileges that cannot bind to their object), then the store."""

from __future__ import annotations

from typing import Any

from gravimeta import errors, metadata_objects
from gravimeta.metadata_objects import MetadataObject
from gravimeta.ownership.dispatcher import DISABLED
from gravimeta.ownership.store import OwnershipStore, Principal
from gravimeta.roles import privileges as privs
from gravimeta.roles.privileges import Privilege
from gravimeta.roles.store import Grants, Role, RoleStore


class RoleDispatcher:
    def __init__(self, roles: RoleStore, ownership: OwnershipStore, enabled: bool):
        self.roles, self.ownership, self.enabled = roles, ownership, enabled

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise errors.UnsupportedOperation(DISABLED)

    # ------------------------------------------------------------------ roles

    def create(self, m: str, name: str, properties: dict[str, str], objects: list[dict[str, Any]], user: str) -> Role:
        self._require_enabled()
        return self.roles.create(m, name, properties, grants_of(objects), user)

    def get(self, m: str, name: str) -> Role:
        self._require_enabled()
        return self.roles.get(m, name)

    def list_names(self, m: str) -> list[str]:
        self._require_enabled()
        return self.roles.list_names(m)

    def delete(self, m: str, name: str) -> bool:
        self._require_enabled()
        return self.roles.delete(m, name)

    def roles_naming(self, m: str, kind: str, full_name: str) -> list[str]:
        self._require_enabled()
        return self.roles.roles_naming(m, metadata_objects.parse(kind, full_name))

    # ------------------------------------------------------------------ permissions

    def grant_roles(self, m: str, kind: str, principal: str, names: list[str], user: str) -> Principal:
        self._require_enabled()
        self.roles.grant_roles(m, kind, principal, names, user)
        return self.ownership.get_principal(m, kind, principal)

    def revoke_roles(self, m: str, kind: str, principal: str, names: list[str], user: str) -> Principal:
        self._require_enabled()
        self.roles.revoke_roles(m, kind, principal, names, user)
        return self.ownership.get_principal(m, kind, principal)

    def grant_privileges(self, m: str, name: str, kind: str, full_name: str, given: list[dict[str, str]],
                         user: str) -> Role:
        self._require_enabled()
        obj, privileges = _object(kind, full_name), _privileges(given)
        return self.roles.grant_privileges(m, name, obj, privileges, user)

    def revoke_privileges(self, m: str, name: str, kind: str, full_name: str, given: list[dict[str, str]],
                          user: str) -> Role:
        self._require_enabled()
        obj, privileges = _object(kind, full_name), [privs.parse(p) for p in given]
        return self.roles.revoke_privileges(m, name, obj, privileges, user)

    def override(self, m: str, name: str, objects: list[dict[str, Any]], user: str) -> Role:
        self._require_enabled()
        return self.roles.override(m, name, grants_of(objects), user)


def grants_of(objects: list[dict[str, Any]]) -> Grants:
    """SecurableObjectDTOs -> (object, privileges), refusing an object named twice and a privilege
    name with both conditions on one object."""
    grants: Grants = []
    seen: set[MetadataObject] = set()
    for given in objects:
        obj = _object(given["type"], given["fullName"])
        if obj in seen:
            raise errors.IllegalArgument(f"Doesn't support specifying duplicated securable objects "
                                         f"{obj.full_name} type {obj.type.upper()}")
        seen.add(obj)
        grants.append((obj, _privileges(given["privileges"])))
    return grants


def _object(kind: str, full_name: str) -> MetadataObject:
    return metadata_objects.parse(kind, full_name)


def _privileges(given: list[dict[str, str]]) -> list[Privilege]:
    found = list(dict.fromkeys(privs.parse(p) for p in given))
    privs.check_no_duplicates(found)
    return found
