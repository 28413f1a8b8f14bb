"""Metalake responses as Gravitino's MetalakeManager gives them: create and alter answer with the stored
properties (no `in-use` until an enable or disable stored it), load and list add `in-use`."""

from __future__ import annotations

from tests.api.helpers import Ref, fresh, ok


def test_create_answers_without_in_use_and_load_and_list_add_it(api):
    name = fresh("lake")
    created = ok(api.post("/api/metalakes", {"name": name, "properties": {"k": "v"}}))
    assert created["metalake"]["properties"] == {"k": "v"}
    assert api.load(Ref((name,)))["properties"] == {"k": "v", "in-use": "true"}
    listed = next(m for m in ok(api.get("/api/metalakes"))["metalakes"] if m["name"] == name)
    assert listed["properties"] == {"k": "v", "in-use": "true"}


def test_alter_answers_with_the_stored_properties_only(api):
    metalake = api.create_metalake(properties={"k": "v"})
    altered = api.altered(metalake, {"@type": "setProperty", "property": "k2", "value": "v2"})
    assert altered["properties"] == {"k": "v", "k2": "v2"}


def test_once_a_disable_and_enable_stored_it_alter_answers_with_in_use(api):
    metalake = api.create_metalake(properties={"k": "v"})
    api.set_in_use(metalake, False)
    api.set_in_use(metalake, True)
    altered = api.altered(metalake, {"@type": "updateComment", "newComment": "c"})
    assert altered["properties"] == {"k": "v", "in-use": "true"}
    assert api.load(metalake)["properties"] == {"k": "v", "in-use": "true"}


def test_in_use_on_load_follows_the_enabled_state(api):
    metalake = api.create_metalake()
    api.set_in_use(metalake, False)
    assert api.load(metalake)["properties"]["in-use"] == "false"


def test_enabling_an_enabled_metalake_writes_nothing(api):
    metalake = api.create_metalake()
    before = api.load(metalake)["audit"]
    api.set_in_use(metalake, True)
    assert api.load(metalake)["audit"] == before  # no lastModifier/Time: nothing was stored
    assert api.altered(metalake)["properties"] == {}  # and in-use was not stored either
