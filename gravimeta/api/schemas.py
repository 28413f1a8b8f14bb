"""/api/metalakes/{metalake}/catalogs/{catalog}/schemas"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from gravimeta.api import dto, payloads
from gravimeta.api.errors import operation
from gravimeta.api.requests import dispatchers, flag, json_body, user
from gravimeta.entities import Schema

blueprint = Blueprint("schemas", __name__, url_prefix="/api/metalakes/<metalake>/catalogs/<catalog>/schemas")


@blueprint.get("")
@operation("schema", "LIST")
def list_schemas(metalake: str, catalog: str) -> Any:
    parent = request.args.get("parentSchema", "")
    names = [s.name for s in dispatchers().schemas.list(metalake, catalog, parent_schema=parent)]
    return dto.ok(identifiers=dto.identifiers([metalake, catalog], names))


@blueprint.post("")
@operation("schema", "CREATE")
def create_schema(metalake: str, catalog: str) -> Any:
    body = payloads.load(payloads.SchemaCreate, json_body())
    schema = Schema(body["name"], body["comment"], body["properties"] or {})
    return dto.ok(schema=dto.schema(dispatchers().schemas.create(metalake, catalog, schema, user())))


@blueprint.get("/<schema>")
@operation("schema", "LOAD", "schema")
def load_schema(metalake: str, catalog: str, schema: str) -> Any:
    return dto.ok(schema=dto.schema(dispatchers().schemas.load(metalake, catalog, schema)))


@blueprint.put("/<schema>")
@operation("schema", "ALTER", "schema")
def alter_schema(metalake: str, catalog: str, schema: str) -> Any:
    changes = payloads.load_updates(json_body(), payloads.SCHEMA_UPDATES)
    return dto.ok(schema=dto.schema(dispatchers().schemas.alter(metalake, catalog, schema, changes, user())))


@blueprint.delete("/<schema>")
@operation("schema", "DROP", "schema")
def drop_schema(metalake: str, catalog: str, schema: str) -> Any:
    dropped = dispatchers().schemas.drop(metalake, catalog, schema, cascade=flag("cascade"), user=user())
    return dto.ok(dropped=dropped)
