"""/api/metalakes/{metalake}/catalogs"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Blueprint

from gravimeta import errors
from gravimeta.access import rules
from gravimeta.access.facts import CATALOG, METALAKE
from gravimeta.api import dto, payloads
from gravimeta.api.door import listed, needs
from gravimeta.api.errors import error_body, note_refusal, operation
from gravimeta.api.requests import dispatchers, drop_flag, flag, json_body, user
from gravimeta.entities import Catalog
from gravimeta.errors import GravitinoError

blueprint = Blueprint("catalogs", __name__, url_prefix="/api/metalakes/<metalake>/catalogs")


@blueprint.get("")
@needs(None, lists=rules.LOAD_CATALOG)
@operation("catalog", "LIST")
def list_catalogs(metalake: str) -> Any:
    catalogs = listed(CATALOG, lambda: dispatchers().catalogs.list(metalake), lambda c: c.name)
    if flag("details"):
        return dto.ok(catalogs=[_shown(c) for c in catalogs])
    return dto.ok(identifiers=dto.identifiers([metalake], [c.name for c in catalogs]))


def _shown(c: Catalog) -> dict[str, Any]:
    """The catalog's answer, without the properties its provider hides (jdbc-user, jdbc-password)."""
    return dto.catalog(replace(c, properties=dispatchers().catalogs.shown_properties(c)))


def _catalog_of(metalake: str, body: dict[str, Any]) -> Catalog:
    return Catalog(
        metalake, body["name"], body["type"].lower(), body["provider"], body["comment"], body["properties"] or {}
    )


@blueprint.post("")
@needs(rules.CREATE_CATALOG, on=METALAKE)
@operation("catalog", "CREATE")
def create_catalog(metalake: str) -> Any:
    catalog = _catalog_of(metalake, payloads.load(payloads.CatalogCreate, json_body()))
    return dto.ok(catalog=_shown(dispatchers().catalogs.create(catalog, user())))


# Gravitino's ExceptionHandlers.handleTestConnectionException answers these with HTTP 200 and an error
# body; anything else keeps its own status.
_TEST_CONNECTION_ERRORS = (errors.IllegalArgument, errors.ConnectionFailed, errors.NotFound,
                           errors.AlreadyExists, errors.NotInUse)


@blueprint.post("/testConnection")
@needs(rules.CREATE_CATALOG, on=METALAKE)
@operation("catalog", "TEST")
def test_new_connection(metalake: str) -> Any:
    """Gravitino's pre-create probe: the body is a catalog create request; nothing is stored. A body
    that is not JSON is a 400 (as Gravitino's JSON mappers answer); a failed check or probe is HTTP 200
    with a non-zero code."""
    body = json_body()
    try:
        catalog = _catalog_of(metalake, payloads.load(payloads.CatalogCreate, body))
        dispatchers().catalogs.test_new(catalog)
    except _TEST_CONNECTION_ERRORS as exc:
        return error_body(exc)
    return dto.ok()


@blueprint.get("/<catalog>")
@needs(rules.LOAD_CATALOG, on=CATALOG)
@operation("catalog", "LOAD", "catalog")
def load_catalog(metalake: str, catalog: str) -> Any:
    return dto.ok(catalog=_shown(dispatchers().catalogs.load(metalake, catalog)))


@blueprint.put("/<catalog>")
@needs(rules.ALTER_CATALOG, on=CATALOG)
@operation("catalog", "ALTER", "catalog")
def alter_catalog(metalake: str, catalog: str) -> Any:
    changes = payloads.load_updates(json_body(), payloads.CATALOG_UPDATES)
    return dto.ok(catalog=_shown(dispatchers().catalogs.alter(metalake, catalog, changes, user())))


@blueprint.patch("/<catalog>")
@needs(rules.LOAD_CATALOG, on=CATALOG)
@operation("catalog", "ENABLE", "catalog")
def set_catalog_in_use(metalake: str, catalog: str) -> Any:
    body = payloads.load(payloads.InUseRequest, json_body())
    dispatchers().catalogs.set_in_use(metalake, catalog, body["inUse"], user())
    return dto.ok()


@blueprint.delete("/<catalog>")
@needs(rules.ALTER_CATALOG, on=CATALOG)
@operation("catalog", "DROP", "catalog")
def drop_catalog(metalake: str, catalog: str) -> Any:
    return dto.ok(dropped=dispatchers().catalogs.drop(metalake, catalog, force=drop_flag("force"), user=user()))


@blueprint.post("/<catalog>/testConnection")
@needs(rules.ALTER_CATALOG, on=CATALOG)  # not in Gravitino 1.3: held to the rule of an alter
@operation("catalog", "TEST", "catalog")
def test_connection(metalake: str, catalog: str) -> Any:
    """Like the Java server: HTTP 200 either way; a failure is an error body with a non-zero code."""
    try:
        body = json_body(required=False)
        changes = payloads.load_updates(body, payloads.CATALOG_UPDATES) if body is not None else []
        dispatchers().catalogs.test_connection(metalake, catalog, changes)
    except GravitinoError as exc:
        note_refusal(exc)
        return error_body(exc)
    return dto.ok()
