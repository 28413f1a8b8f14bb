"""Role and permission request bodies (Gravitino's RoleCreateRequest, RoleGrantRequest,
RoleRevokeRequest, PrivilegeGrantRequest, PrivilegeRevokeRequest, PrivilegeOverrideRequest) and the
shape of a role in responses (RoleDTO, SecurableObjectDTO, PrivilegeDTO)."""

from __future__ import annotations

from typing import Any

from marshmallow import fields, validate

from gravimeta.api import payloads
from gravimeta.api.dto import audit
from gravimeta.roles.store import Role

_NOT_BLANK = validate.Regexp(r"\s*\S", error="must not be blank")


class PrivilegeBody(payloads.Base):
    name = fields.String(required=True, validate=_NOT_BLANK)
    condition = fields.String(required=True, validate=_NOT_BLANK)


class SecurableObjectBody(payloads.Base):
    fullName = fields.String(required=True, validate=_NOT_BLANK)
    type = fields.String(required=True, validate=_NOT_BLANK)
    privileges = fields.List(fields.Nested(PrivilegeBody), required=True, validate=validate.Length(min=1))


class RoleCreate(payloads.Base):
    name = payloads.Name(required=True)
    properties = fields.Dict(keys=fields.String(validate=validate.Length(min=1)), values=fields.String(),
                             load_default=dict, allow_none=True)
    securableObjects = fields.List(fields.Nested(SecurableObjectBody), required=True)


class RoleNames(payloads.Base):
    """RoleGrantRequest and RoleRevokeRequest."""

    roleNames = fields.List(fields.String(validate=_NOT_BLANK), required=True, validate=validate.Length(min=1))


class Privileges(payloads.Base):
    """PrivilegeGrantRequest and PrivilegeRevokeRequest."""

    privileges = fields.List(fields.Nested(PrivilegeBody), required=True, validate=validate.Length(min=1))


class PrivilegeOverride(payloads.Base):
    overrides = fields.List(fields.Nested(SecurableObjectBody), required=True)


def role_dto(r: Role) -> dict[str, Any]:
    """A RoleDTO: names, types, privilege names and conditions in lower case, as Gravitino writes them."""
    return {
        "name": r.name,
        "audit": audit(r.audit),
        "properties": dict(r.properties),
        "securableObjects": [{"fullName": o.full_name, "type": o.type, "privileges": [p.dto() for p in o.privileges]}
                             for o in r.objects],
    }
