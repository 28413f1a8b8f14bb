"""The official client's admin surface: version check and the metalake lifecycle."""

from __future__ import annotations

import re

import pytest
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient, MetalakeChange
from gravitino.exceptions.base import (
    MetalakeAlreadyExistsException,
    MetalakeInUseException,
    NoSuchMetalakeException,
    NotEmptyException,
)

from tests.conformance.conftest import new_name


def test_the_server_reports_a_version_the_client_accepts(admin: GravitinoAdminClient) -> None:
    version = admin.get_server_version()
    assert re.match(r"\d+\.\d+\.\d+", version.version())
    assert (version.major, version.minor) >= (1, 3)
    admin.check_version()  # raises if the client considers the server too old


def test_metalake_can_be_created_listed_and_loaded(admin: GravitinoAdminClient) -> None:
    name = new_name("ml")
    created = admin.create_metalake(name, "first comment", {"k1": "v1"})
    try:
        assert created.name() == name
        assert created.comment() == "first comment"
        assert created.properties()["k1"] == "v1"
        assert created.audit_info().creator()

        assert name in [m.name() for m in admin.list_metalakes()]
        loaded = admin.load_metalake(name)
        assert (loaded.name(), loaded.comment()) == (name, "first comment")
        assert loaded.properties()["k1"] == "v1"
    finally:
        assert admin.drop_metalake(name, force=True) is True


def test_creating_an_existing_metalake_raises_already_exists(admin: GravitinoAdminClient, metalake: str):
    with pytest.raises(MetalakeAlreadyExistsException):
        admin.create_metalake(metalake, None, {})


def test_metalake_can_be_renamed_recommented_and_its_properties_changed(admin: GravitinoAdminClient) -> None:
    name, renamed = new_name("ml"), new_name("ml_renamed")
    admin.create_metalake(name, "before", {"keep": "1", "drop": "2"})
    try:
        altered = admin.alter_metalake(
            name,
            MetalakeChange.rename(renamed),
            MetalakeChange.update_comment("after"),
            MetalakeChange.set_property("added", "3"),
            MetalakeChange.remove_property("drop"),
        )
        assert altered.name() == renamed
        assert altered.comment() == "after"
        props = altered.properties()
        assert (props.get("keep"), props.get("added")) == ("1", "3")
        assert "drop" not in props

        loaded = admin.load_metalake(renamed)
        assert loaded.comment() == "after"
        assert "drop" not in loaded.properties()
        with pytest.raises(NoSuchMetalakeException):
            admin.load_metalake(name)
    finally:
        admin.drop_metalake(name, force=True)
        admin.drop_metalake(renamed, force=True)


def test_renaming_a_metalake_onto_an_existing_one_raises_already_exists(admin: GravitinoAdminClient) -> None:
    first, second = new_name("ml"), new_name("ml")
    admin.create_metalake(first, None, {})
    admin.create_metalake(second, None, {})
    try:
        with pytest.raises(MetalakeAlreadyExistsException):
            admin.alter_metalake(first, MetalakeChange.rename(second))
    finally:
        admin.drop_metalake(first, force=True)
        admin.drop_metalake(second, force=True)


def test_an_enabled_metalake_is_only_dropped_with_force_or_after_disabling(admin: GravitinoAdminClient):
    name = new_name("ml")
    admin.create_metalake(name, None, {})
    with pytest.raises(MetalakeInUseException):
        admin.drop_metalake(name)
    admin.disable_metalake(name)
    assert admin.load_metalake(name).properties().get("in-use") == "false"
    admin.enable_metalake(name)
    assert admin.load_metalake(name).properties().get("in-use") == "true"
    admin.disable_metalake(name)
    assert admin.drop_metalake(name) is True
    with pytest.raises(NoSuchMetalakeException):
        admin.load_metalake(name)


def test_force_drop_removes_an_enabled_metalake_with_catalogs(admin: GravitinoAdminClient, uri: str) -> None:
    name = new_name("ml")
    admin.create_metalake(name, None, {})
    client = GravitinoClient(uri=uri, metalake_name=name)
    catalog = client.create_catalog(new_name("cat"), Catalog.Type.RELATIONAL, "memory", None, {})
    catalog.as_schemas().create_schema(new_name("sch"), None, {})
    client.close()

    assert admin.drop_metalake(name, force=True) is True
    assert name not in [m.name() for m in admin.list_metalakes()]
    with pytest.raises(NoSuchMetalakeException):
        GravitinoClient(uri=uri, metalake_name=name)


def test_missing_metalakes_raise_no_such_metalake_and_drop_returns_false(admin: GravitinoAdminClient) -> None:
    missing = new_name("missing")
    with pytest.raises(NoSuchMetalakeException):
        admin.load_metalake(missing)
    with pytest.raises(NoSuchMetalakeException):
        admin.alter_metalake(missing, MetalakeChange.update_comment("x"))
    assert admin.drop_metalake(missing) is False
    assert admin.drop_metalake(missing, force=True) is False


def test_a_client_for_a_missing_metalake_cannot_be_constructed(uri: str) -> None:
    with pytest.raises(NoSuchMetalakeException):
        GravitinoClient(uri=uri, metalake_name=new_name("missing"))


def test_closing_the_clients_does_not_raise(uri: str, metalake: str) -> None:
    GravitinoAdminClient(uri=uri).close()
    GravitinoClient(uri=uri, metalake_name=metalake).close()


def test_a_disabled_metalake_with_catalogs_is_only_dropped_with_force(admin: GravitinoAdminClient, uri: str):
    name = new_name("ml")
    admin.create_metalake(name, None, {})
    client = GravitinoClient(uri=uri, metalake_name=name)
    client.create_catalog(new_name("cat"), Catalog.Type.RELATIONAL, "memory", None, {})
    client.close()
    admin.disable_metalake(name)
    with pytest.raises(NotEmptyException):  # the Python client maps 1005 to the generic class
        admin.drop_metalake(name)
    assert admin.drop_metalake(name, force=True) is True
