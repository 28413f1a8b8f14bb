"""Catalog lifecycle through GravitinoClient (type RELATIONAL; each test on the memory, sqlite and hive providers)."""

from __future__ import annotations

import pytest
from gravitino import Catalog, GravitinoClient
from gravitino.api.catalog_change import CatalogChange
from gravitino.exceptions.base import (
    CatalogAlreadyExistsException,
    CatalogInUseException,
    CatalogNotInUseException,
    IllegalArgumentException,
    NoSuchCatalogException,
)

from tests.conformance.conftest import OPTIONAL_PROPERTY, new_name


def test_catalog_can_be_created_listed_and_loaded(client: GravitinoClient) -> None:
    name = new_name("cat")
    created = client.create_catalog(name, Catalog.Type.RELATIONAL, "memory", "my catalog", {"comment": "x"})
    assert created.name() == name
    assert created.type() == Catalog.Type.RELATIONAL
    assert created.provider() == "memory"
    assert created.comment() == "my catalog"
    assert created.properties()["comment"] == "x"
    assert created.audit_info().creator()

    assert name in client.list_catalogs()
    infos = {c.name(): c for c in client.list_catalogs_info()}
    assert infos[name].provider() == "memory"
    assert infos[name].type() == Catalog.Type.RELATIONAL

    loaded = client.load_catalog(name)
    assert (loaded.name(), loaded.type(), loaded.provider()) == (name, Catalog.Type.RELATIONAL, "memory")
    assert loaded.comment() == "my catalog"


def test_creating_an_existing_catalog_raises_already_exists(client: GravitinoClient, catalog: Catalog):
    with pytest.raises(CatalogAlreadyExistsException):
        client.create_catalog(catalog.name(), Catalog.Type.RELATIONAL, "memory", None, {})


def test_creating_a_catalog_with_an_unknown_provider_raises_illegal_argument(client: GravitinoClient) -> None:
    with pytest.raises(IllegalArgumentException):
        client.create_catalog(new_name("cat"), Catalog.Type.RELATIONAL, "no-such-provider", None, {})


def test_catalog_can_be_renamed_recommented_and_its_properties_changed(
    client: GravitinoClient, catalog: Catalog
) -> None:
    renamed = new_name("cat_renamed")
    key, value = OPTIONAL_PROPERTY[catalog.provider()]
    altered = client.alter_catalog(
        catalog.name(),
        CatalogChange.rename(renamed),
        CatalogChange.update_comment("new comment"),
        CatalogChange.set_property(key, value),
    )
    assert altered.name() == renamed
    assert altered.comment() == "new comment"
    assert altered.properties()[key] == value

    altered = client.alter_catalog(renamed, CatalogChange.remove_property(key))
    assert key not in altered.properties()
    assert client.load_catalog(renamed).comment() == "new comment"
    assert catalog.name() not in client.list_catalogs()
    with pytest.raises(NoSuchCatalogException):
        client.load_catalog(catalog.name())


def test_renaming_a_catalog_onto_an_existing_one_raises_already_exists(
    client: GravitinoClient, catalog: Catalog
) -> None:
    other = client.create_catalog(new_name("cat"), Catalog.Type.RELATIONAL, "memory", None, {})
    with pytest.raises(CatalogAlreadyExistsException):
        client.alter_catalog(other.name(), CatalogChange.rename(catalog.name()))


def test_connection_test_of_a_memory_catalog_succeeds(client: GravitinoClient, catalog: Catalog) -> None:
    assert client.test_connection(catalog.name()) is None


def test_connection_test_of_a_missing_catalog_raises_no_such_catalog(client: GravitinoClient) -> None:
    with pytest.raises(NoSuchCatalogException):
        client.test_connection(new_name("missing"))


def test_an_enabled_catalog_is_only_dropped_with_force_or_after_disabling(
    client: GravitinoClient, catalog: Catalog
) -> None:
    name = catalog.name()
    with pytest.raises(CatalogInUseException):
        client.drop_catalog(name)

    client.disable_catalog(name)
    assert client.load_catalog(name).properties().get("in-use") == "false"
    with pytest.raises(CatalogNotInUseException):
        client.load_catalog(name).as_schemas().create_schema(new_name("sch"), None, {})
    client.enable_catalog(name)
    assert client.load_catalog(name).properties().get("in-use") == "true"

    client.disable_catalog(name)
    assert client.drop_catalog(name) is True
    assert name not in client.list_catalogs()


def test_force_drop_removes_an_enabled_catalog_with_schemas(client: GravitinoClient, catalog: Catalog):
    catalog.as_schemas().create_schema(new_name("sch"), None, {})
    assert client.drop_catalog(catalog.name(), force=True) is True
    with pytest.raises(NoSuchCatalogException):
        client.load_catalog(catalog.name())


def test_missing_catalogs_raise_no_such_catalog_and_drop_returns_false(client: GravitinoClient) -> None:
    missing = new_name("missing")
    with pytest.raises(NoSuchCatalogException):
        client.load_catalog(missing)
    with pytest.raises(NoSuchCatalogException):
        client.alter_catalog(missing, CatalogChange.update_comment("x"))
    assert client.drop_catalog(missing) is False
    assert client.drop_catalog(missing, force=True) is False
