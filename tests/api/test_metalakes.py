"""Metalake endpoints (gravitino-api.md §1.2 rows 1-7), the version endpoint and CLOSE /."""

from __future__ import annotations

import re

import pytest

from tests.api.helpers import error, fresh, ok

# ------------------------------------------------------------------ version and CLOSE


def test_version_reports_a_version_the_official_client_accepts(api):
    version = ok(api.get("/api/version"))["version"]
    assert set(version) >= {"version", "compileDate", "gitCommit"}
    assert all(isinstance(version[k], str) for k in ("version", "compileDate", "gitCommit"))
    major, minor = map(int, re.match(r"^(\d+)\.(\d+)\.(\d+)", version["version"]).groups()[:2])
    assert (major, minor) >= (1, 3)


def test_close_on_root_answers_success_like_the_client_expects(client):
    response = client.open("/", method="CLOSE")
    assert ok(response) == {"code": 0}


# ------------------------------------------------------------------ create / load / list


def test_create_metalake_returns_it_with_audit_and_only_the_stored_properties(api):
    name = fresh("lake")
    body = ok(api.post("/api/metalakes", {"name": name, "comment": "sales data", "properties": {"k": "v"}}))
    metalake = body["metalake"]
    assert metalake["name"] == name
    assert metalake["comment"] == "sales data"
    assert metalake["properties"] == {"k": "v"}  # no in-use: Gravitino adds it on load and list only
    assert metalake["audit"]["creator"] == "anonymous"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", metalake["audit"]["createTime"])


def test_create_metalake_without_comment_or_properties_defaults_them(api):
    name = fresh("lake")
    metalake = ok(api.post("/api/metalakes", {"name": name}))["metalake"]
    assert metalake["comment"] is None
    assert metalake["properties"] == {}


def test_create_metalake_accepts_null_properties_as_sent_by_the_client(api):
    name = fresh("lake")
    metalake = ok(api.post("/api/metalakes", {"name": name, "comment": None, "properties": None}))["metalake"]
    assert metalake["properties"] == {}


def test_load_metalake_returns_what_was_created(api, metalake):
    loaded = api.load(metalake)
    assert loaded["name"] == metalake.name
    assert loaded["comment"] == "a lake"
    assert loaded["properties"] == {"owner": "tests", "in-use": "true"}
    assert loaded["audit"]["creator"] == "anonymous"


def test_list_metalakes_returns_full_objects_sorted_by_name(api):
    names = sorted(api.create_metalake(fresh(prefix)).name for prefix in ("b", "a", "c"))
    metalakes = ok(api.get("/api/metalakes"))["metalakes"]
    assert [m["name"] for m in metalakes] == names
    assert all(m["audit"] and m["properties"]["in-use"] == "true" for m in metalakes)


def test_list_metalakes_is_empty_on_a_fresh_server(api):
    assert ok(api.get("/api/metalakes")) == {"code": 0, "metalakes": []}


def test_metalake_names_are_case_sensitive(api):
    suffix = fresh("")
    upper = api.create_metalake("Sales" + suffix)
    lower = api.create_metalake("sales" + suffix)
    api.alter(upper, {"@type": "updateComment", "newComment": "upper"})
    assert api.load(upper)["comment"] == "upper"
    assert api.load(lower)["comment"] is None


def test_metalake_name_with_space_or_non_ascii_letters_is_refused_by_gravitinos_rule(api):
    for name in (fresh("lake x"), fresh("lakeü")):
        error(api.post("/api/metalakes", {"name": name}), 400, 1001, "IllegalArgumentException",
              in_message="is illegal")


# ------------------------------------------------------------------ alter (every @type)


def test_rename_metalake_moves_it_to_the_new_name(api, metalake):
    new_name = fresh("renamed")
    altered = api.altered(metalake, {"@type": "rename", "newName": new_name})
    assert altered["name"] == new_name
    assert altered["audit"]["lastModifier"] == "anonymous"
    assert "lastModifiedTime" in altered["audit"]
    error(api.get(metalake.path), 404, 1003, "NoSuchMetalakeException")
    assert api.load(metalake.sibling(new_name))["comment"] == "a lake"


def test_rename_metalake_keeps_its_catalogs(api, metalake, catalog):
    new = metalake.sibling(fresh("renamed"))
    api.altered(metalake, {"@type": "rename", "newName": new.name})
    assert api.names(new.children()) == [catalog.name]


def test_update_metalake_comment_replaces_it_and_null_clears_it(api, metalake):
    assert api.altered(metalake, {"@type": "updateComment", "newComment": "new"})["comment"] == "new"
    assert api.altered(metalake, {"@type": "updateComment", "newComment": None})["comment"] is None


def test_set_metalake_property_adds_or_overwrites(api, metalake):
    altered = api.altered(
        metalake,
        {"@type": "setProperty", "property": "owner", "value": "me"},
        {"@type": "setProperty", "property": "team", "value": "data"},
    )
    assert altered["properties"] == {"owner": "me", "team": "data"}
    assert api.load(metalake)["properties"] == {**altered["properties"], "in-use": "true"}


def test_remove_metalake_property_deletes_it_and_missing_key_is_a_no_op(api, metalake):
    altered = api.altered(
        metalake,
        {"@type": "removeProperty", "property": "owner"},
        {"@type": "removeProperty", "property": "never-set"},
    )
    assert altered["properties"] == {}


def test_metalake_updates_apply_in_list_order(api, metalake):
    altered = api.altered(
        metalake,
        {"@type": "setProperty", "property": "x", "value": "1"},
        {"@type": "setProperty", "property": "x", "value": "2"},
        {"@type": "updateComment", "newComment": "first"},
        {"@type": "updateComment", "newComment": "second"},
    )
    assert altered["properties"]["x"] == "2"
    assert altered["comment"] == "second"


def test_empty_metalake_update_list_is_accepted_and_changes_nothing(api, metalake):
    before = api.load(metalake)
    api.altered(metalake)
    assert api.load(metalake)["properties"] == before["properties"]


def test_rename_metalake_onto_an_existing_name_is_409_and_changes_nothing(api, metalake):
    other = api.create_metalake()
    error(api.alter(metalake, {"@type": "rename", "newName": other.name}), 409, 1004,
          "MetalakeAlreadyExistsException")
    assert api.load(metalake)["name"] == metalake.name


def test_alter_of_missing_metalake_is_404(api):
    response = api.alter(api.create_metalake().sibling(fresh("ghost")), {"@type": "updateComment", "newComment": "x"})
    error(response, 404, 1003, "NoSuchMetalakeException")


# ------------------------------------------------------------------ enable / disable (PATCH)


def test_disable_metalake_shows_in_use_false_and_enable_restores_it(api, metalake):
    assert ok(api.patch(metalake.path, {"inUse": False})) == {"code": 0}
    assert api.load(metalake)["properties"]["in-use"] == "false"
    assert ok(api.patch(metalake.path, {"inUse": True})) == {"code": 0}
    assert api.load(metalake)["properties"]["in-use"] == "true"


def test_alter_of_disabled_metalake_is_409_not_in_use(api, metalake):
    api.set_in_use(metalake, False)
    response = api.alter(metalake, {"@type": "updateComment", "newComment": "x"})
    error(response, 409, 1009, "MetalakeNotInUseException")
    assert api.load(metalake)["comment"] == "a lake"


def test_catalog_calls_under_a_disabled_metalake_are_409_not_in_use(api, metalake, catalog):
    api.set_in_use(metalake, False)
    error(api.get(metalake.children()), 409, 1009, "MetalakeNotInUseException")
    error(api.get(catalog.path), 409, 1009, "MetalakeNotInUseException")
    response = api.post(metalake.children(), {"name": fresh("c"), "type": "relational", "provider": "memory"})
    error(response, 409, 1009, "MetalakeNotInUseException")


def test_enable_of_missing_metalake_is_404(api):
    error(api.patch(f"/api/metalakes/{fresh('ghost')}", {"inUse": True}), 404, 1003, "NoSuchMetalakeException")


def test_set_in_use_without_body_is_400(api, metalake):
    error(api.patch(metalake.path), 400, 1001, "IllegalArgumentException")
    assert api.load(metalake)["properties"]["in-use"] == "true"


# ------------------------------------------------------------------ drop


def test_drop_of_enabled_metalake_without_force_is_409_in_use(api, metalake):
    error(api.delete(metalake.path), 409, 1010, "MetalakeInUseException")
    assert api.load(metalake)["name"] == metalake.name


def test_drop_of_disabled_empty_metalake_returns_dropped_true(api, metalake):
    api.set_in_use(metalake, False)
    assert ok(api.delete(metalake.path)) == {"code": 0, "dropped": True}
    error(api.get(metalake.path), 404, 1003, "NoSuchMetalakeException")


def test_drop_of_disabled_metalake_with_catalogs_is_409_non_empty(api, metalake, catalog):
    api.set_in_use(metalake, False)
    error(api.delete(metalake.path), 409, 1005, "NonEmptyMetalakeException")
    api.set_in_use(metalake, True)
    assert api.names(metalake.children()) == [catalog.name]


@pytest.mark.parametrize("force", ["true", "True", "TRUE"])
def test_force_drop_of_enabled_metalake_drops_it_and_everything_under_it(api, table, force):
    metalake = table.parent.parent.parent
    assert ok(api.delete(f"{metalake.path}?force={force}"))["dropped"] is True
    error(api.get(metalake.path), 404, 1003, "NoSuchMetalakeException")
    api.create_metalake(metalake.name)
    assert api.names(metalake.children()) == []


@pytest.mark.parametrize("force", ["false", "False"])
def test_explicit_force_false_behaves_like_no_force(api, metalake, force):
    error(api.delete(f"{metalake.path}?force={force}"), 409, 1010, "MetalakeInUseException")


def test_drop_of_missing_metalake_returns_dropped_false(api):
    assert ok(api.delete(f"/api/metalakes/{fresh('ghost')}")) == {"code": 0, "dropped": False}


def test_drop_with_garbage_force_value_is_400_and_drops_nothing(api, metalake):
    error(api.delete(f"{metalake.path}?force=yes please"), 400, 1001, "IllegalArgumentException",
          in_message="force")
    assert api.load(metalake)["name"] == metalake.name
