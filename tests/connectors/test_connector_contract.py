"""The contract every real connector keeps (sqlite, hive, jdbc-postgresql, jdbc-mysql): what it lists is
what exists in the engine, and every call a dispatcher may repeat while repairing is idempotent."""

from __future__ import annotations

import copy

import pytest

from connectors.jdbc.common import JdbcConnector
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table

HOSTILE = ['quo"te', "it's", "semi;colon", "dash--comment", "sp ace", "per%cent", "under_score",
           "ünïcødé 表", "x\"; DROP TABLE t; --", "main", "temp", "[bracket]", "`tick`", "a.b"]


def orders(table_name: str = "orders") -> Table:
    return Table(
        table_name,
        [Column("id", "long", nullable=False), Column("amount", "decimal(10,2)"), Column("note", "varchar(20)")],
        # unnamed: MySQL names every primary key PRIMARY, PostgreSQL wants a name no other table of the schema has
        indexes=[{"indexType": "PRIMARY_KEY", "name": None, "fieldNames": [["id"]]}],
    )


def legal(connector, name: str) -> bool:
    """Whether the engine's catalog allows the name of something new (Gravitino's name rules of the JDBC
    catalogs; the sqlite and hive providers take any name)."""
    return not isinstance(connector, JdbcConnector) or connector.names.pattern.fullmatch(name) is not None


def test_created_schemas_and_tables_are_listed(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    assert schema in connector.list_schemas()
    assert connector.list_tables(schema) == ["orders"]


def test_repeating_a_create_with_the_same_definition_succeeds(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    connector.create_table(schema, orders())
    assert connector.list_tables(schema) == ["orders"]


def test_creating_a_different_table_under_an_existing_name_conflicts(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    different = orders()
    different.columns.append(Column("extra", "integer"))
    with pytest.raises(errors.TableAlreadyExists):
        connector.create_table(schema, different)


def test_creating_an_existing_schema_with_tables_conflicts(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    with pytest.raises(errors.SchemaAlreadyExists):
        connector.create_schema(Schema(schema))


def test_tables_need_an_existing_schema(connector, name):
    with pytest.raises(errors.NoSuchSchema):
        connector.create_table(name("missing"), orders())


def test_rename_within_a_schema_and_repeating_it(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    connector.rename_table(schema, "orders", schema, "orders_v2")
    connector.rename_table(schema, "orders", schema, "orders_v2")  # a repair repeats it
    assert connector.list_tables(schema) == ["orders_v2"]


def test_rename_into_another_schema_moves_the_table(connector, name):
    source, target = name("src"), name("dst")
    connector.create_schema(Schema(source))
    connector.create_schema(Schema(target))
    connector.create_table(source, orders())
    connector.rename_table(source, "orders", target, "moved")
    assert connector.list_tables(source) == []
    assert connector.list_tables(target) == ["moved"]


def test_rename_onto_an_existing_table_conflicts_and_changes_nothing(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders("a"))
    connector.create_table(schema, orders("b"))
    with pytest.raises(errors.TableAlreadyExists):
        connector.rename_table(schema, "a", schema, "b")
    assert connector.list_tables(schema) == ["a", "b"]


def test_rename_of_a_missing_table_is_not_found(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    with pytest.raises(errors.NoSuchTable):
        connector.rename_table(schema, "nope", schema, "still_nope")


def test_drop_table_reports_whether_it_existed(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    assert connector.drop_table(schema, "orders") is True
    assert connector.drop_table(schema, "orders") is False
    if connector.supports_purge:
        assert connector.purge_table(schema, "orders") is False
    else:  # the JDBC catalogs: Gravitino "does not support purge table", nor does gravimeta
        with pytest.raises(errors.UnsupportedOperation):
            connector.purge_table(schema, "orders")
    assert connector.list_tables(schema) == []


def test_drop_schema_refuses_tables_without_cascade_and_drops_them_with_it(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    with pytest.raises(errors.NonEmptySchema):
        connector.drop_schema(schema, cascade=False)
    assert connector.drop_schema(schema, cascade=True) is True
    assert connector.drop_schema(schema, cascade=True) is False
    assert schema not in connector.list_schemas()


def test_a_dropped_schema_comes_back_empty(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    connector.create_table(schema, orders())
    connector.drop_schema(schema, cascade=True)
    connector.create_schema(Schema(schema))
    assert connector.list_tables(schema) == []


def test_alter_applies_column_changes_and_repeating_it_is_harmless(connector, name):
    schema = name("sales")
    connector.create_schema(Schema(schema))
    before = orders()
    connector.create_table(schema, before)
    after = copy.deepcopy(before)
    after.columns[2].name = "memo"  # renameColumn
    del after.columns[1]  # deleteColumn
    after.columns.append(Column("region", "string"))  # addColumn
    connector.alter_table(schema, before, after)
    connector.alter_table(schema, before, after)
    assert connector.list_tables(schema) == ["orders"]
    connector.create_table(schema, after)  # same definition as the engine now holds: accepted


@pytest.mark.parametrize("hostile", HOSTILE)
def test_any_legal_name_works_for_schemas_tables_and_columns(connector, name, hostile):
    schema = name(hostile)
    table = Table(hostile, [Column(hostile, "string"), Column("id", "integer")])
    if not legal(connector, schema):  # refused before anything is sent: nothing made
        with pytest.raises(errors.IllegalArgument, match="is illegal"):
            connector.create_schema(Schema(schema))
        assert schema not in connector.list_schemas()
        return
    connector.create_schema(Schema(schema))
    connector.create_table(schema, table)
    assert connector.list_tables(schema) == [hostile]
    renamed = hostile + "'2"
    if not legal(connector, renamed):
        with pytest.raises(errors.IllegalArgument, match="is illegal"):
            connector.rename_table(schema, hostile, schema, renamed)
        renamed = hostile + "_2"
    connector.rename_table(schema, hostile, schema, renamed)
    assert connector.list_tables(schema) == [renamed]
    assert connector.drop_table(schema, renamed) is True
    assert connector.drop_schema(schema, cascade=True) is True
    assert schema not in connector.list_schemas()
