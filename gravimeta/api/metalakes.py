"""/api/metalakes"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta.access import rules
from gravimeta.access.facts import METALAKE
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs, visible
from gravimeta.api.errors import operation
from gravimeta.api.requests import dispatchers, drop_flag, json_body, user
from gravimeta.entities import Metalake

blueprint = Blueprint("metalakes", __name__, url_prefix="/api/metalakes")


@blueprint.get("")
@needs(None, lists=rules.METALAKE_USER)
@operation("metalake", "LIST")
def list_metalakes() -> Any:
    found = visible(METALAKE, dispatchers().metalakes.list(), lambda m: m.name)
    return dto.ok(metalakes=[dto.metalake(m) for m in found])


@blueprint.post("")
@needs(rules.SERVICE_ADMIN)
@operation("metalake", "CREATE")
def create_metalake() -> Any:
    body = payloads.load(payloads.MetalakeCreate, json_body())
    metalake = Metalake(body["name"], body["comment"], body["properties"] or {})
    return dto.ok(metalake=dto.metalake(dispatchers().metalakes.create(metalake, user()), resolved=False))


@blueprint.get("/<metalake>")
@needs(rules.METALAKE_USER, on=METALAKE)
@operation("metalake", "LOAD", "metalake")
def load_metalake(metalake: str) -> Any:
    return dto.ok(metalake=dto.metalake(dispatchers().metalakes.load(metalake)))


@blueprint.put("/<metalake>")
@needs(rules.METALAKE_OWNER, on=METALAKE)
@operation("metalake", "ALTER", "metalake")
def alter_metalake(metalake: str) -> Any:
    changes = payloads.load_updates(json_body(), payloads.METALAKE_UPDATES)
    altered = dispatchers().metalakes.alter(metalake, changes, user())
    return dto.ok(metalake=dto.metalake(altered, resolved=False))


@blueprint.patch("/<metalake>")
@needs(rules.METALAKE_OWNER, on=METALAKE)
@operation("metalake", "ENABLE", "metalake")
def set_metalake_in_use(metalake: str) -> Any:
    body = payloads.load(payloads.InUseRequest, json_body())
    dispatchers().metalakes.set_in_use(metalake, body["inUse"], user())
    return dto.ok()


@blueprint.delete("/<metalake>")
@needs(rules.METALAKE_OWNER, on=METALAKE)
@operation("metalake", "DROP", "metalake")
def drop_metalake(metalake: str) -> Any:
    return dto.ok(dropped=dispatchers().metalakes.drop(metalake, force=drop_flag("force"), user=user()))
