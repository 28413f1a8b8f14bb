"""/api/metalakes/{metalake}/catalogs/{catalog}/schemas"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from gravimeta.access import rules
from gravimeta.access.facts import CATALOG, SCHEMA
from gravimeta.api import dto, payloads
from gravimeta.api.door import needs, visible
from gravimeta.api.errors import operation
from gravimeta.api.requests import dispatchers, drop_flag, json_body, user
from gravimeta.entities import Schema

blueprint = Blueprint("schemas", __name__, url_prefix="/api/metalakes/<metalake>/catalogs/<catalog>/schemas")


@blueprint.get("")
@needs(rules.LOAD_CATALOG, on=CATALOG, lists=rules.FILTER_SCHEMA)
@operation("schema", "LIST")
def list_schemas(metalake: str, catalog: str) -> Any:
    parent = request.args.get("parentSchema", "")
    found = dispatchers().schemas.list(metalake, catalog, parent_schema=parent)
    names = [s.name for s in visible(SCHEMA, found, lambda s: s.name)]
    return dto.ok(identifiers=dto.identifiers([metalake, catalog], names))


@blueprint.post("")
@needs(rules.CREATE_SCHEMA, on=CATALOG)
@operation("schema", "CREATE")
def create_schema(metalake: str, catalog: str) -> Any:
    body = payloads.load(payloads.SchemaCreate, json_body())
    schema = Schema(body["name"], body["comment"], body["properties"] or {})
    return dto.ok(schema=dto.schema(dispatchers().schemas.create(metalake, catalog, schema, user())))


@blueprint.get("/<schema>")
@needs(rules.LOAD_SCHEMA, on=SCHEMA)
@operation("schema", "LOAD", "schema")
def load_schema(metalake: str, catalog: str, schema: str) -> Any:
    return dto.ok(schema=dto.schema(dispatchers().schemas.load(metalake, catalog, schema)))


@blueprint.put("/<schema>")
@needs(rules.ALTER_SCHEMA, on=SCHEMA)
@operation("schema", "ALTER", "schema")
def alter_schema(metalake: str, catalog: str, schema: str) -> Any:
    changes = payloads.load_updates(json_body(), payloads.SCHEMA_UPDATES)
    return dto.ok(schema=dto.schema(dispatchers().schemas.alter(metalake, catalog, schema, changes, user())))


@blueprint.delete("/<schema>")
@needs(rules.ALTER_SCHEMA, on=SCHEMA)
@operation("schema", "DROP", "schema")
def drop_schema(metalake: str, catalog: str, schema: str) -> Any:
    dropped = dispatchers().schemas.drop(metalake, catalog, schema, cascade=drop_flag("cascade"), user=user())
    return dto.ok(dropped=dropped)
