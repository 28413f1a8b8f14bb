"""/api/openapi.json matches the app: every Flask route and method is documented with a response schema,
nothing documented is missing from the app, and the document is valid OpenAPI 3."""

from __future__ import annotations

import re

import schemathesis
import schemathesis.specs.openapi.schemas  # noqa: F401 - loaded at collection, not inside the test

IGNORED = {"HEAD", "OPTIONS"}


def _routes(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.endpoint.startswith("console."):  # the web console: not API
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        routes |= {(m, path) for m in (rule.methods or set()) - IGNORED}
    return routes


def _documented(doc) -> set[tuple[str, str]]:
    return {("CLOSE" if key == "x-close" else key.upper(), path)
            for path, item in doc["paths"].items() for key in item if key != "parameters"}


def test_every_route_is_documented_and_every_documented_operation_exists(make_app):
    app = make_app()
    doc = app.test_client().get("/api/openapi.json").get_json()
    assert _routes(app) == _documented(doc)
    undocumented = [(p, m) for p, item in doc["paths"].items() for m, op in item.items() if op.get("x-undocumented")]
    assert not undocumented, f"routes without an entry in gravimeta.api.openapi.OPERATIONS: {undocumented}"


def test_every_operation_documents_its_success_shape_and_the_error_body(make_app):
    doc = make_app().test_client().get("/api/openapi.json").get_json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert "200" in op["responses"], (method, path)
            for status in ("400", "404", "500", "default"):
                assert op["responses"][status] == {"$ref": "#/components/responses/Error"}, (method, path, status)
    error = doc["components"]["schemas"]["ErrorResponse"]
    assert set(error["required"]) == {"code", "type", "message"}
    assert set(error["properties"]) == {"code", "type", "message", "stack"}


def test_the_document_is_valid_openapi_3(make_app):
    doc = make_app().test_client().get("/api/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    schema = schemathesis.openapi.from_dict(doc)
    operations = list(schema.get_all_operations())
    assert operations and all(type(result).__name__ == "Ok" for result in operations)


def test_request_bodies_come_from_the_marshmallow_schemas_with_their_limits(make_app):
    doc = make_app(max_comment_chars=77, max_properties=9).test_client().get("/api/openapi.json").get_json()
    schemas = doc["components"]["schemas"]
    create = schemas["MetalakeCreate"]
    assert create["required"] == ["name"]
    assert create["properties"]["name"]["maxLength"] == 64  # Gravitino's name rules (gravimeta/names.py)
    assert create["properties"]["name"]["pattern"] == r"^\w{1,64}$"
    assert schemas["CatalogCreate"]["properties"]["name"]["pattern"] == r"^\w[\w-]{0,63}$"
    assert create["properties"]["comment"]["maxLength"] == 77
    assert create["properties"]["properties"]["maxProperties"] == 9
    kinds = {v["properties"]["@type"]["enum"][0] for v in schemas["TableUpdatesRequest"]["properties"]["updates"]["items"]["oneOf"]}
    assert {"addColumn", "rename", "setProperty", "deleteTableIndex"} <= kinds
    assert schemas["TableUpdatesRequest"]["properties"]["updates"]["minItems"] == 1


def test_security_is_documented_when_authentication_is_on(make_app):
    doc = make_app(authenticators="simple").test_client().get("/api/openapi.json").get_json()
    assert doc["paths"]["/api/metalakes"]["get"]["security"] == [{"basicAuth": []}]
    assert doc["paths"]["/api/version"]["get"]["security"] == []
    assert doc["paths"]["/api/metalakes"]["post"]["x-service-admin"] is True
