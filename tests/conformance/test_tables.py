"""Tables through `catalog.as_table_catalog()`; column types are compared with simple_string()."""

from __future__ import annotations

from decimal import Decimal

import pytest
from gravitino import Catalog, NameIdentifier
from gravitino.api.rel.column import Column
from gravitino.api.rel.expressions.literals.literals import Literals
from gravitino.api.rel.indexes.index import Index
from gravitino.api.rel.indexes.indexes import Indexes
from gravitino.api.rel.table import Table
from gravitino.api.rel.table_change import TableChange
from gravitino.api.rel.types.types import Types
from gravitino.exceptions.base import (
    IllegalArgumentException,
    NoSuchSchemaException,
    NoSuchTableException,
    TableAlreadyExistsException,
    UnsupportedOperationException,
)
from gravitino.namespace import Namespace

from tests.conformance.conftest import new_name, refuses

Position = TableChange.ColumnPosition


def _columns(provider: str) -> list[Column]:
    """The scenario's columns; a list column as the catalog keeps one (PostgreSQL: elements not null; MySQL
    has no lists)."""
    tags = [] if refuses(provider, "lists") else [Column.of(
        "tags", Types.ListType.of(Types.StringType.get(), not refuses(provider, "nullable list elements")), "labels")]
    return [
        Column.of("id", Types.IntegerType.get(), "primary key", nullable=False),
        Column.of("name", Types.VarCharType.of(32), None),
        Column.of(
            "price", Types.DecimalType.of(10, 2), "in euro",
            default_value=Literals.decimal_literal(Decimal("1.50")),
        ),
        *tags,
        Column.of("qty", Types.IntegerType.get(), None, default_value=Literals.integer_literal(0)),
    ]


def _keys(provider: str, table: str) -> tuple[str, str]:
    """The primary and unique key names: MySQL names every primary key PRIMARY, and PostgreSQL wants key
    names no other table of the schema has."""
    if provider == "jdbc-mysql":
        return "PRIMARY", "uk_name"
    if provider == "jdbc-postgresql":
        return f"pk_{table}", f"uk_{table}"
    return "pk_id", "uk_name"


def _properties(provider: str) -> dict[str, str]:
    return {} if refuses(provider, "table properties") else {"format": "parquet"}


def _create(catalog: Catalog, schema: str, name: str | None = None) -> tuple[NameIdentifier, Table]:
    ident = NameIdentifier.of(schema, name or new_name("tbl"))
    primary, unique = _keys(catalog.provider(), ident.name())
    table = catalog.as_table_catalog().create_table(
        ident,
        _columns(catalog.provider()),
        comment="a table",
        properties=_properties(catalog.provider()),
        indexes=[Indexes.primary(primary, [["id"]]), Indexes.unique(unique, [["name"]])],
    )
    return ident, table


def _types(table: Table) -> dict[str, str]:
    return {c.name(): c.data_type().simple_string() for c in table.columns()}


def _names(provider: str, *names: str) -> list[str]:
    return [n for n in names if not (n == "tags" and refuses(provider, "lists"))]


def test_table_is_created_with_its_columns_indexes_comment_and_properties(catalog: Catalog, schema: str):
    provider = catalog.provider()
    if refuses(provider, "table properties"):  # Gravitino's PostgreSQL catalog: "Properties are not supported yet"
        with pytest.raises(IllegalArgumentException):
            catalog.as_table_catalog().create_table(NameIdentifier.of(schema, new_name("tbl")), _columns(provider),
                                                    properties={"format": "parquet"})
    ident, created = _create(catalog, schema)
    primary, unique = _keys(provider, ident.name())
    for table in (created, catalog.as_table_catalog().load_table(ident)):
        assert table.name() == ident.name()
        assert table.comment() == "a table"
        assert table.properties().get("format") == _properties(provider).get("format")
        assert [c.name() for c in table.columns()] == _names(provider, "id", "name", "price", "tags", "qty")
        assert _types(table) == {name: kind for name, kind in {
            "id": "integer",
            "name": "varchar(32)",
            "price": "decimal(10,2)",
            "tags": "list<string, NOT NULL>" if refuses(provider, "nullable list elements") else "list<string>",
            "qty": "integer",
        }.items() if name in _names(provider, name)}
        columns = {c.name(): c for c in table.columns()}
        assert columns["id"].nullable() is False
        assert columns["id"].comment() == "primary key"
        assert columns["name"].nullable() is True
        assert columns["qty"].default_value().value() == "0"
        assert columns["qty"].default_value().data_type().simple_string() == "integer"
        assert columns["price"].default_value().value() == "1.50"
        assert columns["name"].default_value() == Column.DEFAULT_VALUE_NOT_SET
        indexes = {i.name(): i for i in table.index()}
        assert indexes[primary].type() == Index.IndexType.PRIMARY_KEY
        assert indexes[primary].field_names() == [["id"]]
        assert indexes[unique].type() == Index.IndexType.UNIQUE_KEY
        assert table.audit_info().creator()


def test_tables_are_listed_and_found(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    first, _ = _create(catalog, schema)
    second, _ = _create(catalog, schema)
    listed = tables.list_tables(Namespace.of(schema))
    assert sorted(i.name() for i in listed) == sorted([first.name(), second.name()])
    assert all(i.namespace() == Namespace.of(schema) for i in listed)
    assert tables.table_exists(first) is True
    assert tables.table_exists(NameIdentifier.of(schema, new_name("missing"))) is False


def test_creating_an_existing_table_raises_already_exists(catalog: Catalog, schema: str) -> None:
    ident, _ = _create(catalog, schema)
    with pytest.raises(TableAlreadyExistsException):
        _create(catalog, schema, ident.name())


def test_table_properties_and_comment_can_be_changed(catalog: Catalog, schema: str) -> None:
    ident, _ = _create(catalog, schema)
    if refuses(catalog.provider(), "table properties"):  # Gravitino: "Set property is not supported yet"
        with pytest.raises(IllegalArgumentException):
            catalog.as_table_catalog().alter_table(ident, TableChange.set_property("owner", "me"))
        altered = catalog.as_table_catalog().alter_table(ident, TableChange.update_comment("new comment"))
        assert altered.comment() == "new comment" and altered.properties() == {}
        return
    altered = catalog.as_table_catalog().alter_table(
        ident,
        TableChange.set_property("owner", "me"),
        TableChange.remove_property("format"),
        TableChange.update_comment("new comment"),
    )
    assert altered.properties().get("owner") == "me"
    assert "format" not in altered.properties()
    assert altered.comment() == "new comment"


def test_columns_can_be_added_renamed_retyped_recommented_and_deleted(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    ident, _ = _create(catalog, schema)
    provider = catalog.provider()
    adds = [
        TableChange.add_column(["first_col"], Types.LongType.get(), "added first", Position.first()),
        TableChange.add_column(["after_id"], Types.StringType.get(), None, Position.after("id"), False),
        TableChange.add_column(["last_col"], Types.BooleanType.get(), None, Position.default_pos()),
    ]
    order = ["first_col", "id", "after_id", "name", "price", "tags", "qty", "last_col"]
    if refuses(provider, "column position"):  # Gravitino: "PostgreSQL does not support column position"
        with pytest.raises(IllegalArgumentException):
            tables.alter_table(ident, *adds)
        adds = [TableChange.add_column(["first_col"], Types.LongType.get(), "added first", Position.default_pos()),
                TableChange.add_column(["after_id"], Types.StringType.get(), None, Position.default_pos(), True),
                adds[2]]
        order = ["id", "name", "price", "tags", "qty", "first_col", "after_id", "last_col"]
    altered = tables.alter_table(ident, *adds)
    assert [c.name() for c in altered.columns()] == _names(provider, *order)
    assert _types(altered)["first_col"] == "long"
    assert {c.name(): c.nullable() for c in altered.columns()}["after_id"] is refuses(provider, "column position")

    # a key column cannot be nullable in the JDBC engines (the engine refuses): another column becomes NOT NULL
    nullability = ("price", False) if provider.startswith("jdbc-") else ("id", True)
    altered = tables.alter_table(
        ident,
        TableChange.rename_column(["name"], "full_name"),
        TableChange.update_column_type(["full_name"], Types.VarCharType.of(64)),
        TableChange.update_column_comment(["full_name"], "the full name"),
        TableChange.update_column_nullability([nullability[0]], nullability[1]),
        TableChange.delete_column(["last_col"], False),
        TableChange.delete_column(["never_existed"], True),
    )
    columns = {c.name(): c for c in altered.columns()}
    assert "name" not in columns and "last_col" not in columns
    assert columns["full_name"].data_type().simple_string() == "varchar(64)"
    assert columns["full_name"].comment() == "the full name"
    assert columns[nullability[0]].nullable() is nullability[1]

    loaded = tables.load_table(ident)
    assert _types(loaded) == _types(altered)
    assert [c.name() for c in loaded.columns()] == [c.name() for c in altered.columns()]


def test_table_can_be_renamed_within_its_schema_and_into_another(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    other_schema = new_name("sch")
    catalog.as_schemas().create_schema(other_schema, None, {})
    ident, _ = _create(catalog, schema)

    renamed = NameIdentifier.of(schema, new_name("renamed"))
    assert tables.alter_table(ident, TableChange.rename(renamed.name())).name() == renamed.name()
    assert tables.table_exists(ident) is False
    assert tables.table_exists(renamed) is True

    moved = NameIdentifier.of(other_schema, new_name("moved"))
    assert tables.alter_table(renamed, TableChange.rename(moved.name(), other_schema)).name() == moved.name()
    assert tables.table_exists(renamed) is False
    assert _types(tables.load_table(moved))["price"] == "decimal(10,2)"
    assert [i.name() for i in tables.list_tables(Namespace.of(other_schema))] == [moved.name()]
    assert tables.list_tables(Namespace.of(schema)) == []


def test_renaming_a_table_onto_an_existing_one_raises_already_exists(catalog: Catalog, schema: str) -> None:
    first, _ = _create(catalog, schema)
    second, _ = _create(catalog, schema)
    with pytest.raises(TableAlreadyExistsException):
        catalog.as_table_catalog().alter_table(first, TableChange.rename(second.name()))


def test_tables_are_dropped_and_purged(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    dropped, _ = _create(catalog, schema)
    purged, _ = _create(catalog, schema)
    assert tables.drop_table(dropped) is True
    assert tables.drop_table(dropped) is False
    if refuses(catalog.provider(), "purge"):  # Gravitino: "... does not support purge table, please use drop table"
        with pytest.raises(UnsupportedOperationException):
            tables.purge_table(purged)
        assert tables.drop_table(purged) is True
    else:
        assert tables.purge_table(purged) is True
        assert tables.purge_table(purged) is False
    assert tables.table_exists(dropped) is False
    assert tables.table_exists(purged) is False
    assert tables.list_tables(Namespace.of(schema)) == []


def test_missing_tables_and_schemas_raise_their_no_such_exception(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    missing_table = NameIdentifier.of(schema, new_name("missing"))
    with pytest.raises(NoSuchTableException):
        tables.load_table(missing_table)
    with pytest.raises(NoSuchTableException):
        tables.alter_table(missing_table, TableChange.set_property("k", "v"))

    in_missing_schema = NameIdentifier.of(new_name("missing"), "t")
    with pytest.raises(NoSuchSchemaException):
        tables.list_tables(Namespace.of(in_missing_schema.namespace().level(0)))
    with pytest.raises(NoSuchSchemaException):
        tables.create_table(in_missing_schema, [Column.of("id", Types.IntegerType.get())])
    with pytest.raises(NoSuchSchemaException):  # protocol §6.4; table_exists() swallows only NoSuchTable
        tables.load_table(in_missing_schema)
    assert tables.drop_table(in_missing_schema) is False


def test_changing_a_column_that_does_not_exist_raises_illegal_argument(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    ident, _ = _create(catalog, schema)
    bad_changes = [
        TableChange.rename_column(["no_such_column"], "x"),
        TableChange.update_column_type(["no_such_column"], Types.LongType.get()),
        TableChange.delete_column(["no_such_column"], False),
        TableChange.add_column(["id"], Types.LongType.get(), None, Position.default_pos()),
        TableChange.add_column(["x"], Types.LongType.get(), None, Position.after("nope")),
    ]
    for change in bad_changes:
        with pytest.raises(IllegalArgumentException):
            tables.alter_table(ident, change)
    assert _types(tables.load_table(ident)) == _types(_create(catalog, schema)[1])


def test_a_table_needs_at_least_one_column(catalog: Catalog, schema: str) -> None:
    with pytest.raises(IllegalArgumentException):
        catalog.as_table_catalog().create_table(NameIdentifier.of(schema, new_name("tbl")), [])


def test_every_type_family_round_trips_through_the_server(catalog: Catalog, schema: str) -> None:
    types = {
        "b": Types.BooleanType.get(),
        "ul": Types.LongType.unsigned(),
        "d": Types.DoubleType.get(),
        "dt": Types.DateType.get(),
        "ts": Types.TimestampType.without_time_zone(6),
        "tz": Types.TimestampType.with_time_zone(),
        "ch": Types.FixedCharType.of(3),
        "fx": Types.FixedType.of(16),
        "u": Types.UUIDType.get(),
        "m": Types.MapType.of(Types.StringType.get(), Types.LongType.get(), True),
        "s": Types.StructType.of(Types.StructType.Field.nullable_field("a", Types.IntegerType.get())),
        "un": Types.UnionType.of(Types.IntegerType.get(), Types.StringType.get()),
        "ext": Types.ExternalType.of("geometry"),
    }
    ident = NameIdentifier.of(schema, new_name("tbl"))
    tables = catalog.as_table_catalog()
    refused = REFUSED_TYPES.get(catalog.provider(), set())
    for name in sorted(refused):  # Gravitino: "Couldn't convert Gravitino type ... to <engine> type"
        with pytest.raises(IllegalArgumentException):
            tables.create_table(NameIdentifier.of(schema, new_name("tbl")), [Column.of(name, types[name])])
    kept = {name: t for name, t in types.items() if name not in refused}
    tables.create_table(ident, [Column.of(name, t) for name, t in kept.items()])
    expected = {name: t.simple_string() for name, t in kept.items()}
    assert _types(tables.load_table(ident)) == expected


#: the scenario's types an engine has none for (geometry is an external type: PostgreSQL has no such type
#: without PostGIS, MySQL has one)
REFUSED_TYPES = {"jdbc-postgresql": {"ul", "fx", "m", "s", "un", "ext"}, "jdbc-mysql": {"fx", "u", "m", "s", "un"}}


def test_column_position_and_default_value_can_be_changed(catalog: Catalog, schema: str) -> None:
    tables = catalog.as_table_catalog()
    ident, _ = _create(catalog, schema)
    if refuses(catalog.provider(), "column position"):
        with pytest.raises(IllegalArgumentException):
            tables.alter_table(ident, TableChange.update_column_position(["qty"], Position.first()))
        altered = tables.alter_table(ident, TableChange.update_column_default_value(["qty"], Literals.integer_literal(7)))
        assert {c.name(): c for c in altered.columns()}["qty"].default_value().value() == "7"
        return
    last = _names(catalog.provider(), "price", "tags")[-1]  # without a list column, id goes after price
    altered = tables.alter_table(
        ident,
        TableChange.update_column_position(["qty"], Position.first()),
        TableChange.update_column_position(["id"], Position.after(last)),
        TableChange.update_column_default_value(["qty"], Literals.integer_literal(7)),
    )
    order = _names(catalog.provider(), "qty", "name", "price", "tags", "id")
    assert [c.name() for c in altered.columns()] == order
    assert altered.columns()[0].default_value().value() == "7"
    assert [c.name() for c in tables.load_table(ident).columns()] == order
