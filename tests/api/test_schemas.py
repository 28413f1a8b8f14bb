"""Schema endpoints (gravitino-api.md §1.2 rows 15-19)."""

from __future__ import annotations

import pytest

from tests.api.helpers import bad_request, error, fresh, ok

# ------------------------------------------------------------------ create / load / list


def test_create_schema_returns_it_with_audit(api, catalog):
    name = fresh("sch")
    schema = ok(api.post(catalog.children(), {"name": name, "comment": "raw", "properties": {"a": "1"}}))["schema"]
    assert schema["name"] == name
    assert schema["comment"] == "raw"
    assert schema["properties"] == {"a": "1"}
    assert schema["audit"]["creator"] == "anonymous"
    assert "createTime" in schema["audit"]


def test_create_schema_with_only_a_name(api, catalog):
    schema = ok(api.post(catalog.children(), {"name": fresh("sch")}))["schema"]
    assert schema["comment"] is None
    assert schema["properties"] == {}


def test_load_schema_returns_what_was_created(api, schema):
    loaded = api.load(schema)
    assert loaded["name"] == schema.name
    assert loaded["comment"] == "a schema"
    assert loaded["properties"] == {"k": "v"}
    assert loaded["audit"]["creator"] == "anonymous"


def test_list_schemas_returns_identifiers_with_full_namespace(api, catalog):
    names = sorted(api.create_schema(catalog).name for _ in range(3))
    body = ok(api.get(catalog.children()))
    assert body["identifiers"] == [{"namespace": list(catalog.levels), "name": n} for n in names]


def test_list_schemas_of_empty_catalog_is_an_empty_list(api, catalog):
    assert ok(api.get(catalog.children())) == {"code": 0, "identifiers": []}


def test_schema_names_are_case_sensitive(api, catalog):
    suffix = fresh("")
    upper = api.create_schema(catalog, "Sales" + suffix, comment="upper")
    lower = api.create_schema(catalog, "sales" + suffix, comment="lower")
    assert api.load(upper)["comment"] == "upper"
    assert api.load(lower)["comment"] == "lower"


def test_create_duplicate_schema_is_409_already_exists(api, schema):
    response = api.post(schema.parent.children(), {"name": schema.name})
    error(response, 409, 1004, "SchemaAlreadyExistsException")


def test_create_schema_in_missing_catalog_is_404_no_such_catalog(api, metalake):
    response = api.post(metalake.child(fresh("ghost")).children(), {"name": "s"})
    error(response, 404, 1003, "NoSuchCatalogException")


def test_create_schema_in_missing_metalake_is_404_no_such_metalake(api):
    response = api.post(f"/api/metalakes/{fresh('ghost')}/catalogs/c/schemas", {"name": "s"})
    error(response, 404, 1003, "NoSuchMetalakeException")


def test_load_of_missing_schema_is_404(api, catalog):
    error(api.get(catalog.child(fresh("ghost")).path), 404, 1003, "NoSuchSchemaException")


def test_list_schemas_of_missing_catalog_is_404(api, metalake):
    error(api.get(metalake.child(fresh("ghost")).children()), 404, 1003, "NoSuchCatalogException")


def test_create_schema_in_disabled_catalog_is_409_not_in_use(api, catalog):
    api.set_in_use(catalog, False)
    error(api.post(catalog.children(), {"name": fresh("sch")}), 409, 1009, "CatalogNotInUseException")
    api.set_in_use(catalog, True)
    assert api.names(catalog.children()) == []


# ------------------------------------------------------------------ alter


def test_set_schema_property_adds_and_overwrites(api, schema):
    altered = api.altered(
        schema,
        {"@type": "setProperty", "property": "k", "value": "v2"},
        {"@type": "setProperty", "property": "new", "value": "x"},
    )
    assert altered["properties"] == {"k": "v2", "new": "x"}
    assert altered["audit"]["lastModifier"] == "anonymous"
    assert api.load(schema)["properties"] == {"k": "v2", "new": "x"}


def test_remove_schema_property_deletes_it(api, schema):
    assert api.altered(schema, {"@type": "removeProperty", "property": "k"})["properties"] == {}
    assert api.load(schema)["properties"] == {}


@pytest.mark.parametrize(
    "update",
    [
        {"@type": "rename", "newName": "other"},
        {"@type": "updateComment", "newComment": "other"},
    ],
)
def test_schema_supports_only_set_and_remove_property(api, schema, update):
    bad_request(api.alter(schema, update), in_message=update["@type"])
    loaded = api.load(schema)
    assert (loaded["name"], loaded["comment"]) == (schema.name, "a schema")


def test_schema_set_property_with_empty_value_is_400(api, schema):
    bad_request(api.alter(schema, {"@type": "setProperty", "property": "k", "value": ""}), in_message="value")
    assert api.load(schema)["properties"] == {"k": "v"}


def test_alter_of_missing_schema_is_404(api, catalog):
    response = api.alter(catalog.child(fresh("ghost")), {"@type": "removeProperty", "property": "k"})
    error(response, 404, 1003, "NoSuchSchemaException")


# ------------------------------------------------------------------ drop


def test_drop_of_empty_schema_returns_dropped_true(api, schema):
    assert ok(api.delete(schema.path)) == {"code": 0, "dropped": True}
    error(api.get(schema.path), 404, 1003, "NoSuchSchemaException")


@pytest.mark.parametrize("cascade", ["", "?cascade=false", "?cascade=False"])
def test_drop_of_schema_with_tables_without_cascade_is_409_non_empty(api, table, cascade):
    error(api.delete(table.parent.path + cascade), 409, 1005, "NonEmptySchemaException")
    assert api.names(table.parent.children()) == [table.name]


@pytest.mark.parametrize("cascade", ["true", "True"])
def test_cascade_drop_of_schema_drops_its_tables(api, table, cascade):
    schema = table.parent
    assert ok(api.delete(f"{schema.path}?cascade={cascade}"))["dropped"] is True
    error(api.get(table.path), 404, 1003, "NoSuchSchemaException")
    api.create_schema(schema.parent, schema.name)
    assert api.names(schema.children()) == []


def test_drop_of_missing_schema_returns_dropped_false(api, catalog):
    assert ok(api.delete(catalog.child(fresh("ghost")).path)) == {"code": 0, "dropped": False}


def test_drop_schema_with_garbage_cascade_is_400_and_drops_nothing(api, schema):
    bad_request(api.delete(f"{schema.path}?cascade=sure"), in_message="cascade")
    assert api.load(schema)["name"] == schema.name


def test_drop_schema_in_missing_catalog_is_404_no_such_catalog(api, metalake):
    # like Gravitino: the catalog is resolved before the drop, so a missing catalog is an error
    error(api.delete(metalake.child(fresh("ghost")).child("s").path), 404, 1003, "NoSuchCatalogException")
