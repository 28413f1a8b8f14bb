"""Catalog endpoints (gravitino-api.md §1.2 rows 8, 9, 11-14) and per-catalog testConnection."""

from __future__ import annotations

import pytest

from tests.api.helpers import bad_request, error, fresh, ok

# ------------------------------------------------------------------ create / load


def test_create_catalog_returns_lowercase_type_provider_audit_and_in_use(api, metalake):
    name = fresh("cat")
    body = {"name": name, "type": "RELATIONAL", "provider": "memory", "comment": "c", "properties": {"comment": "x"}}
    catalog = ok(api.post(metalake.children(), body))["catalog"]
    assert catalog["name"] == name
    assert catalog["type"] == "relational"
    assert catalog["provider"] == "memory"
    assert catalog["comment"] == "c"
    assert catalog["properties"] == {"comment": "x", "in-use": "true"}
    assert catalog["audit"]["creator"] == "anonymous"
    assert "createTime" in catalog["audit"]


def test_load_catalog_returns_what_was_created(api, catalog):
    loaded = api.load(catalog)
    assert (loaded["name"], loaded["type"], loaded["provider"]) == (catalog.name, "relational", "memory")
    assert loaded["comment"] == "a catalog"
    assert loaded["properties"]["in-use"] == "true"
    assert loaded["audit"]


def test_create_duplicate_catalog_is_409_already_exists(api, catalog):
    body = {"name": catalog.name, "type": "relational", "provider": "memory"}
    error(api.post(catalog.parent.children(), body), 409, 1004, "CatalogAlreadyExistsException")


def test_catalog_names_are_case_sensitive(api, metalake):
    suffix = fresh("")
    api.create_catalog(metalake, "Sales" + suffix)
    api.create_catalog(metalake, "sales" + suffix)
    assert sorted(api.names(metalake.children())) == sorted(["Sales" + suffix, "sales" + suffix])


def test_same_catalog_name_may_exist_in_two_metalakes(api, metalake):
    other = api.create_metalake()
    name = fresh("cat")
    api.create_catalog(metalake, name)
    api.create_catalog(other, name)
    assert api.names(other.children()) == [name]


def test_create_catalog_in_missing_metalake_is_404(api):
    body = {"name": "c", "type": "relational", "provider": "memory"}
    error(api.post(f"/api/metalakes/{fresh('ghost')}/catalogs", body), 404, 1003, "NoSuchMetalakeException")


def test_load_of_missing_catalog_is_404(api, metalake):
    error(api.get(metalake.child(fresh("ghost")).path), 404, 1003, "NoSuchCatalogException")


def test_load_catalog_of_missing_metalake_is_404_no_such_metalake(api):
    error(api.get(f"/api/metalakes/{fresh('ghost')}/catalogs/c"), 404, 1003, "NoSuchMetalakeException")


def test_unsupported_catalog_type_is_405_and_creates_nothing(api, metalake):
    body = {"name": fresh("cat"), "type": "fileset", "provider": "memory"}
    error(api.post(metalake.children(), body), 405, 1006, "UnsupportedOperationException")
    assert api.names(metalake.children()) == []


def test_unknown_catalog_type_is_400_naming_the_field(api, metalake):
    body = {"name": fresh("cat"), "type": "spreadsheet", "provider": "memory"}
    bad_request(api.post(metalake.children(), body), in_message="type")
    assert api.names(metalake.children()) == []


def test_unknown_catalog_provider_is_400_naming_it(api, metalake):
    body = {"name": fresh("cat"), "type": "relational", "provider": "no-such-provider"}
    bad_request(api.post(metalake.children(), body), in_message="no-such-provider")
    assert api.names(metalake.children()) == []


@pytest.mark.parametrize("missing", ["name", "type", "provider"])
def test_create_catalog_without_a_required_field_is_400_naming_it(api, metalake, missing):
    body = {"name": fresh("cat"), "type": "relational", "provider": "memory"}
    del body[missing]
    bad_request(api.post(metalake.children(), body), in_message=missing)
    assert api.names(metalake.children()) == []


# ------------------------------------------------------------------ list


def test_list_catalogs_returns_identifiers_with_metalake_namespace(api, metalake):
    names = sorted(api.create_catalog(metalake).name for _ in range(3))
    body = ok(api.get(metalake.children()))
    assert set(body) == {"code", "identifiers"}
    assert body["identifiers"] == [{"namespace": [metalake.name], "name": n} for n in names]


@pytest.mark.parametrize("details", ["true", "True"])
def test_list_catalogs_with_details_returns_full_catalogs(api, catalog, details):
    body = ok(api.get(f"{catalog.parent.children()}?details={details}"))
    assert set(body) == {"code", "catalogs"}
    [listed] = body["catalogs"]
    assert listed["name"] == catalog.name
    assert listed["type"] == "relational"
    assert listed["provider"] == "memory"
    assert listed["properties"]["in-use"] == "true"
    assert listed["audit"]["creator"] == "anonymous"


@pytest.mark.parametrize("details", ["false", "False"])
def test_list_catalogs_with_details_false_returns_identifiers(api, catalog, details):
    body = ok(api.get(f"{catalog.parent.children()}?details={details}"))
    assert body["identifiers"] == [{"namespace": [catalog.levels[0]], "name": catalog.name}]


def test_list_catalogs_of_missing_metalake_is_404(api):
    error(api.get(f"/api/metalakes/{fresh('ghost')}/catalogs"), 404, 1003, "NoSuchMetalakeException")


# ------------------------------------------------------------------ alter (every @type)


def test_rename_catalog_moves_it_and_its_schemas(api, catalog, schema):
    new = catalog.sibling(fresh("renamed"))
    altered = api.altered(catalog, {"@type": "rename", "newName": new.name})
    assert altered["name"] == new.name
    assert altered["type"] == "relational"
    assert altered["audit"]["lastModifier"] == "anonymous"
    error(api.get(catalog.path), 404, 1003, "NoSuchCatalogException")
    assert api.names(new.children()) == [schema.name]


def test_rename_catalog_onto_an_existing_name_is_409_and_changes_nothing(api, metalake, catalog):
    other = api.create_catalog(metalake)
    error(api.alter(catalog, {"@type": "rename", "newName": other.name}), 409, 1004,
          "CatalogAlreadyExistsException")
    assert api.load(catalog)["name"] == catalog.name


def test_update_catalog_comment(api, catalog):
    assert api.altered(catalog, {"@type": "updateComment", "newComment": "new"})["comment"] == "new"
    assert api.load(catalog)["comment"] == "new"
    assert api.altered(catalog, {"@type": "updateComment", "newComment": None})["comment"] is None


def test_set_and_remove_catalog_property(api, catalog):
    added = api.altered(catalog, {"@type": "setProperty", "property": "comment", "value": "v1"})
    assert added["properties"] == {"comment": "v1", "in-use": "true"}
    removed = api.altered(catalog, {"@type": "removeProperty", "property": "comment"})
    assert removed["properties"] == {"in-use": "true"}
    assert api.load(catalog)["properties"] == {"in-use": "true"}


def test_alter_of_missing_catalog_is_404(api, metalake):
    response = api.alter(metalake.child(fresh("ghost")), {"@type": "updateComment", "newComment": "x"})
    error(response, 404, 1003, "NoSuchCatalogException")


def test_catalog_rejects_a_schema_only_or_table_only_update_type(api, catalog):
    bad_request(api.alter(catalog, {"@type": "addColumn", "fieldName": ["a"], "type": "integer"}),
                in_message="addColumn")


# ------------------------------------------------------------------ enable / disable


def test_disable_catalog_shows_in_use_false_and_blocks_schema_calls(api, catalog, schema):
    assert ok(api.patch(catalog.path, {"inUse": False})) == {"code": 0}
    assert api.load(catalog)["properties"]["in-use"] == "false"
    error(api.get(catalog.children()), 409, 1009, "CatalogNotInUseException")
    error(api.get(schema.path), 409, 1009, "CatalogNotInUseException")
    error(api.alter(catalog, {"@type": "updateComment", "newComment": "x"}), 409, 1009,
          "CatalogNotInUseException")
    api.set_in_use(catalog, True)
    assert api.names(catalog.children()) == [schema.name]


def test_enable_of_missing_catalog_is_404(api, metalake):
    error(api.patch(metalake.child(fresh("ghost")).path, {"inUse": True}), 404, 1003, "NoSuchCatalogException")


# ------------------------------------------------------------------ drop


def test_drop_of_enabled_catalog_without_force_is_409_in_use(api, catalog):
    error(api.delete(catalog.path), 409, 1010, "CatalogInUseException")
    assert api.load(catalog)["name"] == catalog.name


def test_drop_of_disabled_empty_catalog_returns_dropped_true(api, catalog):
    api.set_in_use(catalog, False)
    assert ok(api.delete(catalog.path)) == {"code": 0, "dropped": True}
    error(api.get(catalog.path), 404, 1003, "NoSuchCatalogException")


def test_drop_of_disabled_catalog_with_schemas_is_409_non_empty(api, catalog, schema):
    api.set_in_use(catalog, False)
    error(api.delete(catalog.path), 409, 1005, "NonEmptyCatalogException")
    api.set_in_use(catalog, True)
    assert api.names(catalog.children()) == [schema.name]


@pytest.mark.parametrize("force", ["true", "True"])
def test_force_drop_of_enabled_catalog_drops_its_schemas_and_tables(api, table, force):
    catalog = table.parent.parent
    assert ok(api.delete(f"{catalog.path}?force={force}"))["dropped"] is True
    error(api.get(catalog.path), 404, 1003, "NoSuchCatalogException")
    api.create_catalog(catalog.parent, catalog.name)
    assert api.names(catalog.children()) == []


def test_drop_of_missing_catalog_returns_dropped_false(api, metalake):
    assert ok(api.delete(metalake.child(fresh("ghost")).path)) == {"code": 0, "dropped": False}


def test_drop_of_catalog_in_missing_metalake_returns_dropped_false(api):
    assert ok(api.delete(f"/api/metalakes/{fresh('ghost')}/catalogs/c")) == {"code": 0, "dropped": False}


def test_drop_catalog_with_garbage_force_is_400(api, catalog):
    bad_request(api.delete(f"{catalog.path}?force=1x"), in_message="force")
    assert api.load(catalog)["name"] == catalog.name


# ------------------------------------------------------------------ testConnection (per catalog)


def test_test_connection_without_body_answers_code_zero(api, catalog):
    # the client sends Content-Type: application/json with Content-Length: 0
    response = api.raw("POST", f"{catalog.path}/testConnection", b"")
    assert ok(response) == {"code": 0}


def test_test_connection_with_changes_tests_the_changed_definition(api, catalog):
    body = {"updates": [{"@type": "setProperty", "property": "comment", "value": "x"}]}
    assert ok(api.post(f"{catalog.path}/testConnection", body)) == {"code": 0}
    assert "comment" not in api.load(catalog)["properties"]


def test_test_connection_of_missing_catalog_answers_200_with_an_error_body(api, metalake):
    response = api.raw("POST", f"{metalake.child(fresh('ghost')).path}/testConnection", b"")
    assert response.status_code == 200
    body = response.get_json()
    assert (body["code"], body["type"]) == (1003, "NoSuchCatalogException")
    assert body["message"]


def test_test_connection_with_a_bad_property_answers_200_with_code_1001(api, catalog):
    body = {"updates": [{"@type": "setProperty", "property": "in-use", "value": "false"}]}  # reserved
    response = api.post(f"{catalog.path}/testConnection", body)
    assert response.status_code == 200
    assert (response.get_json()["code"], response.get_json()["type"]) == (1001, "IllegalArgumentException")


def test_test_connection_with_malformed_body_answers_200_with_code_1001(api, catalog):
    response = api.raw("POST", f"{catalog.path}/testConnection", b"{not json")
    assert response.status_code == 200
    assert (response.get_json()["code"], response.get_json()["type"]) == (1001, "IllegalArgumentException")
