"""The smaller points of docs/compatibility.md §3, each as Gravitino 1.3 answers it."""

from __future__ import annotations

import pytest

from tests.api.helpers import bad_request, error, fresh, ok


@pytest.fixture
def catalog(api):
    return api.create_catalog(api.create_metalake())


# ------------------------------------------------------------------ parentSchema


def test_listing_schemas_under_a_parent_schema_is_unsupported(api, catalog):
    api.create_schema(catalog, "parent")
    error(api.get(f"{catalog.children()}?parentSchema=parent"), 405, 1006, "UnsupportedOperationException",
          in_message="does not support hierarchical schemas")


@pytest.mark.parametrize("parent", ["a::b", ":a", "a:"])
def test_a_parent_schema_with_an_empty_segment_is_a_bad_request(api, catalog, parent):
    bad_request(api.get(f"{catalog.children()}?parentSchema={parent}"), in_message="empty segment")


@pytest.mark.parametrize("parent", ["", "   "])
def test_a_blank_parent_schema_lists_the_catalogs_schemas(api, catalog, parent):
    api.create_schema(catalog, "only")
    assert api.names(f"{catalog.children()}?parentSchema={parent}") == ["only"]


def test_parent_schema_of_a_missing_catalog_is_404_first(api, catalog):
    error(api.get(f"{catalog.sibling('ghost').children()}?parentSchema=p"), 404, 1003, "NoSuchCatalogException")


# ------------------------------------------------------------------ drop under a disabled metalake


def test_dropping_a_catalog_under_a_disabled_metalake_is_409_metalake_not_in_use(api, catalog):
    metalake = catalog.parent
    api.set_in_use(catalog, False)
    api.set_in_use(metalake, False)
    error(api.delete(catalog.path), 409, 1009, "MetalakeNotInUseException")
    error(api.delete(catalog.path + "?force=true"), 409, 1009, "MetalakeNotInUseException")
    api.set_in_use(metalake, True)
    assert ok(api.delete(catalog.path))["dropped"] is True


def test_dropping_a_missing_catalog_under_a_disabled_metalake_is_not_an_error(api, catalog):
    api.set_in_use(catalog.parent, False)
    assert ok(api.delete(catalog.sibling("ghost").path))["dropped"] is False


# ------------------------------------------------------------------ audit of a new catalog


def test_a_new_catalog_carries_last_modifier_and_time_equal_to_its_creation(api):
    metalake = api.create_metalake()
    created = ok(api.post(metalake.children(), {"name": fresh("c"), "type": "relational", "provider": "memory"}))
    audit = created["catalog"]["audit"]
    assert (audit["lastModifier"], audit["lastModifiedTime"]) == (audit["creator"], audit["createTime"])


# ------------------------------------------------------------------ testConnection before a create


def probe(api, metalake, **body):
    request = {"name": fresh("c"), "type": "relational", "provider": "memory", **body}
    response = api.post(f"{metalake.children()}/testConnection", request)
    return response.status_code, response.get_json()


def test_test_connection_of_a_catalog_to_create_answers_code_0_and_creates_nothing(api):
    metalake = api.create_metalake()
    assert probe(api, metalake, name="would_be") == (200, {"code": 0})
    assert api.get(metalake.child("would_be").path).status_code == 404


@pytest.mark.parametrize("body, code, type_name", [
    ({"provider": "sqlite", "properties": {}}, 1001, "IllegalArgumentException"),
    ({"provider": "nope"}, 1001, "IllegalArgumentException"),
    ({"name": "bad name"}, 1001, "IllegalArgumentException"),
    ({"provider": "hive", "properties": {"metastore.uris": "http://127.0.0.1:9"}}, 1007, "ConnectionFailedException"),
])
def test_test_connection_answers_http_200_with_the_error_of_a_failed_check(api, body, code, type_name):
    status, answer = probe(api, api.create_metalake(), **body)
    assert (status, answer["code"], answer["type"]) == (200, code, type_name)


def test_test_connection_of_an_existing_name_or_under_a_disabled_metalake(api, catalog):
    metalake = catalog.parent
    assert probe(api, metalake, name=catalog.name)[1]["type"] == "CatalogAlreadyExistsException"
    api.set_in_use(metalake, False)
    assert probe(api, metalake)[1]["type"] == "MetalakeNotInUseException"
    assert probe(api, metalake.sibling("ghost"))[1]["type"] == "NoSuchMetalakeException"


def test_test_connection_of_an_unsupported_type_is_a_405(api):
    error(api.post(f"{api.create_metalake().children()}/testConnection",
                   {"name": "f", "type": "fileset", "provider": "fileset"}), 405, 1006, "UnsupportedOperationException")


def test_test_connection_with_a_body_that_is_not_json_is_a_400(api):
    bad_request(api.raw("POST", f"{api.create_metalake().children()}/testConnection", b"{nope"))


# ------------------------------------------------------------------ a catalog without a provider


@pytest.mark.parametrize("kind", ["fileset", "model", "FILESET"])
def test_a_managed_catalog_type_without_provider_gets_the_error_of_its_type(api, kind):
    metalake = api.create_metalake()
    for provider in (None, "", kind.lower(), "hadoop"):
        body = {"name": fresh("c"), "type": kind, **({} if provider is None else {"provider": provider})}
        error(api.post(metalake.children(), body), 405, 1006, "UnsupportedOperationException",
              in_message=f"Catalog type {kind.lower()} is not supported")


def test_a_relational_catalog_without_provider_is_a_bad_request(api):
    bad_request(api.post(api.create_metalake().children(), {"name": "c", "type": "relational"}),
                in_message="Provider cannot be null for catalog type relational")
