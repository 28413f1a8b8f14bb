"""Schemas through `catalog.as_schemas()`."""

from __future__ import annotations

import pytest
from gravitino import Catalog, GravitinoClient, NameIdentifier, SchemaChange
from gravitino.api.rel.column import Column
from gravitino.api.rel.types.types import Types
from gravitino.exceptions.base import (
    IllegalArgumentException,
    NonEmptySchemaException,
    NoSuchCatalogException,
    NoSuchSchemaException,
    SchemaAlreadyExistsException,
    UnsupportedOperationException,
)

from tests.conformance.conftest import new_name, refuses


def test_schema_can_be_created_listed_loaded_and_found(catalog: Catalog) -> None:
    """With what the catalog keeps of a schema: Gravitino's JDBC catalogs refuse its properties (MySQL
    its comment too), with UnsupportedOperationException."""
    schemas = catalog.as_schemas()
    name = new_name("sch")
    provider = catalog.provider()
    comment = None if refuses(provider, "schema comment") else "my schema"
    properties = {} if refuses(provider, "schema properties") else {"owner": "me"}
    for refused, (c, p) in (("schema comment", ("my schema", {})), ("schema properties", (comment, {"owner": "me"}))):
        if refuses(provider, refused):
            with pytest.raises(UnsupportedOperationException):
                schemas.create_schema(name, c, p)
    created = schemas.create_schema(name, comment, properties)
    assert created.name() == name
    assert created.comment() == comment
    assert created.properties().get("owner") == properties.get("owner")
    assert created.audit_info().creator()

    assert name in schemas.list_schemas()
    loaded = schemas.load_schema(name)
    assert (loaded.name(), loaded.comment(), loaded.properties().get("owner")) == (name, comment, properties.get("owner"))
    assert schemas.schema_exists(name) is True
    assert schemas.schema_exists(new_name("missing")) is False


def test_creating_an_existing_schema_raises_already_exists(catalog: Catalog, schema: str) -> None:
    with pytest.raises(SchemaAlreadyExistsException):
        catalog.as_schemas().create_schema(schema, None, {})


def test_schema_properties_can_be_set_and_removed(catalog: Catalog) -> None:
    """A JDBC catalog's schema takes none at its create; gravimeta's store keeps those set later (Gravitino's
    JDBC catalogs refuse every schema alter: docs/engines.md)."""
    schemas = catalog.as_schemas()
    name = new_name("sch")
    initial = {"keep": "1", "drop": "2"}
    if refuses(catalog.provider(), "schema properties"):
        schemas.create_schema(name, None, {})
        schemas.alter_schema(name, SchemaChange.set_property("keep", "1"), SchemaChange.set_property("drop", "2"))
    else:
        schemas.create_schema(name, None, initial)
    altered = schemas.alter_schema(
        name, SchemaChange.set_property("added", "3"), SchemaChange.remove_property("drop")
    )
    assert altered.properties().get("keep") == "1"
    assert altered.properties().get("added") == "3"
    assert "drop" not in altered.properties()
    assert "drop" not in schemas.load_schema(name).properties()


def test_dropping_a_schema_with_tables_needs_cascade(catalog: Catalog, schema: str) -> None:
    schemas = catalog.as_schemas()
    catalog.as_table_catalog().create_table(
        NameIdentifier.of(schema, new_name("tbl")), [Column.of("id", Types.IntegerType.get())]
    )
    with pytest.raises(NonEmptySchemaException):
        schemas.drop_schema(schema, False)
    assert schemas.schema_exists(schema) is True
    assert schemas.drop_schema(schema, True) is True
    assert schemas.schema_exists(schema) is False
    assert schema not in schemas.list_schemas()


def test_an_empty_schema_is_dropped_without_cascade(catalog: Catalog, schema: str) -> None:
    assert catalog.as_schemas().drop_schema(schema, False) is True
    assert catalog.as_schemas().drop_schema(schema, False) is False


def test_missing_schemas_raise_no_such_schema(catalog: Catalog) -> None:
    schemas = catalog.as_schemas()
    missing = new_name("missing")
    with pytest.raises(NoSuchSchemaException):
        schemas.load_schema(missing)
    with pytest.raises(NoSuchSchemaException):
        schemas.alter_schema(missing, SchemaChange.set_property("k", "v"))
    assert schemas.drop_schema(missing, True) is False


def test_schemas_of_a_catalog_dropped_behind_the_clients_back_raise_no_such_catalog(
    client: GravitinoClient, catalog: Catalog
) -> None:
    assert client.drop_catalog(catalog.name(), force=True) is True
    with pytest.raises(NoSuchCatalogException):
        catalog.as_schemas().list_schemas()
    with pytest.raises(NoSuchCatalogException):
        catalog.as_schemas().create_schema(new_name("sch"), None, {})


def test_a_blank_schema_property_is_rejected_as_illegal_argument(catalog: Catalog, schema: str) -> None:
    with pytest.raises(IllegalArgumentException):
        catalog.as_schemas().alter_schema(schema, SchemaChange.set_property(" ", "v"))
