"""Every alter Gravitino's PostgreSQL and MySQL catalogs support, made from Gravitino's change lists as the
dispatcher applies them (gravimeta/dispatch/changes.py) and passed to the connector as the two table
states: each is applied, a repeat changes nothing, the reverse alter (the journal's undo) brings the
table back, what the engine cannot do is refused before any change, and what the rows refuse changes
nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from gravimeta import errors
from gravimeta.dispatch.changes import apply_table_changes
from gravimeta.entities import Column, Schema, Table
from tests.support import jdbc


def lit(data_type, value):
    return {"type": "literal", "dataType": data_type, "value": value}


@pytest.fixture(params=["jdbc_postgresql", "jdbc_mysql"])
def engine(request):
    return request.getfixturevalue(f"{request.param}_connector")


@pytest.fixture
def base(engine, name):
    """(schema, table) of a fresh schema with a five-column table."""
    schema = name("alters")
    engine.create_schema(Schema(schema))
    table = Table("orders", [  # with ids, as the store gives every stored column one (plan.py pairs by them)
        Column("id", "long", nullable=False, id=11),
        Column("name", "varchar(20)", comment="who", id=12),
        Column("price", "decimal(10,2)", default_value=lit("decimal(10,2)", "1.50"), id=13),
        Column("note", "string", id=14),
        Column("qty", "integer", id=15),
    ], comment="orders", indexes=[{"indexType": "PRIMARY_KEY", "name": None, "fieldNames": [["id"]]}])
    engine.create_table(schema, table)
    return schema, table


def altered(engine, schema, table, *changes):
    """Apply Gravitino changes to the table, alter the engine, repeat it; the engine's table after."""
    after = apply_table_changes(table.working_copy(), list(changes))
    engine.check_table(after)
    engine.alter_table(schema, table, after)
    once = engine.load_table(schema, table.name)
    engine.alter_table(schema, table, after)  # a repair repeats it: nothing more changes
    assert engine.load_table(schema, table.name) == once
    return after, once


def columns(table):
    return {c.name: c for c in table.columns}


STEPS = [
    ("add a column", [{"@type": "addColumn", "fieldName": ["added"], "type": "long", "comment": "new",
                       "nullable": False, "defaultValue": lit("long", "5")}],
     lambda t: columns(t)["added"].type == "long" and not columns(t)["added"].nullable
     and columns(t)["added"].comment == "new" and columns(t)["added"].default_value == lit("long", "5")),
    ("drop a column", [{"@type": "deleteColumn", "fieldName": ["note"]}], lambda t: "note" not in columns(t)),
    ("rename a column", [{"@type": "renameColumn", "oldFieldName": ["name"], "newFieldName": "full_name"}],
     lambda t: "name" not in columns(t) and columns(t)["full_name"].comment == "who"),
    ("retype a column", [{"@type": "updateColumnType", "fieldName": ["qty"], "newType": "long"}],
     lambda t: columns(t)["qty"].type == "long"),
    ("comment a column", [{"@type": "updateColumnComment", "fieldName": ["price"], "newComment": "in euro"}],
     lambda t: columns(t)["price"].comment == "in euro"),
    ("make a column not nullable", [{"@type": "updateColumnNullability", "fieldName": ["qty"], "nullable": False}],
     lambda t: not columns(t)["qty"].nullable),
    ("change a default", [{"@type": "updateColumnDefaultValue", "fieldName": ["qty"],
                           "newDefaultValue": lit("integer", "7")}],
     lambda t: columns(t)["qty"].default_value == lit("integer", "7")),
    ("comment the table", [{"@type": "updateComment", "newComment": "all orders"}], lambda t: t.comment == "all orders"),
    ("add a unique key", [{"@type": "addTableIndex", "index": {"indexType": "UNIQUE_KEY", "name": "uk_name",
                                                               "fieldNames": [["name"]]}}],
     lambda t: {"indexType": "UNIQUE_KEY", "name": "uk_name", "fieldNames": [["name"]]} in t.indexes),
    ("make a column auto-increment", [{"@type": "updateColumnAutoIncrement", "fieldName": ["id"], "autoIncrement": True}],
     lambda t: columns(t)["id"].auto_increment),
]


@pytest.mark.parametrize(("step", "changes", "holds"), STEPS, ids=[s[0] for s in STEPS])
def test_each_alter_is_applied_once_and_undone_by_the_reverse_alter(engine, base, step, changes, holds):
    schema, table = base
    before = engine.load_table(schema, table.name)
    after, found = altered(engine, schema, table, *changes)
    assert holds(found), found
    if engine.kind == "postgresql" and step == "drop a column":
        # the dropped column would come back last: PostgreSQL cannot place it, so the undo is refused whole
        with pytest.raises(errors.IllegalArgument, match="does not support column position"):
            engine.alter_table(schema, after, table)
        assert engine.load_table(schema, table.name) == found
        return
    engine.alter_table(schema, after, table)  # the journal's undo: the new state back to the old
    assert engine.load_table(schema, table.name) == before


def test_several_changes_land_together(engine, base):
    schema, table = base
    _, found = altered(engine, schema, table,
                       {"@type": "renameColumn", "oldFieldName": ["note"], "newFieldName": "memo"},
                       {"@type": "deleteColumn", "fieldName": ["price"]},
                       {"@type": "addColumn", "fieldName": ["region"], "type": "string"},
                       {"@type": "updateColumnType", "fieldName": ["name"], "newType": "varchar(64)"},
                       {"@type": "updateComment", "newComment": None})
    assert [(c.name, c.type) for c in found.columns] == [
        ("id", "long"), ("name", "varchar(64)"), ("memo", "string"), ("qty", "integer"), ("region", "string")]
    assert found.comment is None


def test_a_rename_with_other_changes_to_the_same_column_keeps_its_rows(engine, base):
    """Paired by id, not guessed: renamed and retyped in one request is still the same column."""
    schema, table = base
    provider = "jdbc-postgresql" if engine.kind == "postgresql" else "jdbc-mysql"
    admin_insert(engine, provider, schema, "INSERT INTO {t} (id, name) VALUES (1, 'kept')")
    _, found = altered(engine, schema, table,
                       {"@type": "renameColumn", "oldFieldName": ["name"], "newFieldName": "full_name"},
                       {"@type": "updateColumnType", "fieldName": ["full_name"], "newType": "varchar(64)"},
                       {"@type": "updateColumnComment", "fieldName": ["full_name"], "newComment": "the full name"})
    assert [c.name for c in found.columns] == ["id", "full_name", "price", "note", "qty"]
    assert admin_rows(engine, provider, schema, "SELECT full_name FROM {t}") == [("kept",)]


def test_two_columns_can_trade_names(engine, base):
    schema, table = base
    provider = "jdbc-postgresql" if engine.kind == "postgresql" else "jdbc-mysql"
    admin_insert(engine, provider, schema, "INSERT INTO {t} (id, name, note) VALUES (1, 'a name', 'a note')")
    _, found = altered(engine, schema, table,
                       {"@type": "renameColumn", "oldFieldName": ["name"], "newFieldName": "tmp"},
                       {"@type": "renameColumn", "oldFieldName": ["note"], "newFieldName": "name"},
                       {"@type": "renameColumn", "oldFieldName": ["tmp"], "newFieldName": "note"})
    assert [(c.name, c.type) for c in found.columns][1:4] == [("note", "varchar(20)"), ("price", "decimal(10,2)"),
                                                               ("name", "string")]
    assert admin_rows(engine, provider, schema, "SELECT name, note FROM {t}") == [("a note", "a name")]


def _target(engine, schema):
    return f'"{schema}".orders' if engine.kind == "postgresql" else f"`{schema}`.orders"


def admin_insert(engine, provider, schema, statement):
    admin = jdbc.admin_engine(provider, engine.context.properties)
    try:
        with admin.begin() as conn:
            conn.execute(text(statement.format(t=_target(engine, schema))))
    finally:
        admin.dispose()


def admin_rows(engine, provider, schema, query):
    admin = jdbc.admin_engine(provider, engine.context.properties)
    try:
        with admin.connect() as conn:
            return [tuple(row) for row in conn.execute(text(query.format(t=_target(engine, schema))))]
    finally:
        admin.dispose()


def test_columns_are_placed_in_mysql_and_refused_in_postgresql(engine, base):
    schema, table = base
    changes = [{"@type": "updateColumnPosition", "fieldName": ["qty"], "newPosition": "first"},
               {"@type": "updateColumnPosition", "fieldName": ["id"], "newPosition": {"after": "note"}},
               {"@type": "addColumn", "fieldName": ["second"], "type": "integer", "position": {"after": "qty"}}]
    if engine.kind == "postgresql":  # Gravitino: "PostgreSQL does not support column position."
        after = apply_table_changes(table.working_copy(), changes)
        with pytest.raises(errors.IllegalArgument, match="does not support column position"):
            engine.alter_table(schema, table, after)
        assert [c.name for c in engine.load_table(schema, table.name).columns] == [c.name for c in table.columns]
        return
    _, found = altered(engine, schema, table, *changes)
    assert [c.name for c in found.columns] == ["qty", "second", "name", "price", "note", "id"]
    assert columns(found)["price"].default_value == lit("decimal(10,2)", "1.50")  # written again, kept


def test_table_properties_as_each_engine_keeps_them(engine, base):
    """PostgreSQL tables have none (Gravitino refuses them); MySQL keeps `engine` and
    `auto-increment-offset`, set at create and immutable after, and leaves others to the store."""
    schema, table = base
    if engine.kind == "postgresql":
        with pytest.raises(errors.IllegalArgument, match="not supported"):
            engine.check_table(apply_table_changes(table.working_copy(), [
                {"@type": "setProperty", "property": "owner", "value": "me"}]))
        return
    with pytest.raises(errors.IllegalArgument, match="immutable"):
        engine.alter_table(schema, table, apply_table_changes(table.working_copy(), [
            {"@type": "setProperty", "property": "engine", "value": "MyISAM"}]))
    with pytest.raises(errors.IllegalArgument, match="reserved"):
        engine.check_table(apply_table_changes(table.working_copy(), [
            {"@type": "setProperty", "property": "comment", "value": "x"}]))
    altered(engine, schema, table, {"@type": "setProperty", "property": "owner", "value": "me"})
    made = Table("archived", [Column("id", "integer", nullable=False, auto_increment=True)],
                 properties={"engine": "myisam", "auto-increment-offset": "100"},
                 indexes=[{"indexType": "PRIMARY_KEY", "name": "PRIMARY", "fieldNames": [["id"]]}])
    engine.create_table(schema, made)
    assert engine.load_table(schema, "archived").properties == {"engine": "MyISAM", "auto-increment-offset": "100"}


def test_an_alter_the_rows_refuse_changes_nothing(engine, base):
    schema, table = base
    provider = "jdbc-postgresql" if engine.kind == "postgresql" else "jdbc-mysql"
    admin_insert(engine, provider, schema, "INSERT INTO {t} (id, name, note) VALUES (1, 'abc', 'x'), (2, 'abc', NULL)")
    before = engine.load_table(schema, table.name)
    for changes in ([{"@type": "updateColumnType", "fieldName": ["name"], "newType": "integer"}],
                    [{"@type": "updateColumnNullability", "fieldName": ["note"], "nullable": False}],
                    [{"@type": "addTableIndex", "index": {"indexType": "UNIQUE_KEY", "name": "uk_dup",
                                                          "fieldNames": [["name"]]}}]):
        with pytest.raises(errors.IllegalArgument):
            engine.alter_table(schema, table, apply_table_changes(table.working_copy(), changes))
        assert engine.load_table(schema, table.name) == before


def test_a_column_with_a_null_default_cannot_become_not_nullable(engine, base):
    """Gravitino's validateUpdateColumnNullable."""
    schema, table = base
    after = apply_table_changes(table.working_copy(), [
        {"@type": "updateColumnDefaultValue", "fieldName": ["qty"], "newDefaultValue":
         {"type": "literal", "dataType": "null", "value": "NULL"}}])
    engine.alter_table(schema, table, after)
    not_null = apply_table_changes(after.working_copy(), [
        {"@type": "updateColumnNullability", "fieldName": ["qty"], "nullable": False}])
    if engine.kind == "postgresql":
        with pytest.raises(errors.IllegalArgument, match="null default value cannot be changed to not null"):
            engine.alter_table(schema, after, not_null)
    else:  # MySQL writes the whole column: NOT NULL DEFAULT NULL is refused by the server
        with pytest.raises(errors.IllegalArgument):
            engine.alter_table(schema, after, not_null)
    assert columns(engine.load_table(schema, table.name))["qty"].nullable
