"""/api/metalakes/{metalake}/owners/{type}/{fullName} (Gravitino's OwnerOperations)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gravimeta.access import rules
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs
from gravimeta.api.errors import operation
from gravimeta.api.requests import dispatchers, json_body, user
from gravimeta.ownership.dispatcher import OwnershipDispatcher
from gravimeta.ownership.store import Owner

blueprint = Blueprint("owners", __name__, url_prefix="/api/metalakes/<metalake>/owners")


def ownership() -> OwnershipDispatcher:
    found = dispatchers().ownership
    assert found is not None, "the app wires the ownership dispatcher"
    return found


@blueprint.get("/<object_type>/<full_name>")
@needs(rules.CAN_ACCESS_METADATA)
@operation("owner", "GET", "full_name")
def get_owner(metalake: str, object_type: str, full_name: str) -> Any:
    """`owner` is null for an object without one (its owning user was removed)."""
    owner = ownership().get_owner(metalake, object_type, full_name)
    return dto.ok(owner=None if owner is None else dto.owner(owner))


@blueprint.put("/<object_type>/<full_name>")
@needs(rules.CAN_SET_OWNER)
@operation("owner", "SET", "full_name")
def set_owner(metalake: str, object_type: str, full_name: str) -> Any:
    body = payloads.load(payloads.OwnerSetRequest, json_body())
    ownership().set_owner(metalake, object_type, full_name, Owner(body["type"], body["name"]), user())
    return dto.ok(set=True)
