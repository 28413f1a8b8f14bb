"""Tags through the official client: the metalake's tags (create_tag, list_tags, get_tag, alter_tag,
delete_tag), associations with catalogs, schemas, tables and columns (supports_tags()), inherited
tags, and the objects of a tag, on every connector."""

from __future__ import annotations

import pytest
from gravitino import Catalog, GravitinoClient, NameIdentifier
from gravitino.api.metadata_object import MetadataObject
from gravitino.api.rel.column import Column
from gravitino.api.rel.table_change import TableChange
from gravitino.api.rel.types.types import Types
from gravitino.api.tag.tag_change import TagChange
from gravitino.exceptions.base import (
    NoSuchTagException,
    TagAlreadyAssociatedException,
    TagAlreadyExistsException,
)

from tests.conformance.conftest import new_name


def test_a_tag_is_created_listed_altered_and_deleted(client: GravitinoClient) -> None:
    name = new_name("tag")
    created = client.create_tag(name, "a tag", {"level": "1"})
    assert (created.name(), created.comment(), created.properties()) == (name, "a tag", {"level": "1"})
    assert created.audit_info().creator()
    assert name in client.list_tags()
    assert [t.name() for t in client.list_tags_info() if t.name() == name] == [name]
    assert client.get_tag(name).comment() == "a tag"
    with pytest.raises(TagAlreadyExistsException):
        client.create_tag(name, None, {})

    renamed = new_name("renamed")
    altered = client.alter_tag(name, TagChange.rename(renamed), TagChange.update_comment("changed"),
                               TagChange.set_property("owner", "me"), TagChange.remove_property("level"))
    assert (altered.name(), altered.comment(), altered.properties()) == (renamed, "changed", {"owner": "me"})
    with pytest.raises(NoSuchTagException):
        client.get_tag(name)
    assert client.delete_tag(renamed) is True
    assert client.delete_tag(renamed) is False


def test_every_object_kind_is_tagged_and_inherits_its_parents_tags(client: GravitinoClient, catalog: Catalog,
                                                                   schema: str) -> None:
    on_catalog, on_schema, on_table, on_column = (client.create_tag(new_name(k), k, {}).name()
                                                  for k in ("catalog", "schema", "table", "column"))
    table = catalog.as_table_catalog().create_table(
        NameIdentifier.of(schema, new_name("tbl")),
        [Column.of("id", Types.IntegerType.get()), Column.of("name", Types.StringType.get())])
    catalog.supports_tags().associate_tags([on_catalog], [])
    catalog.as_schemas().load_schema(schema).supports_tags().associate_tags([on_schema], [])
    assert table.supports_tags().associate_tags([on_table], []) == [on_table]
    column = {c.name(): c for c in table.columns()}["name"]
    assert column.supports_tags().associate_tags([on_column], []) == [on_column]

    assert set(column.supports_tags().list_tags()) == {on_column, on_table, on_schema, on_catalog}
    inherited = {t.name(): t.inherited() for t in column.supports_tags().list_tags_info()}
    assert inherited == {on_column: False, on_table: True, on_schema: True, on_catalog: True}
    assert column.supports_tags().get_tag(on_catalog).inherited() is True
    assert table.supports_tags().get_tag(on_table).inherited() is False
    with pytest.raises(NoSuchTagException):
        catalog.supports_tags().get_tag(on_table)
    with pytest.raises(TagAlreadyAssociatedException):
        table.supports_tags().associate_tags([on_table], [])

    objects = client.get_tag(on_column).associated_objects().objects()
    assert [(o.type(), o.name(), o.parent()) for o in objects] == [
        (MetadataObject.Type.COLUMN, "name", f"{catalog.name()}.{schema}.{table.name()}")]
    assert table.supports_tags().associate_tags([], [on_table]) == []
    assert column.supports_tags().associate_tags([], [on_column]) == []
    assert set(column.supports_tags().list_tags()) == {on_schema, on_catalog}
    catalog.supports_tags().associate_tags([], [on_catalog])


def test_a_tagged_column_keeps_its_tag_through_a_rename_and_loses_it_when_dropped(
        client: GravitinoClient, catalog: Catalog, schema: str) -> None:
    tag = client.create_tag(new_name("tag"), None, {}).name()
    tables = catalog.as_table_catalog()
    ident = NameIdentifier.of(schema, new_name("tbl"))
    table = tables.create_table(ident, [Column.of("id", Types.IntegerType.get()),
                                        Column.of("name", Types.StringType.get())])
    {c.name(): c for c in table.columns()}["name"].supports_tags().associate_tags([tag], [])
    table.supports_tags().associate_tags([tag], [])
    renamed = tables.alter_table(ident, TableChange.rename_column(["name"], "label"))
    assert {c.name(): c for c in renamed.columns()}["label"].supports_tags().list_tags() == [tag]
    tables.alter_table(ident, TableChange.delete_column(["label"], False))
    objects = client.get_tag(tag).associated_objects().objects()
    assert [(o.type(), o.name()) for o in objects] == [(MetadataObject.Type.TABLE, ident.name())]
    assert tables.drop_table(ident) is True
    assert client.get_tag(tag).associated_objects().objects() == []
