"""Catalog properties follow Gravitino's rules (PropertiesMetadataHelpers, v1.3.0) per provider: the
declared keys carry required/immutable/reserved flags and value checks, any other key is stored as
given; an alter refuses immutable and reserved keys (and, stricter than Gravitino, the removal of a
required one)."""

from __future__ import annotations

import pytest

from tests.api.helpers import bad_request, fresh, ok


def create(api, metalake, provider: str, properties: dict[str, str]):
    body = {"name": fresh("cat"), "type": "relational", "provider": provider, "properties": properties}
    return api.post(metalake.children(), body), body["name"]


@pytest.fixture
def metalake(api):
    return api.create_metalake()


@pytest.fixture
def hive_uri(hive_stub) -> str:
    if hive_stub.process is None or hive_stub.process.poll() is not None:
        hive_stub.start()
    return hive_stub.uri


def test_undeclared_properties_are_stored_and_returned_as_given(api, metalake):
    response, name = create(api, metalake, "memory", {"location": "/tmp/x", "gravitino.bypass.k": "v", "k": ""})
    properties = ok(response)["catalog"]["properties"]
    assert properties == {"location": "/tmp/x", "gravitino.bypass.k": "v", "k": "", "in-use": "true"}
    assert api.load(metalake.child(name))["properties"] == properties


@pytest.mark.parametrize("key", ["in-use", "metalake-in-use", "gravitino.identifier"])
def test_reserved_properties_are_refused_on_create_and_nothing_is_stored(api, metalake, key):
    response, name = create(api, metalake, "memory", {key: "true"})
    bad_request(response, in_message="reserved and cannot be set")
    assert api.get(metalake.child(name).path).status_code == 404


def test_a_required_property_must_be_given(api, metalake):
    bad_request(create(api, metalake, "sqlite", {})[0], in_message="required and must be set: [path]")
    bad_request(create(api, metalake, "hive", {"uri": "x"})[0], in_message="[metastore.uris]")


@pytest.mark.parametrize("key, value", [
    ("client.pool-size", "many"), ("client.pool-size", "99999999999"), ("kerberos.check-interval-sec", "1.5"),
    ("cloud.name", "mars"), ("client.timeout-ms", "0"), ("metastore.uris", "thrift://h:9083"),
])
def test_declared_values_are_checked_on_create(api, metalake, hive_uri, key, value):
    response, _ = create(api, metalake, "hive", {"metastore.uris": hive_uri, key: value})
    bad_request(response, in_message=f"for property: '{key}'")


def test_declared_values_decode_as_gravitino_decodes_them(api, metalake, hive_uri):
    properties = {"metastore.uris": hive_uri, "cloud.name": "AwS", "impersonation-enable": "maybe",
                  "client.pool-size": "+3", "client.pool-cache.eviction-interval-ms": "-1"}
    ok(create(api, metalake, "hive", properties)[0])  # enums ignore case; Boolean.valueOf never fails


def test_alter_sets_and_removes_undeclared_and_mutable_properties(api, metalake, hive_uri):
    response, name = create(api, metalake, "hive", {"metastore.uris": hive_uri, "old": "1"})
    ok(response)
    catalog = metalake.child(name)
    altered = api.altered(catalog, {"@type": "setProperty", "property": "location", "value": "/data"},
                          {"@type": "removeProperty", "property": "old"},
                          {"@type": "setProperty", "property": "client.timeout-ms", "value": "7000"})
    assert altered["properties"] == {"metastore.uris": hive_uri, "location": "/data", "client.timeout-ms": "7000",
                                     "in-use": "true"}


@pytest.mark.parametrize("change, message", [
    ({"@type": "setProperty", "property": "path", "value": "other.db"}, "Property path is immutable or reserved"),
    ({"@type": "removeProperty", "property": "path"}, "cannot be deleted"),
    ({"@type": "setProperty", "property": "package", "value": "/opt/x"}, "Property package is immutable"),
    ({"@type": "setProperty", "property": "in-use", "value": "false"}, "Property in-use is immutable or reserved"),
    ({"@type": "setProperty", "property": "busy-timeout-ms", "value": "soon"}, "for property: 'busy-timeout-ms'"),
])
def test_alter_refuses_immutable_reserved_and_bad_values_and_changes_nothing(api, metalake, change, message):
    response, name = create(api, metalake, "sqlite", {"path": f"{fresh('f')}.db"})
    ok(response)
    catalog = metalake.child(name)
    before = api.load(catalog)
    bad_request(api.alter(catalog, {"@type": "updateComment", "newComment": "changed"}, change), in_message=message)
    assert api.load(catalog) == before


def test_alter_refuses_to_remove_a_required_property(api, metalake, hive_uri):
    response, name = create(api, metalake, "hive", {"metastore.uris": hive_uri})
    ok(response)
    bad_request(api.alter(metalake.child(name), {"@type": "removeProperty", "property": "metastore.uris"}),
                in_message="required and cannot be removed: [metastore.uris]")


def test_test_connection_with_changes_applies_the_alter_rules(api, metalake):
    response, name = create(api, metalake, "sqlite", {"path": f"{fresh('f')}.db"})
    ok(response)
    probe = api.post(f"{metalake.child(name).path}/testConnection",
                     {"updates": [{"@type": "setProperty", "property": "path", "value": "elsewhere.db"}]})
    assert probe.status_code == 200
    assert (probe.get_json()["code"], probe.get_json()["type"]) == (1001, "IllegalArgumentException")
    probe = api.post(f"{metalake.child(name).path}/testConnection",
                     {"updates": [{"@type": "setProperty", "property": "anything", "value": "goes"}]})
    assert probe.get_json() == {"code": 0}
