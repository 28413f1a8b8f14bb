"""/api/metalakes/{metalake}/users and /groups (Gravitino's UserOperations and GroupOperations): the
users and groups that can own objects of the metalake. gravimeta keeps no roles: `roles` is empty."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta.api import dto, payloads
from gravimeta.api.errors import operation
from gravimeta.api.owners import ownership
from gravimeta.api.requests import flag, json_body, user
from gravimeta.ownership.models import GROUP, USER

users = Blueprint("users", __name__, url_prefix="/api/metalakes/<metalake>/users")
groups = Blueprint("groups", __name__, url_prefix="/api/metalakes/<metalake>/groups")


def _routes(blueprint: Blueprint, kind: str, one: str, many: str) -> None:
    name_arg = f"{one}_name"

    @blueprint.post("", endpoint=f"add_{one}")
    @operation(one, "ADD")
    def add(metalake: str) -> Any:
        body = payloads.load(payloads.PrincipalAddRequest, json_body())
        return dto.ok(**{one: dto.principal(ownership().add_principal(metalake, kind, body["name"], user()))})

    @blueprint.get(f"/<{name_arg}>", endpoint=f"get_{one}")
    @operation(one, "GET", name_arg)
    def get(metalake: str, **names: str) -> Any:
        return dto.ok(**{one: dto.principal(ownership().get_principal(metalake, kind, names[name_arg]))})

    @blueprint.get("", endpoint=f"list_{many}")
    @operation(one, "LIST")
    def list_all(metalake: str) -> Any:
        found = ownership().list_principals(metalake, kind)
        if flag("details"):
            return dto.ok(**{many: [dto.principal(p) for p in found]})
        return dto.ok(names=[p.name for p in found])

    @blueprint.delete(f"/<{name_arg}>", endpoint=f"remove_{one}")
    @operation(one, "REMOVE", name_arg)
    def remove(metalake: str, **names: str) -> Any:
        return dto.ok(removed=ownership().remove_principal(metalake, kind, names[name_arg], user()))


_routes(users, USER, "user", "users")
_routes(groups, GROUP, "group", "groups")
