"""/api/metalakes/{metalake}/users and /groups (Gravitino's UserOperations and GroupOperations): the
users and groups that can own objects of the metalake. gravimeta keeps no roles: `roles` is empty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint

from gravimeta.access import rules
from gravimeta.access.rules import Rule
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs, visible
from gravimeta.api.errors import operation
from gravimeta.api.owners import ownership
from gravimeta.api.requests import flag, json_body, user
from gravimeta.ownership.models import GROUP, USER

users = Blueprint("users", __name__, url_prefix="/api/metalakes/<metalake>/users")
groups = Blueprint("groups", __name__, url_prefix="/api/metalakes/<metalake>/groups")


def _routes(blueprint: Blueprint, kind: str, one: str, many: str, manage: Rule,
            load: Callable[[Callable[..., Any]], Callable[..., Any]], lists: Rule | None) -> None:
    name_arg = f"{one}_name"

    @blueprint.post("", endpoint=f"add_{one}")
    @needs(manage)
    @operation(one, "ADD")
    def add(metalake: str) -> Any:
        body = payloads.load(payloads.PrincipalAddRequest, json_body())
        return dto.ok(**{one: dto.principal(ownership().add_principal(metalake, kind, body["name"], user()))})

    @blueprint.get(f"/<{name_arg}>", endpoint=f"get_{one}")
    @load
    @operation(one, "GET", name_arg)
    def get(metalake: str, **names: str) -> Any:
        return dto.ok(**{one: dto.principal(ownership().get_principal(metalake, kind, names[name_arg]))})

    @blueprint.get("", endpoint=f"list_{many}")
    @needs(None, lists=lists)
    @operation(one, "LIST")
    def list_all(metalake: str) -> Any:
        found = visible(USER, ownership().list_principals(metalake, kind), lambda p: p.name)
        if flag("details"):
            return dto.ok(**{many: [dto.principal(p) for p in found]})
        return dto.ok(names=[p.name for p in found])

    @blueprint.delete(f"/<{name_arg}>", endpoint=f"remove_{one}")
    @needs(manage)
    @operation(one, "REMOVE", name_arg)
    def remove(metalake: str, **names: str) -> Any:
        return dto.ok(removed=ownership().remove_principal(metalake, kind, names[name_arg], user()))


# Gravitino 1.3 declares no rule on GET of a group, and lists groups unfiltered
_routes(users, USER, "user", "users", rules.MANAGE_USERS, needs(rules.LOAD_USER), rules.LOAD_USER)
_routes(groups, GROUP, "group", "groups", rules.MANAGE_GROUPS, needs(None, member=False), None)
