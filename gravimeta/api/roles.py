"""/api/metalakes/{metalake}/roles, .../permissions and .../objects/{type}/{fullName}/roles (Gravitino's
RoleOperations, PermissionOperations and MetadataObjectRoleOperations)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta.access import rules
from gravimeta.access.facts import METALAKE, ROLE
from gravimeta.api import dto, payloads
from gravimeta.api.door import listed, needs, visible
from gravimeta.api.errors import operation, operation_names
from gravimeta.api.requests import dispatchers, json_body, user
from gravimeta.api.role_payloads import PrivilegeOverride, Privileges, RoleCreate, RoleNames, role_dto
from gravimeta.ownership.models import GROUP, USER
from gravimeta.roles.dispatcher import RoleDispatcher

roles = Blueprint("roles", __name__, url_prefix="/api/metalakes/<metalake>/roles")
permissions = Blueprint("permissions", __name__, url_prefix="/api/metalakes/<metalake>/permissions")
object_roles = Blueprint("object_roles", __name__, url_prefix="/api/metalakes/<metalake>/objects")


def dispatcher() -> RoleDispatcher:
    found = dispatchers().roles
    assert found is not None, "the app wires the role dispatcher"
    return found


# ---------------------------------------------------------------------- roles


@roles.get("")
@needs(None, lists=rules.LOAD_ROLE)
@operation("role", "LIST")
def list_roles(metalake: str) -> Any:
    return dto.ok(names=listed(ROLE, lambda: dispatcher().list_names(metalake), str))


@roles.post("")
@needs(rules.CREATE_ROLE, on=METALAKE)
@operation("role", "CREATE")
def create_role(metalake: str) -> Any:
    body = payloads.load(RoleCreate, json_body())
    operation_names(body["name"])
    created = dispatcher().create(metalake, body["name"], body["properties"] or {}, body["securableObjects"], user())
    return dto.ok(role=role_dto(created))


@roles.get("/<role>")
@needs(rules.LOAD_ROLE, on=ROLE)
@operation("role", "GET", "role")
def get_role(metalake: str, role: str) -> Any:
    return dto.ok(role=role_dto(dispatcher().get(metalake, role)))


@roles.delete("/<role>")
@needs(rules.DELETE_ROLE, on=ROLE)
@operation("role", "DELETE", "role")
def delete_role(metalake: str, role: str) -> Any:
    deleted = dispatcher().delete(metalake, role)
    return dto.ok(dropped=deleted, deleted=deleted)  # DropResponse: `deleted` is set for roles only


# ---------------------------------------------------------------------- roles of users and groups


def _principal_routes(kind: str, one: str) -> None:
    name_arg = f"{one}_name"

    def change(grant: bool) -> Any:
        def view(metalake: str, **names: str) -> Any:
            body = payloads.load(RoleNames, json_body())
            operation_names(",".join(body["roleNames"]))
            act = dispatcher().grant_roles if grant else dispatcher().revoke_roles
            return dto.ok(**{one: dto.principal(act(metalake, kind, names[name_arg], body["roleNames"], user()))})

        return view

    for verb, grant in (("grant", True), ("revoke", False)):
        view = operation(f"{one} permission", verb.upper())(change(grant))
        view = needs(rules.MANAGE_GRANTS, on=METALAKE)(view)
        permissions.add_url_rule(f"/{one}s/<{name_arg}>/{verb}", f"{verb}_roles_{one}", view, methods=["PUT"])


_principal_routes(USER, "user")
_principal_routes(GROUP, "group")


# ---------------------------------------------------------------------- privileges of a role


@permissions.put("/roles/<role>/<object_type>/<full_name>/grant")
@needs(rules.CAN_OPERATE_PRIVILEGES)
@operation("role permission", "GRANT")
def grant_privileges(metalake: str, role: str, object_type: str, full_name: str) -> Any:
    body = payloads.load(Privileges, json_body())
    granted = dispatcher().grant_privileges(metalake, role, object_type, full_name, body["privileges"], user())
    return dto.ok(role=role_dto(granted))


@permissions.put("/roles/<role>/<object_type>/<full_name>/revoke")
@needs(rules.CAN_OPERATE_PRIVILEGES)
@operation("role permission", "REVOKE")
def revoke_privileges(metalake: str, role: str, object_type: str, full_name: str) -> Any:
    body = payloads.load(Privileges, json_body())
    revoked = dispatcher().revoke_privileges(metalake, role, object_type, full_name, body["privileges"], user())
    return dto.ok(role=role_dto(revoked))


@permissions.put("/roles/<role>")
@needs(rules.MANAGE_GRANTS, on=METALAKE)
@operation("role", "UPDATE", "role")
def override_privileges(metalake: str, role: str) -> Any:
    body = payloads.load(PrivilegeOverride, json_body())
    return dto.ok(role=role_dto(dispatcher().override(metalake, role, body["overrides"], user())))


# ---------------------------------------------------------------------- roles naming an object


@object_roles.get("/<kind>/<full_name>/roles")
@needs(None, member=False, lists=rules.SEE_OBJECT_ROLE)  # Gravitino declares no rule; it filters the list
@operation("role", "LIST")
def list_object_roles(metalake: str, kind: str, full_name: str) -> Any:
    return dto.ok(names=visible(ROLE, dispatcher().roles_naming(metalake, kind, full_name), str))

