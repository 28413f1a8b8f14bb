"""GET /api/openapi.json: an OpenAPI 3 document built with apispec from the marshmallow request schemas
(payloads.py) and the response shapes below (what dto.py emits), for exactly the routes of the app.

Every route in the app's url_map appears here with its methods (CLOSE /, which OpenAPI cannot name, is
the `x-close` operation of path `/`); a route without an entry in OPERATIONS is still listed, marked
`x-undocumented`, and tests/hardening/test_openapi.py fails on it. Every non-2xx response is the Gravitino
error body {code, type, message, and an optional stack}. The limits (payloads.validate_name, api/limits.py) and the
configured authentication are part of the document, which is built once per app.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Flask, current_app, jsonify
from marshmallow import Schema, fields

from gravimeta import GRAVITINO_API_VERSION, __version__, capacity, names
from gravimeta.access import rules
from gravimeta.access.declaration import Declaration, declared
from gravimeta.api import openapi_attached, openapi_roles, payloads
from gravimeta.api.auth import build_authenticators
from gravimeta.api.door import public
from gravimeta.api.input_rules import NAME_ARGS
from gravimeta.api.openapi_shapes import Audit, Out

blueprint = Blueprint("openapi", __name__)

ERROR_STATUSES = ("400", "401", "403", "404", "405", "409", "413", "500", "502", "503")
_IGNORED_METHODS = {"HEAD", "OPTIONS"}

# ------------------------------------------------------------------ response shapes (dto.py)


class ErrorResponse(Out):
    code = fields.Integer(required=True, metadata={"description": "Gravitino error code (1001 ... 1100)"})
    type = fields.String(required=True, metadata={"description": "the Java exception's simple name"})
    message = fields.String(required=True)
    stack = fields.List(fields.String(), metadata={"description": "never sent by gravimeta"})


class BaseResponse(Out):
    code = fields.Integer(required=True, metadata={"description": "0 on success"})


class TestConnectionResponse(BaseResponse):
    """HTTP 200 either way, like the Java server: code 0, or an error body with a non-zero code."""

    type = fields.String()
    message = fields.String()
    stack = fields.List(fields.String(), metadata={"description": "never sent by gravimeta"})


def _properties() -> fields.Dict:
    return fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class Metalake(Out):
    name = fields.String(required=True)
    comment = fields.String(allow_none=True)
    properties = _properties()
    audit = fields.Nested(Audit, required=True)


class Catalog(Metalake):
    type = fields.String(required=True)
    provider = fields.String(required=True)


class SchemaDto(Metalake):
    pass


class Column(Out):
    name = fields.String(required=True)
    type = fields.Raw(required=True, metadata={"description": "a Gravitino type: a string or an object"})
    comment = fields.String(allow_none=True)
    nullable = fields.Boolean()
    autoIncrement = fields.Boolean()
    defaultValue = fields.Dict()


class Table(Out):
    name = fields.String(required=True)
    comment = fields.String(allow_none=True)
    columns = fields.List(fields.Nested(Column), required=True)
    properties = _properties()
    audit = fields.Nested(Audit, required=True)
    distribution = fields.Dict(required=True)
    sortOrders = fields.List(fields.Dict(), required=True)
    partitioning = fields.List(fields.Dict(), required=True)
    indexes = fields.List(fields.Dict(), required=True)


class NameIdentifier(Out):
    namespace = fields.List(fields.String(), required=True)
    name = fields.String(required=True)


class Version(Out):
    version = fields.String(required=True)
    compileDate = fields.String(required=True)
    gitCommit = fields.String(required=True)


class VersionResponse(BaseResponse):
    version = fields.Nested(Version, required=True)


class MetalakeResponse(BaseResponse):
    metalake = fields.Nested(Metalake, required=True)


class MetalakeListResponse(BaseResponse):
    metalakes = fields.List(fields.Nested(Metalake), required=True)


class CatalogResponse(BaseResponse):
    catalog = fields.Nested(Catalog, required=True)


class CatalogListResponse(BaseResponse):
    """identifiers without ?details=true, catalogs with it."""

    identifiers = fields.List(fields.Nested(NameIdentifier))
    catalogs = fields.List(fields.Nested(Catalog))


class EntityListResponse(BaseResponse):
    identifiers = fields.List(fields.Nested(NameIdentifier), required=True)


class SchemaResponse(BaseResponse):
    schema = fields.Nested(SchemaDto, required=True)


class TableResponse(BaseResponse):
    table = fields.Nested(Table, required=True)


class DropResponse(BaseResponse):
    dropped = fields.Boolean(required=True)
    deleted = fields.Boolean(metadata={"description": "role deletions only: the same as dropped"})


class HealthCheck(Out):
    name = fields.String(required=True)
    status = fields.String(required=True)
    details = fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class Owner(Out):
    name = fields.String(required=True)
    type = fields.String(required=True, metadata={"description": "USER or GROUP"})


class OwnerResponse(BaseResponse):
    owner = fields.Nested(Owner, allow_none=True, metadata={"description": "null: the object has no owner"})


class SetResponse(BaseResponse):
    set = fields.Boolean(required=True)


class Principal(Out):
    name = fields.String(required=True)
    roles = fields.List(fields.String(), required=True)
    audit = fields.Nested(Audit, required=True)


class UserResponse(BaseResponse):
    user = fields.Nested(Principal, required=True)


class GroupResponse(BaseResponse):
    group = fields.Nested(Principal, required=True)


class PrincipalListResponse(BaseResponse):
    """names without ?details=true; users (or groups) with it."""

    names = fields.List(fields.String())
    users = fields.List(fields.Nested(Principal))
    groups = fields.List(fields.Nested(Principal))


class RemoveResponse(BaseResponse):
    removed = fields.Boolean(required=True)


class HealthResponse(BaseResponse):
    status = fields.String(required=True)
    checks = fields.List(fields.Nested(HealthCheck), required=True)


class LocksResponse(BaseResponse):
    distributedLock = fields.Dict(required=True)
    claims = fields.List(fields.Dict(), required=True)
    nodes = fields.List(fields.Dict(), required=True)
    warnings = fields.List(fields.String(), required=True)


class RepairPreviewResponse(BaseResponse):
    intents = fields.List(fields.Dict(), required=True)


RESPONSES: list[type[Schema]] = [
    ErrorResponse, BaseResponse, TestConnectionResponse, VersionResponse, MetalakeResponse, MetalakeListResponse,
    CatalogResponse, CatalogListResponse, EntityListResponse, SchemaResponse, TableResponse, DropResponse,
    HealthResponse, LocksResponse, RepairPreviewResponse, OwnerResponse, SetResponse, UserResponse, GroupResponse,
    PrincipalListResponse, RemoveResponse, *openapi_attached.RESPONSES, *openapi_roles.RESPONSES,
]

# ------------------------------------------------------------------ the operations


@dataclass(frozen=True)
class Op:
    summary: str
    response: str | None  # a schema name; None = text/plain (metrics) or any JSON object
    body: str | None = None
    body_required: bool = True
    query: tuple[str, ...] = ()
    tags: tuple[str, ...] = field(default=())


_FLAGS = {
    "force": "drop even if in use / not empty",
    "cascade": "drop the schema's tables too",
    "purge": "purge the table's data too",
    "details": "list full objects (catalogs, users, groups) instead of identifiers or names",
}
# string query parameters
_TEXTS = {
    "parentSchema": "list the sub-schemas of this hierarchical schema (no catalog here has any: a non-blank "
                    "value is a 405 UnsupportedOperationException, an empty ':' segment a 400)",
}

OPERATIONS: dict[str, Op] = {
    "version.version": Op("Server version (always open; the clients call it first)", "VersionResponse"),
    "version.close": Op("Sent by the official client's close(); does nothing", "BaseResponse"),
    "health.live": Op("Liveness: the process answers (Gravitino's /api/health/live)", "HealthResponse"),
    "health.ready": Op("Readiness: store, schema revision, heartbeat; 503 when a check is DOWN", "HealthResponse"),
    "health.health": Op("Liveness and readiness together; 503 when a check is DOWN", "HealthResponse"),
    "openapi.document": Op("This document", None),
    "admin.locks": Op("Live cross-node claims and replicas (service admins)", "LocksResponse"),
    "admin.repair_preview": Op("What the repair would do with each open journal intent, and why; changes nothing "
                               "(service admins)", "RepairPreviewResponse"),
    "admin.metrics": Op("Prometheus metrics (service admins)", None),
    "metalakes.list_metalakes": Op("List metalakes", "MetalakeListResponse"),
    "metalakes.create_metalake": Op("Create a metalake (service admins, with authorization on)", "MetalakeResponse",
                                    "MetalakeCreate"),
    "metalakes.load_metalake": Op("Load a metalake", "MetalakeResponse"),
    "metalakes.alter_metalake": Op("Alter a metalake", "MetalakeResponse", "MetalakeUpdatesRequest"),
    "metalakes.set_metalake_in_use": Op("Enable or disable a metalake", "BaseResponse", "InUseRequest"),
    "metalakes.drop_metalake": Op("Drop a metalake", "DropResponse", query=("force",)),
    "catalogs.list_catalogs": Op("List catalogs", "CatalogListResponse", query=("details",)),
    "catalogs.create_catalog": Op("Create a catalog", "CatalogResponse", "CatalogCreate"),
    "catalogs.load_catalog": Op("Load a catalog", "CatalogResponse"),
    "catalogs.alter_catalog": Op("Alter a catalog", "CatalogResponse", "CatalogUpdatesRequest"),
    "catalogs.set_catalog_in_use": Op("Enable or disable a catalog", "BaseResponse", "InUseRequest"),
    "catalogs.drop_catalog": Op("Drop a catalog", "DropResponse", query=("force",)),
    "catalogs.test_connection": Op("Test a catalog's connection, optionally with changes (HTTP 200 either way)",
                                   "TestConnectionResponse", "CatalogUpdatesRequest", body_required=False),
    "catalogs.test_new_connection": Op(
        "Test whether a catalog could be created as described, without creating it (HTTP 200 with an error "
        "body for a bad request, a missing or disabled metalake, an existing catalog or a failed probe)",
        "TestConnectionResponse", "CatalogCreate"),
    "schemas.list_schemas": Op("List schemas: the store's and the catalog engine's (502 when the engine cannot be reached)", "EntityListResponse", query=("parentSchema",)),
    "schemas.create_schema": Op("Create a schema", "SchemaResponse", "SchemaCreate"),
    "schemas.load_schema": Op("Load a schema (one only the catalog's engine has is imported into the store)", "SchemaResponse"),
    "schemas.alter_schema": Op("Alter a schema", "SchemaResponse", "SchemaUpdatesRequest"),
    "schemas.drop_schema": Op("Drop a schema (one only the catalog's engine has is dropped there)", "DropResponse", query=("cascade",)),
    "tables.list_tables": Op("List tables: the store's and the catalog engine's (502 when the engine cannot be reached)", "EntityListResponse"),
    "tables.create_table": Op("Create a table", "TableResponse", "TableCreate"),
    "tables.load_table": Op("Load a table (one only the catalog's engine has is imported into the store)", "TableResponse"),
    "tables.alter_table": Op("Alter a table", "TableResponse", "TableUpdatesRequest"),
    "tables.drop_table": Op("Drop (or purge) a table (one only the catalog's engine has is dropped there)", "DropResponse", query=("purge",)),
    # owners, users and groups: 405 unless gravitino.authorization.enable=true (docs/authorization.md)
    "owners.get_owner": Op("The owner of a metadata object ({object_type}: metalake, catalog, schema, table, tag, role; "
                           "{full_name}: dot-separated, without the metalake)", "OwnerResponse"),
    "owners.set_owner": Op("Set the owner of a metadata object", "SetResponse", "OwnerSetRequest"),
    "users.add_user": Op("Add a user to the metalake", "UserResponse", "PrincipalAddRequest"),
    "users.get_user": Op("Load a user of the metalake", "UserResponse"),
    "users.list_users": Op("List the metalake's users", "PrincipalListResponse", query=("details",)),
    "users.remove_user": Op("Remove a user; the objects it owned have no owner afterwards", "RemoveResponse"),
    "groups.add_group": Op("Add a group to the metalake", "GroupResponse", "PrincipalAddRequest"),
    "groups.get_group": Op("Load a group of the metalake", "GroupResponse"),
    "groups.list_groups": Op("List the metalake's groups", "PrincipalListResponse", query=("details",)),
    "groups.remove_group": Op("Remove a group; the objects it owned have no owner afterwards", "RemoveResponse"),
    **openapi_attached.operations(Op),
    **openapi_roles.operations(Op),
}

REQUESTS: dict[str, type[Schema]] = {
    "MetalakeCreate": payloads.MetalakeCreate,
    "CatalogCreate": payloads.CatalogCreate,
    "SchemaCreate": payloads.SchemaCreate,
    "TableCreate": payloads.TableCreate,
    "InUseRequest": payloads.InUseRequest,
    "OwnerSetRequest": payloads.OwnerSetRequest,
    "PrincipalAddRequest": payloads.PrincipalAddRequest,
    **openapi_attached.REQUESTS,
    **openapi_roles.REQUESTS,
}
UPDATES = {
    "Metalake": (payloads.METALAKE_UPDATES, 0),
    "Catalog": (payloads.CATALOG_UPDATES, 0),
    "Schema": (payloads.SCHEMA_UPDATES, 0),
    "Table": (payloads.TABLE_UPDATES, 1),
    **openapi_attached.UPDATES,
}

# ------------------------------------------------------------------ building


def _name_attributes(_converter: Any, field_obj: Any, **_: Any) -> dict[str, Any]:
    if isinstance(field_obj, payloads.NewName):
        return {"minLength": 1, "maxLength": 64, "pattern": names.PATTERNS[field_obj.kind]}
    if isinstance(field_obj, payloads.Name):
        return {"minLength": 1, "maxLength": payloads.NAME_MAX, "pattern": r"^[^/\u0000-\u001f\u007f]*\S[^/\u0000-\u001f\u007f]*$"}
    return {}


def _inline(_schema: Any) -> Any:
    """Nested schemas are written inline, not as components of their own."""
    return None


def build_document(app: Flask) -> dict[str, Any]:
    """The OpenAPI 3.0 document for `app`'s routes (see the module docstring)."""
    settings = app.extensions["gravimeta"].settings
    plugin = MarshmallowPlugin(schema_name_resolver=_inline)
    spec = APISpec(
        title="gravimeta", version=__version__, openapi_version="3.0.3", plugins=[plugin],
        info={"description": f"Gravitino-compatible REST API (Gravitino {GRAVITINO_API_VERSION})"},
    )
    plugin.converter.add_attribute_function(_name_attributes)  # type: ignore[union-attr]
    for schema in RESPONSES:
        spec.components.schema(schema.__name__, schema=schema)
    for name, schema in REQUESTS.items():
        spec.components.schema(name, component=_limited(plugin.converter.schema2jsonschema(schema), settings))  # type: ignore[union-attr]
    for entity, (kinds, min_items) in UPDATES.items():
        spec.components.schema(f"{entity}UpdatesRequest", component=_updates(plugin, kinds, min_items, settings))
    spec.components.response("Error", {
        "description": "Gravitino error body",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    })
    schemes = _security(spec, build_authenticators(settings))
    for path, operations in _operations(app, schemes).items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def _updates(plugin: MarshmallowPlugin, kinds: Mapping[str, type[Schema]], min_items: int, settings: Any) -> dict[str, Any]:
    variants = []
    for kind, schema in sorted(kinds.items()):
        variant = copy.deepcopy(_limited(plugin.converter.schema2jsonschema(schema), settings))  # type: ignore[union-attr]
        variant["properties"] = {"@type": {"type": "string", "enum": [kind]}, **variant.get("properties", {})}
        variant["required"] = ["@type", *variant.get("required", [])]
        variants.append(variant)
    updates: dict[str, Any] = {"type": "array", "items": {"oneOf": variants}}
    if min_items:
        updates["minItems"] = min_items
    return {"type": "object", "required": ["updates"], "properties": {"updates": updates}}


def _limited(jsonschema: dict[str, Any], settings: Any) -> dict[str, Any]:
    """Add the configured comment and property limits to a request schema (recursively)."""
    result = copy.deepcopy(jsonschema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in (node.get("properties") or {}).items():
                if key in ("comment", "newComment") and isinstance(value, dict):
                    value["maxLength"] = settings.max_comment_chars
                if key == "properties" and isinstance(value, dict):
                    value["maxProperties"] = settings.max_properties
                    value["additionalProperties"] = {"type": "string", "maxLength": settings.max_property_value_chars}
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result


def _security(spec: APISpec, authenticators: list[Any]) -> list[dict[str, list[str]]]:
    spec.components.security_scheme("basicAuth", {"type": "http", "scheme": "basic"})
    spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"})
    names = {"SimpleAuthenticator": "basicAuth", "OAuthAuthenticator": "bearerAuth"}
    return [{names[type(a).__name__]: []} for a in authenticators]


#: the web console's endpoints (gravimeta/console): HTML, JavaScript and CSS for browsers, not API operations
CONSOLE = "console."


def _operations(app: Flask, schemes: list[dict[str, list[str]]]) -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        if rule.endpoint == "static" or rule.endpoint.startswith(CONSOLE):  # pages and files, not API
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in sorted((rule.methods or set()) - _IGNORED_METHODS):
            key = "x-close" if method == "CLOSE" else method.lower()
            access = declared(app.view_functions.get(rule.endpoint))
            paths.setdefault(path, {})[key] = _operation(rule.endpoint, list(rule.arguments), schemes, access)
    return paths


def _operation(endpoint: str, arguments: list[str], schemes: list[dict[str, list[str]]],
               access: Declaration | None = None) -> dict[str, Any]:
    op = OPERATIONS.get(endpoint)
    result: dict[str, Any] = {"operationId": endpoint.replace(".", "_"), "tags": [endpoint.split(".")[0]]}
    parameters = [
        {"name": a, "in": "path", "required": True, "schema": {
            "type": "string", "minLength": 1, **({"maxLength": capacity.NAME_CHARS} if a in NAME_ARGS else {})}}
        for a in sorted(arguments)
    ]
    if op is None:
        result.update({"x-undocumented": True, "summary": endpoint, "parameters": parameters,
                       "responses": {"default": {"$ref": "#/components/responses/Error"}}})
        return result
    parameters += [
        {"name": q, "in": "query", "required": False, "description": _FLAGS[q], "schema": {"type": "boolean"}}
        if q in _FLAGS else
        {"name": q, "in": "query", "required": False, "description": _TEXTS[q], "schema": {"type": "string"}}
        if q in _TEXTS else
        {"name": q, "in": "query", "required": False, "description": openapi_attached.QUERY[q][1],
         "schema": {"type": openapi_attached.QUERY[q][0]}}
        for q in op.query
    ]
    result["summary"] = op.summary
    if parameters:
        result["parameters"] = parameters
    if op.body:
        result["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{op.body}"}}},
        }
    if op.response is None and endpoint == "admin.metrics":
        ok = {"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}
    elif op.response is None:
        ok = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    else:
        ok = {"description": "OK", "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{op.response}"}}}}
    result["responses"] = {"200": ok, **{s: {"$ref": "#/components/responses/Error"} for s in ERROR_STATUSES},
                           "default": {"$ref": "#/components/responses/Error"}}
    if endpoint.startswith("health.") and endpoint != "health.live":  # DOWN is a health body too, not an error
        result["responses"]["503"] = {**ok, "description": "A check is DOWN"}
    if access is not None and access.public:
        result["security"] = []
    elif schemes:
        result["security"] = schemes
    if access is not None:  # who may call it with authorization on (docs/authorization.md)
        result["x-authorization"] = access.describe("metalake" in arguments).replace("`", "")
        if access.operator or access.rule is rules.SERVICE_ADMIN:
            result["x-service-admin"] = True
    return result


@blueprint.get("/api/openapi.json")
@public
def document() -> Any:
    doc = current_app.extensions.get("gravimeta.openapi")
    if doc is None:
        doc = current_app.extensions["gravimeta.openapi"] = build_document(current_app)
    return jsonify(doc)
