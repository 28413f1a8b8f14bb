"""The OpenAPI entries of roles and permissions (merged into gravimeta/api/openapi.py): the RoleDTO
shape, the request bodies and the operations."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from gravimeta.api import role_payloads
from gravimeta.api.openapi_shapes import Audit, Out


class _Privilege(Out):
    name = fields.String(required=True, metadata={"description": "a Gravitino privilege name, in lower case"})
    condition = fields.String(required=True, metadata={"description": "allow or deny"})


class _SecurableObject(Out):
    fullName = fields.String(required=True)
    type = fields.String(required=True, metadata={"description": "metalake, catalog, schema, table or tag"})
    privileges = fields.List(fields.Nested(_Privilege), required=True)


class Role(Out):
    name = fields.String(required=True)
    audit = fields.Nested(Audit, required=True)
    properties = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    securableObjects = fields.List(fields.Nested(_SecurableObject), required=True)


class RoleResponse(Out):
    code = fields.Integer(required=True)
    role = fields.Nested(Role, required=True)


RESPONSES: list[type[Schema]] = [RoleResponse]
REQUESTS: dict[str, type[Schema]] = {
    "RoleCreateRequest": role_payloads.RoleCreate,
    "RoleNamesRequest": role_payloads.RoleNames,
    "PrivilegesRequest": role_payloads.Privileges,
    "PrivilegeOverrideRequest": role_payloads.PrivilegeOverride,
}


def operations(op: Any) -> dict[str, Any]:
    """The operations, built with openapi.Op (passed in, to keep the import one way)."""
    return {
        "roles.list_roles": op("List the metalake's role names", "NameListResponse"),
        "roles.create_role": op("Create a role with its securable objects; its creator owns it", "RoleResponse",
                                "RoleCreateRequest"),
        "roles.get_role": op("Load a role", "RoleResponse"),
        "roles.delete_role": op("Delete a role; its grants go with it", "DropResponse"),
        "permissions.grant_roles_user": op("Grant roles to a user", "UserResponse", "RoleNamesRequest"),
        "permissions.revoke_roles_user": op("Revoke roles from a user", "UserResponse", "RoleNamesRequest"),
        "permissions.grant_roles_group": op("Grant roles to a group", "GroupResponse", "RoleNamesRequest"),
        "permissions.revoke_roles_group": op("Revoke roles from a group", "GroupResponse", "RoleNamesRequest"),
        "permissions.grant_privileges": op("Grant privileges on an object to a role", "RoleResponse",
                                           "PrivilegesRequest"),
        "permissions.revoke_privileges": op("Revoke privileges on an object from a role", "RoleResponse",
                                            "PrivilegesRequest"),
        "permissions.override_privileges": op("Replace every privilege of a role", "RoleResponse",
                                              "PrivilegeOverrideRequest"),
        "object_roles.list_object_roles": op("List the roles holding a privilege on an object", "NameListResponse"),
    }
