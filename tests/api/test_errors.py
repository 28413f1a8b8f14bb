"""The error protocol: every failure is a JSON body {code, type, message, stack} with the Gravitino
code, HTTP status and exact Java `type` the official clients dispatch on (client protocol §6.4);
bad input is a 400 naming the problem, never a 500 or HTML; a failed request changes nothing."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import CLIENT_HEADERS, Ref, bad_request, column, error, fresh, ok

# ------------------------------------------------------------------ §6.4 scenario table


def test_every_client_protocol_error_scenario_has_the_right_code_status_and_type(api, table, flaky_catalog):
    schema, catalog, metalake = table.parent, table.parent.parent, table.parent.parent.parent
    ghost = fresh("ghost")
    idle_metalake = api.create_metalake()
    idle_catalog = api.create_catalog(idle_metalake)
    api.create_schema(idle_catalog)
    api.set_in_use(idle_catalog, False)
    scenarios = [
        # (response, HTTP status, code, type), in the order of client protocol §6.4
        (api.get(metalake.sibling(ghost).path), 404, 1003, "NoSuchMetalakeException"),
        (api.get(catalog.sibling(ghost).path), 404, 1003, "NoSuchCatalogException"),
        (api.get(schema.sibling(ghost).path), 404, 1003, "NoSuchSchemaException"),
        (api.get(schema.sibling(ghost).children()), 404, 1003, "NoSuchSchemaException"),
        (api.get(table.sibling(ghost).path), 404, 1003, "NoSuchTableException"),
        (api.post("/api/metalakes", {"name": metalake.name}), 409, 1004, "MetalakeAlreadyExistsException"),
        (api.post(metalake.children(), {"name": catalog.name, "type": "relational", "provider": "memory"}),
         409, 1004, "CatalogAlreadyExistsException"),
        (api.post(catalog.children(), {"name": schema.name}), 409, 1004, "SchemaAlreadyExistsException"),
        (api.post(schema.children(), {"name": table.name, "columns": [column("id")]}),
         409, 1004, "TableAlreadyExistsException"),
        (api.delete(schema.path), 409, 1005, "NonEmptySchemaException"),
        (api.delete(idle_catalog.path), 409, 1005, "NonEmptyCatalogException"),
        (api.delete(catalog.path), 409, 1010, "CatalogInUseException"),
        (api.delete(metalake.path), 409, 1010, "MetalakeInUseException"),
        (api.get(idle_catalog.children()), 409, 1009, "CatalogNotInUseException"),
        (api.put(table.path, {"updates": []}), 400, 1001, "IllegalArgumentException"),
        (api.delete(f"{flaky_catalog.child('s').child('t').path}?purge=true"), 405, 1006,
         "UnsupportedOperationException"),
    ]
    api.set_in_use(idle_metalake, False)
    scenarios += [
        (api.delete(idle_metalake.path), 409, 1005, "NonEmptyMetalakeException"),
        (api.get(idle_metalake.children()), 409, 1009, "MetalakeNotInUseException"),
    ]
    for response, status, code, type_name in scenarios:
        error(response, status, code, type_name)


def test_error_message_names_entity_operation_and_parent_like_the_java_server(api, schema):
    message = error(api.get(schema.child("ghost_t").path), 404, 1003, "NoSuchTableException")
    assert message.startswith(f"Failed to operate table(s) [ghost_t] operation [LOAD] under schema [{schema.name}]")
    assert "reason [" in message


def test_list_error_message_has_no_name_bracket(api, catalog):
    message = error(api.get(catalog.child("ghost_s").children()), 404, 1003, "NoSuchSchemaException")
    assert message.startswith("Failed to operate table(s) operation [LIST] under schema [ghost_s]")


# ------------------------------------------------------------------ unsupported, connection, internal


def test_purge_on_a_catalog_that_cannot_purge_is_405_and_keeps_the_table(api, flaky_catalog):
    table = api.create_table(api.create_schema(flaky_catalog))
    error(api.delete(f"{table.path}?purge=true"), 405, 1006, "UnsupportedOperationException")
    assert api.load(table)["name"] == table.name
    assert ok(api.delete(table.path))["dropped"] is True


def test_test_connection_failure_answers_200_with_connection_failed_body(api, flaky_catalog):
    body = {"updates": [{"@type": "setProperty", "property": "reachable", "value": "false"}]}
    response = api.post(f"{flaky_catalog.path}/testConnection", body)
    assert response.status_code == 200
    payload = response.get_json()
    assert (payload["code"], payload["type"]) == (1007, "ConnectionFailedException")
    assert payload["message"]
    assert ok(api.post(f"{flaky_catalog.path}/testConnection")) == {"code": 0}


def test_unexpected_engine_failure_is_json_500_and_leaves_no_table(api, flaky_catalog):
    schema = api.create_schema(flaky_catalog)
    response = api.post(schema.children(), {"name": fresh("explode"), "columns": [column("id")]})
    error(response, 500, 1002, "RuntimeException")
    assert api.names(schema.children()) == []


# ------------------------------------------------------------------ framework errors are JSON too


@pytest.mark.parametrize(
    "path",
    [
        "/nope", "/api", "/api/nope", "/api/metalakes/m/nope", "/api/metalakes/m/catalogs/c/testConnection/x",
        "/api/metalakes/m/catalogs/c/schemas/s/tables/t/nope",
    ],
)
def test_unknown_route_is_a_json_404(api, path):
    error(api.get(path), 404, 1003, "NotFoundException", in_message=path)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/version"),
        ("DELETE", "/api/metalakes"),
        ("PUT", "/api/metalakes"),
        ("POST", "/api/metalakes/m"),
        ("PATCH", "/api/metalakes/m/catalogs/c/schemas/s"),
        ("POST", "/api/metalakes/m/catalogs/c/schemas/s/tables/t"),
        ("GET", "/api/metalakes/m/catalogs/c/testConnection"),
        ("CLOSE", "/api/metalakes"),
        ("POST", "/"),  # GET / is the web console
    ],
)
def test_wrong_method_is_a_json_405(client, method, path):
    response = client.open(path, method=method, headers=CLIENT_HEADERS)
    error(response, 405, 1006, "UnsupportedOperationException", in_message=method)


def test_trailing_slash_is_served_without_redirect(api, table):
    metalake = table.parent.parent.parent
    assert ok(api.get("/api/metalakes/"))["metalakes"][0]["name"] == metalake.name
    assert ok(api.get(metalake.path + "/"))["metalake"]["name"] == metalake.name
    assert ok(api.get(table.parent.children() + "/"))["identifiers"][0]["name"] == table.name
    assert ok(api.get(table.path + "/"))["table"]["name"] == table.name
    assert ok(api.post("/api/metalakes/", {"name": fresh("slash")}))["metalake"]
    assert ok(api.delete(table.path + "/"))["dropped"] is True


def test_get_with_json_content_type_and_no_body_is_fine(client, metalake):
    response = client.get(metalake.path, headers={**CLIENT_HEADERS, "Content-Type": "application/json"})
    assert ok(response)["metalake"]["name"] == metalake.name


def test_oversized_body_is_a_json_413(api):
    response = api.raw("POST", "/api/metalakes", b"{" + b" " * (2 * 1024 * 1024) + b"}")
    error(response, 413, 1001, "IllegalArgumentException", in_message="larger than")


# ------------------------------------------------------------------ malformed bodies on every endpoint


def _body_endpoints(table: Ref) -> list[tuple[str, str]]:
    schema, catalog, metalake = table.parent, table.parent.parent, table.parent.parent.parent
    return [
        ("POST", "/api/metalakes"), ("PUT", metalake.path), ("PATCH", metalake.path),
        ("POST", metalake.children()), ("PUT", catalog.path), ("PATCH", catalog.path),
        ("POST", catalog.children()), ("PUT", schema.path),
        ("POST", schema.children()), ("PUT", table.path),
    ]


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"name": }', b"{'name': 'x'}", b"\xff\xfe\x00", b'{"name": NaN}', b"[" * 50_000, b"nul"],
    ids=["truncated", "missing-value", "single-quotes", "not-utf8", "nan", "deep-nesting", "bad-literal"],
)
def test_malformed_json_is_400_on_every_endpoint_with_a_body(api, table, raw):
    for method, path in _body_endpoints(table):
        bad_request(api.raw(method, path, raw), in_message="Malformed json")


@pytest.mark.parametrize("body", [[], ["updates"], "text", 42, True, None])
def test_body_that_is_not_a_json_object_is_400_on_every_endpoint(api, table, body):
    for method, path in _body_endpoints(table):
        bad_request(api.raw(method, path, json.dumps(body)))


def test_missing_body_is_400_request_body_cannot_be_null(api, table):
    for method, path in _body_endpoints(table):
        bad_request(api.raw(method, path, b""), in_message="Request body cannot be null")


def test_a_json_body_sent_as_text_plain_is_415_and_creates_nothing(api):
    """As Gravitino's @Consumes(application/json) resources: a browser sends text/plain across origins
    without asking (tests/api/test_wire_format.py has the other types)."""
    name = fresh("lake")
    response = api.raw("POST", "/api/metalakes", f'{{"name": "{name}"}}', content_type="text/plain")
    assert response.status_code == 415, response.get_json()
    assert response.get_json()["type"] == "RESTException"
    assert api.get(f"/api/metalakes/{name}").status_code == 404


# ------------------------------------------------------------------ update lists


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "updates"),
        ({"updates": None}, "updates"),
        ({"updates": {"@type": "setProperty"}}, "updates"),
        ({"updates": ["setProperty"]}, "@type"),
        ({"updates": [{"property": "k", "value": "v"}]}, "@type"),
        ({"updates": [{"@type": "dropEverything"}]}, "dropEverything"),
        ({"updates": [{"@type": ["setProperty"]}]}, "@type"),
        ({"updates": [{"@type": "SETPROPERTY", "property": "k", "value": "v"}]}, "SETPROPERTY"),
    ],
)
def test_bad_update_list_is_400_naming_the_problem(api, table, body, problem):
    for ref in (table.parent.parent.parent, table.parent.parent, table.parent, table):
        bad_request(api.put(ref.path, body), in_message=problem)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"@type": "rename"}, "newName"),
        ({"@type": "setProperty", "property": "k"}, "value"),
        ({"@type": "setProperty", "value": "v"}, "property"),
        ({"@type": "setProperty", "property": " ", "value": "v"}, "property"),
        ({"@type": "removeProperty"}, "property"),
        ({"@type": "addColumn", "type": "integer"}, "fieldName"),
        ({"@type": "addColumn", "fieldName": [], "type": "integer"}, "fieldName"),
        ({"@type": "addColumn", "fieldName": [""], "type": "integer"}, "fieldName"),
        ({"@type": "addColumn", "fieldName": ["c"]}, "type"),
        ({"@type": "addColumn", "fieldName": ["c"], "type": "integer", "position": "last"}, "position"),
        ({"@type": "renameColumn", "oldFieldName": ["id"]}, "newFieldName"),
        ({"@type": "renameColumn", "newFieldName": "x"}, "oldFieldName"),
        ({"@type": "deleteColumn"}, "fieldName"),
        ({"@type": "updateColumnType", "fieldName": ["id"]}, "newType"),
        ({"@type": "updateColumnComment"}, "fieldName"),
        ({"@type": "updateColumnNullability", "fieldName": ["id"]}, "nullable"),
        ({"@type": "updateColumnDefaultValue", "fieldName": ["id"]}, "newDefaultValue"),
        ({"@type": "updateColumnDefaultValue", "fieldName": ["id"], "newDefaultValue": 5}, "newDefaultValue"),
        ({"@type": "updateColumnAutoIncrement", "fieldName": ["id"]}, "autoIncrement"),
        ({"@type": "addTableIndex"}, "index"),
        ({"@type": "addTableIndex", "index": {"indexType": "PRIMARY_KEY"}}, "fieldNames"),
        ({"@type": "deleteTableIndex"}, "name"),
    ],
)
def test_table_change_with_missing_or_bad_field_is_400_naming_it(api, table, change, field):
    before = api.load(table)
    bad_request(api.alter(table, change), in_message=field)
    assert api.load(table) == before


# ------------------------------------------------------------------ names


BAD_NAMES = {  # Gravitino's name rules (gravimeta/names.py) answer "... name '<name>' is illegal."
    "empty": ("", "illegal"),
    "blank": ("   ", "illegal"),
    "too-long": ("x" * 129, "illegal"),
    "slash": ("a/b", "illegal"),  # a column may hold '/' (Gravitino's rule): not checked for columns below
    "control-char": ("tab\there", "illegal"),
    "not-a-string": (123, "string"),
    "null": (None, "null"),
}


@pytest.mark.parametrize("bad", BAD_NAMES, ids=list(BAD_NAMES))
def test_bad_name_is_400_for_every_kind_of_entity_and_creates_nothing(api, schema, bad):
    name, problem = BAD_NAMES[bad]
    catalog, metalake = schema.parent, schema.parent.parent
    bad_request(api.post("/api/metalakes", {"name": name}), in_message=problem)
    bad_request(api.post(metalake.children(), {"name": name, "type": "relational", "provider": "memory"}),
                in_message=problem)
    bad_request(api.post(catalog.children(), {"name": name}), in_message=problem)
    bad_request(api.post(schema.children(), {"name": name, "columns": [column("id")]}), in_message=problem)
    if bad != "slash":
        bad_request(api.post(schema.children(), {"name": "t", "columns": [column(name)]}), in_message=problem)
    assert [m["name"] for m in ok(api.get("/api/metalakes"))["metalakes"]] == [metalake.name]
    assert api.names(metalake.children()) == [catalog.name]
    assert api.names(catalog.children()) == [schema.name]
    assert api.names(schema.children()) == []


@pytest.mark.parametrize("bad", ["", "a/b", "x" * 129])
def test_rename_to_a_bad_name_is_400_and_changes_nothing(api, table, bad):
    catalog, metalake = table.parent.parent, table.parent.parent.parent
    for ref in (metalake, catalog, table):
        bad_request(api.alter(ref, {"@type": "rename", "newName": bad}), in_message="newName")
        assert api.load(ref)["name"] == ref.name
    if "/" not in bad:  # a column name may hold '/' (Gravitino's rule)
        bad_request(api.alter(table, {"@type": "renameColumn", "oldFieldName": ["id"], "newFieldName": bad}),
                    in_message="newFieldName")
    bad_request(api.alter(table, {"@type": "rename", "newName": "ok", "newSchemaName": bad}),
                in_message="newSchemaName")


def test_name_of_exactly_64_characters_is_accepted_and_65_is_not(api):
    name = fresh("lake")
    name += "x" * (64 - len(name))
    assert ok(api.post("/api/metalakes", {"name": name}))["metalake"]["name"] == name
    assert api.load(Ref((name,)))["name"] == name
    bad_request(api.post("/api/metalakes", {"name": name + "y"}), in_message="illegal")


# ------------------------------------------------------------------ column types


@pytest.mark.parametrize(
    "bad_type",
    ["int", "bigint", "text", "varchar", "decimal(10)", "", 5, [], {"type": "list"}, {"type": "bogus"},
     {"type": "struct", "fields": []}, {"type": "map", "keyType": "string", "valueType": "int"}],
    ids=str,
)
def test_non_gravitino_column_type_is_400_and_creates_nothing(api, schema, bad_type):
    body = {"name": fresh("tbl"), "columns": [column("a", bad_type)]}
    bad_request(api.post(schema.children(), body), in_message="type")
    assert api.names(schema.children()) == []


def test_bad_type_message_suggests_gravitino_names(api, schema):
    message = bad_request(api.post(schema.children(), {"name": "t", "columns": [column("a", "int")]}))
    assert "'int'" in message and "integer" in message


# ------------------------------------------------------------------ wrong JSON types in fields


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "ok", "properties": ["a"]}, "properties"),
        ({"name": "ok", "properties": {"a": 1}}, "properties"),
        ({"name": "ok", "properties": {"a": None}}, "properties"),
        ({"name": "ok", "properties": {"": "v"}}, "properties"),
        ({"name": "ok", "comment": 5}, "comment"),
    ],
)
def test_wrongly_typed_field_is_400_naming_it(api, body, field):
    bad_request(api.post("/api/metalakes", body), in_message=field)
    assert ok(api.get("/api/metalakes"))["metalakes"] == []


@pytest.mark.parametrize("body", [{"inUse": "maybe"}, {"inUse": None}, {"inUse": [True]}])
def test_set_in_use_with_a_non_boolean_is_400(api, metalake, body):
    bad_request(api.patch(metalake.path, body), in_message="inUse")
    assert api.load(metalake)["properties"]["in-use"] == "true"


@pytest.mark.parametrize("key", ["in-use", "metalake-in-use"])
def test_reserved_in_use_property_cannot_be_set_or_removed_directly(api, catalog, key):
    metalake = catalog.parent
    for ref in (metalake, catalog):
        bad_request(api.alter(ref, {"@type": "setProperty", "property": key, "value": "false"}), in_message=key)
        bad_request(api.alter(ref, {"@type": "removeProperty", "property": key}), in_message=key)
        assert api.load(ref)["properties"]["in-use"] == "true"
    bad_request(api.post("/api/metalakes", {"name": fresh("m"), "properties": {key: "false"}}), in_message=key)
    body = {"name": fresh("c"), "type": "relational", "provider": "memory", "properties": {key: "false"}}
    bad_request(api.post(metalake.children(), body), in_message=key)
    assert api.names(metalake.children()) == [catalog.name]


# ------------------------------------------------------------------ failed requests change nothing


def test_metalake_alter_failing_on_its_second_change_changes_nothing(api, metalake):
    other = api.create_metalake()
    before = api.load(metalake)
    response = api.alter(
        metalake,
        {"@type": "setProperty", "property": "x", "value": "1"},
        {"@type": "rename", "newName": other.name},
    )
    error(response, 409, 1004, "MetalakeAlreadyExistsException")
    assert api.load(metalake) == before


def test_catalog_alter_failing_on_its_second_change_changes_nothing(api, catalog):
    before = api.load(catalog)
    response = api.alter(
        catalog,
        {"@type": "updateComment", "newComment": "changed"},
        {"@type": "setProperty", "property": "in-use", "value": "false"},  # reserved: refused
    )
    bad_request(response, in_message="in-use")
    assert api.load(catalog) == before


def test_schema_alter_failing_on_its_second_change_changes_nothing(api, schema):
    before = api.load(schema)
    response = api.alter(
        schema,
        {"@type": "setProperty", "property": "x", "value": "1"},
        {"@type": "removeProperty", "property": ""},
    )
    bad_request(response, in_message="updates[1]")
    assert api.load(schema) == before


def test_rename_across_schemas_onto_an_existing_table_changes_nothing(api, table):
    target = api.create_schema(table.parent.parent)
    existing = api.create_table(target, table.name)
    before = api.load(table)
    response = api.alter(table, {"@type": "rename", "newName": existing.name, "newSchemaName": target.name})
    error(response, 409, 1004, "TableAlreadyExistsException")
    assert api.load(table) == before
    assert api.names(target.children()) == [existing.name]
