"""Table endpoints (gravitino-api.md §1.2 rows 20-24) and every table update @type (§1.4)."""

from __future__ import annotations

import pytest

from tests.api.helpers import NO_DISTRIBUTION, bad_request, column, error, fresh, ok


def literal(value: str | None, data_type: str = "integer") -> dict:
    return {"type": "literal", "dataType": data_type, "value": value}


def columns_of(table: dict) -> list[str]:
    return [c["name"] for c in table["columns"]]


def column_named(table: dict, name: str) -> dict:
    return next(c for c in table["columns"] if c["name"] == name)


# ------------------------------------------------------------------ create


def test_create_table_returns_the_shape_the_client_validates(api, schema):
    name = fresh("tbl")
    body = {"name": name, "comment": "orders", "columns": [column("id", comment="pk", nullable=False)]}
    table = ok(api.post(schema.children(), body))["table"]
    assert table["name"] == name
    assert table["comment"] == "orders"
    assert table["columns"] == [
        {"name": "id", "type": "integer", "comment": "pk", "nullable": False, "autoIncrement": False}
    ]
    assert table["partitioning"] == []
    assert table["distribution"] == NO_DISTRIBUTION
    assert table["sortOrders"] == []
    assert table["indexes"] == []
    assert table["properties"] == {}
    assert table["audit"]["creator"] == "anonymous"
    assert "createTime" in table["audit"]


def test_create_table_with_the_exact_body_the_python_client_sends(api, schema):
    name = fresh("tbl")
    body = {
        "name": name,
        "columns": [
            {"name": "id", "type": "integer", "comment": "pk", "nullable": False, "autoIncrement": False},
            {"name": "name", "type": "varchar(32)", "comment": None, "nullable": True, "autoIncrement": False},
        ],
        "comment": None,
        "partitioning": [],
        "distribution": {"strategy": "none", "number": 0, "funcArgs": []},
        "sortOrders": [],
        "indexes": [],
    }
    table = ok(api.post(schema.children(), body))["table"]
    assert columns_of(table) == ["id", "name"]
    assert all("defaultValue" not in c for c in table["columns"])
    assert table["distribution"] == NO_DISTRIBUTION


def test_create_table_keeps_partitioning_distribution_sort_orders_and_indexes(api, schema):
    partitioning = [
        {"strategy": "identity", "fieldName": ["day"]},
        {"strategy": "bucket", "numBuckets": 4, "fieldNames": [["id"]]},
    ]
    distribution = {"strategy": "hash", "number": 8, "funcArgs": [{"type": "field", "fieldName": ["id"]}]}
    sort_orders = [{"sortTerm": {"type": "field", "fieldName": ["id"]}, "direction": "desc",
                    "nullOrdering": "nulls_last"}]
    indexes = [{"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["id"]], "properties": {}}]
    body = {
        "name": fresh("tbl"),
        "columns": [column("id", nullable=False), column("day", "date")],
        "partitioning": partitioning,
        "distribution": distribution,
        "sortOrders": sort_orders,
        "indexes": indexes,
        "properties": {"format": "parquet"},
    }
    created = ok(api.post(schema.children(), body))["table"]
    loaded = api.load(schema.child(body["name"]))
    for table in (created, loaded):
        assert table["partitioning"] == partitioning
        assert table["distribution"] == distribution
        assert table["sortOrders"] == sort_orders
        assert table["indexes"] == indexes
        assert table["properties"] == {"format": "parquet"}


def test_random_distribution_is_stored_as_even(api, schema):
    body = {"name": fresh("tbl"), "columns": [column("id")],
            "distribution": {"strategy": "RANDOM", "number": 2, "funcArgs": []}}
    assert ok(api.post(schema.children(), body))["table"]["distribution"]["strategy"] == "even"


def test_distribution_without_strategy_defaults_to_hash_like_gravitino(api, schema):
    body = {"name": fresh("tbl"), "columns": [column("id")],
            "distribution": {"number": -1, "funcArgs": [{"type": "field", "fieldName": ["id"]}]}}
    distribution = ok(api.post(schema.children(), body))["table"]["distribution"]
    assert distribution == {"strategy": "hash", "number": -1, "funcArgs": [{"type": "field", "fieldName": ["id"]}]}


def test_sort_order_null_ordering_defaults_by_direction(api, schema):
    term = {"type": "field", "fieldName": ["id"]}
    body = {"name": fresh("tbl"), "columns": [column("id")],
            "sortOrders": [{"sortTerm": term, "direction": "DESC"}, {"sortTerm": term}]}
    orders = ok(api.post(schema.children(), body))["table"]["sortOrders"]
    assert [(o["direction"], o["nullOrdering"]) for o in orders] == [("desc", "nulls_last"), ("asc", "nulls_first")]


def test_index_type_is_returned_as_the_upper_case_enum_name(api, schema):
    body = {"name": fresh("tbl"), "columns": [column("id")],
            "indexes": [{"indexType": "primary_key", "name": "pk", "fieldNames": [["id"]]}]}
    assert ok(api.post(schema.children(), body))["table"]["indexes"][0]["indexType"] == "PRIMARY_KEY"


def test_column_types_round_trip_in_gravitino_wire_form(api, schema):
    types = {
        "a": "INTEGER",
        "b": "decimal( 10 , 2 )",
        "c": "long unsigned",
        "d": "timestamp_tz(6)",
        "e": {"type": "list", "elementType": "string", "containsNull": False},
        "f": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
        "g": {"type": "struct", "fields": [{"name": "x", "type": "integer", "nullable": True}]},
        "h": {"type": "unparsed", "unparsedType": "geometry_thing"},
    }
    body = {"name": fresh("tbl"), "columns": [column(n, t) for n, t in types.items()]}
    table = ok(api.post(schema.children(), body))["table"]
    got = {c["name"]: c["type"] for c in table["columns"]}
    assert got["a"] == "integer"
    assert got["b"] == "decimal(10,2)"
    assert got["c"] == "long unsigned"
    assert got["d"] == "timestamp_tz(6)"
    assert got["e"] == types["e"]
    assert got["f"] == types["f"]
    assert got["g"] == types["g"]
    assert got["h"] == types["h"]


def test_column_default_value_is_returned_when_set_and_omitted_when_not(api, schema):
    body = {"name": fresh("tbl"), "columns": [column("id", defaultValue=literal("7")), column("x")]}
    table = ok(api.post(schema.children(), body))["table"]
    assert column_named(table, "id")["defaultValue"] == literal("7")
    assert "defaultValue" not in column_named(table, "x")


def test_explicit_null_default_value_is_treated_as_no_default(api, schema):
    body = {"name": fresh("tbl"), "columns": [column("id", defaultValue=None)]}
    table = ok(api.post(schema.children(), body))["table"]
    assert "defaultValue" not in table["columns"][0]


def test_create_duplicate_table_is_409_already_exists(api, table):
    body = {"name": table.name, "columns": [column("id")]}
    error(api.post(table.parent.children(), body), 409, 1004, "TableAlreadyExistsException")


def test_table_names_are_case_sensitive(api, schema):
    suffix = fresh("")
    upper = api.create_table(schema, "Orders" + suffix, comment="upper")
    lower = api.create_table(schema, "orders" + suffix, comment="lower")
    assert api.load(upper)["comment"] == "upper"
    assert api.load(lower)["comment"] == "lower"


def test_create_table_in_missing_schema_is_404_no_such_schema(api, catalog):
    body = {"name": "t", "columns": [column("id")]}
    error(api.post(catalog.child(fresh("ghost")).children(), body), 404, 1003, "NoSuchSchemaException")


@pytest.mark.parametrize(
    ("columns", "extra", "problem"),
    [
        ([], {}, "columns"),
        ([column("id"), column("id")], {}, "Duplicate"),
        ([column("a", autoIncrement=True), column("b", autoIncrement=True)], {}, "auto"),
        ([column("a")], {"partitioning": [{"strategy": "identity", "fieldName": ["nope"]}]}, "nope"),
        ([column("a")], {"sortOrders": [{"sortTerm": {"type": "field", "fieldName": ["nope"]}}]}, "nope"),
        ([column("a")], {"indexes": [{"indexType": "PRIMARY_KEY", "fieldNames": [["nope"]]}]}, "nope"),
        ([column("a")], {"indexes": [{"indexType": "PRIMARY_KEY", "fieldNames": []}]}, "fieldNames"),
        ([column("a")], {"indexes": [{"fieldNames": [["a"]]}]}, "indexType"),
        ([column("a", nullable=False, defaultValue=literal(None))], {}, "null"),
        ([column("a", "int")], {}, "int"),
        ([column("a", None)], {}, "type"),
        ([{"type": "integer"}], {}, "name"),
        ([column("a")], {"partitioning": [{"strategy": "sideways", "fieldName": ["a"]}]}, "strategy"),
        ([column("a")], {"distribution": {"strategy": "zigzag", "number": 1, "funcArgs": []}}, "strategy"),
    ],
)
def test_invalid_table_definition_is_400_naming_the_problem_and_creates_nothing(api, schema, columns, extra, problem):
    body = {"name": fresh("tbl"), "columns": columns, **extra}
    bad_request(api.post(schema.children(), body), in_message=problem)
    assert api.names(schema.children()) == []


# ------------------------------------------------------------------ list / load


def test_list_tables_returns_identifiers_with_three_level_namespace(api, schema):
    names = sorted(api.create_table(schema).name for _ in range(3))
    body = ok(api.get(schema.children()))
    assert body["identifiers"] == [{"namespace": list(schema.levels), "name": n} for n in names]


def test_list_tables_of_missing_schema_is_404(api, catalog):
    error(api.get(catalog.child(fresh("ghost")).children()), 404, 1003, "NoSuchSchemaException")


def test_load_table_returns_what_was_created(api, table):
    loaded = api.load(table)
    assert loaded["name"] == table.name
    assert loaded["comment"] == "a table"
    assert loaded["properties"] == {"format": "memory"}
    assert columns_of(loaded) == ["id", "name"]
    assert column_named(loaded, "name")["type"] == "varchar(32)"
    assert loaded["partitioning"] == [] and loaded["distribution"] == NO_DISTRIBUTION


def test_load_table_ignores_the_privileges_hint(api, table):
    assert ok(api.get(f"{table.path}?privileges=MODIFY_TABLE,SELECT_TABLE"))["table"]["name"] == table.name


def test_load_of_missing_table_is_404_no_such_table(api, schema):
    error(api.get(schema.child(fresh("ghost")).path), 404, 1003, "NoSuchTableException")


def test_load_table_in_missing_schema_is_404_no_such_schema(api, catalog):
    error(api.get(catalog.child(fresh("ghost")).child("t").path), 404, 1003, "NoSuchSchemaException")


# ------------------------------------------------------------------ alter: table-level changes


def test_rename_table_within_its_schema(api, table):
    new = table.sibling(fresh("renamed"))
    altered = api.altered(table, {"@type": "rename", "newName": new.name})
    assert altered["name"] == new.name
    assert altered["audit"]["lastModifier"] == "anonymous"
    assert api.names(table.parent.children()) == [new.name]
    error(api.get(table.path), 404, 1003, "NoSuchTableException")
    assert columns_of(api.load(new)) == ["id", "name"]


def test_rename_table_into_another_schema_moves_it(api, table):
    target = api.create_schema(table.parent.parent)
    new_name = fresh("moved")
    altered = api.altered(table, {"@type": "rename", "newName": new_name, "newSchemaName": target.name})
    assert altered["name"] == new_name
    assert api.names(table.parent.children()) == []
    assert api.names(target.children()) == [new_name]
    assert api.load(target.child(new_name))["comment"] == "a table"


def test_rename_table_into_another_schema_keeping_its_name(api, table):
    target = api.create_schema(table.parent.parent)
    api.altered(table, {"@type": "rename", "newName": table.name, "newSchemaName": target.name})
    assert api.names(target.children()) == [table.name]
    assert api.names(table.parent.children()) == []


def test_rename_table_onto_an_existing_table_is_409_and_changes_nothing(api, table):
    other = api.create_table(table.parent)
    error(api.alter(table, {"@type": "rename", "newName": other.name}), 409, 1004, "TableAlreadyExistsException")
    assert sorted(api.names(table.parent.children())) == sorted([table.name, other.name])


def test_rename_table_into_missing_schema_is_404_and_changes_nothing(api, table):
    response = api.alter(table, {"@type": "rename", "newName": "t2", "newSchemaName": fresh("ghost")})
    error(response, 404, 1003, "NoSuchSchemaException")
    assert api.names(table.parent.children()) == [table.name]


def test_update_table_comment(api, table):
    assert api.altered(table, {"@type": "updateComment", "newComment": "new"})["comment"] == "new"
    assert api.load(table)["comment"] == "new"


def test_set_table_property_accepts_an_empty_value(api, table):
    altered = api.altered(
        table,
        {"@type": "setProperty", "property": "format", "value": "orc"},
        {"@type": "setProperty", "property": "empty", "value": ""},
    )
    assert altered["properties"] == {"format": "orc", "empty": ""}


def test_remove_table_property(api, table):
    assert api.altered(table, {"@type": "removeProperty", "property": "format"})["properties"] == {}
    assert api.load(table)["properties"] == {}


# ------------------------------------------------------------------ alter: columns


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        ("first", ["new", "id", "name"]),
        ("FIRST", ["new", "id", "name"]),
        ("default", ["id", "name", "new"]),
        ({"after": "id"}, ["id", "new", "name"]),
        ({"after": "name"}, ["id", "name", "new"]),
    ],
)
def test_add_column_at_each_position(api, table, position, expected):
    altered = api.altered(table, {"@type": "addColumn", "fieldName": ["new"], "type": "string", "position": position})
    assert columns_of(altered) == expected
    assert columns_of(api.load(table)) == expected


def test_add_column_without_position_appends_it(api, table):
    altered = api.altered(table, {"@type": "addColumn", "fieldName": ["new"], "type": "long"})
    assert columns_of(altered) == ["id", "name", "new"]


def test_add_column_keeps_comment_nullability_auto_increment_and_default(api, table):
    change = {
        "@type": "addColumn", "fieldName": ["qty"], "type": "integer", "comment": "how many",
        "position": "default", "nullable": False, "autoIncrement": True, "defaultValue": literal("0"),
    }
    added = column_named(api.altered(table, change), "qty")
    assert added == {"name": "qty", "type": "integer", "comment": "how many", "nullable": False,
                     "autoIncrement": True, "defaultValue": literal("0")}


def test_add_non_nullable_column_defaulting_to_null_is_400(api, table):
    change = {"@type": "addColumn", "fieldName": ["x"], "type": "integer", "nullable": False,
              "defaultValue": literal(None)}
    bad_request(api.alter(table, change), in_message="null")
    assert columns_of(api.load(table)) == ["id", "name"]


def test_add_existing_column_is_400(api, table):
    bad_request(api.alter(table, {"@type": "addColumn", "fieldName": ["id"], "type": "long"}), in_message="id")
    assert column_named(api.load(table), "id")["type"] == "integer"


def test_add_column_after_a_missing_column_is_400(api, table):
    change = {"@type": "addColumn", "fieldName": ["x"], "type": "long", "position": {"after": "ghost"}}
    bad_request(api.alter(table, change), in_message="ghost")


def test_rename_column(api, table):
    altered = api.altered(table, {"@type": "renameColumn", "oldFieldName": ["name"], "newFieldName": "title"})
    assert columns_of(altered) == ["id", "title"]
    assert column_named(api.load(table), "title")["type"] == "varchar(32)"


@pytest.mark.parametrize(("old", "new"), [("ghost", "x"), ("name", "id")])
def test_rename_missing_column_or_onto_existing_column_is_400(api, table, old, new):
    change = {"@type": "renameColumn", "oldFieldName": [old], "newFieldName": new}
    bad_request(api.alter(table, change), in_message=old if old == "ghost" else new)
    assert columns_of(api.load(table)) == ["id", "name"]


def test_delete_column(api, table):
    assert columns_of(api.altered(table, {"@type": "deleteColumn", "fieldName": ["name"]})) == ["id"]


def test_delete_missing_column_with_if_exists_is_a_no_op(api, table):
    altered = api.altered(table, {"@type": "deleteColumn", "fieldName": ["ghost"], "ifExists": True})
    assert columns_of(altered) == ["id", "name"]


def test_delete_missing_column_without_if_exists_is_400(api, table):
    bad_request(api.alter(table, {"@type": "deleteColumn", "fieldName": ["ghost"], "ifExists": False}),
                in_message="ghost")


def test_delete_of_every_column_is_400(api, table):
    response = api.alter(
        table,
        {"@type": "deleteColumn", "fieldName": ["id"]},
        {"@type": "deleteColumn", "fieldName": ["name"]},
    )
    bad_request(response, in_message="column")
    assert columns_of(api.load(table)) == ["id", "name"]


def test_update_column_type(api, table):
    altered = api.altered(table, {"@type": "updateColumnType", "fieldName": ["id"], "newType": "LONG"})
    assert column_named(altered, "id")["type"] == "long"


def test_update_column_type_to_a_sql_name_is_400(api, table):
    bad_request(api.alter(table, {"@type": "updateColumnType", "fieldName": ["id"], "newType": "bigint"}),
                in_message="bigint")
    assert column_named(api.load(table), "id")["type"] == "integer"


def test_update_column_comment(api, table):
    altered = api.altered(table, {"@type": "updateColumnComment", "fieldName": ["id"], "newComment": "key"})
    assert column_named(altered, "id")["comment"] == "key"


@pytest.mark.parametrize(
    ("position", "expected"),
    [("first", ["c", "a", "b"]), ({"after": "a"}, ["a", "c", "b"]), ("default", ["a", "b", "c"])],
)
def test_update_column_position(api, schema, position, expected):
    table = api.create_table(schema, columns=[column("a"), column("b"), column("c")])
    altered = api.altered(table, {"@type": "updateColumnPosition", "fieldName": ["c"], "newPosition": position})
    assert columns_of(altered) == expected
    assert columns_of(api.load(table)) == expected


def test_update_column_position_after_itself_is_400(api, table):
    change = {"@type": "updateColumnPosition", "fieldName": ["id"], "newPosition": {"after": "id"}}
    bad_request(api.alter(table, change), in_message="after itself")
    assert columns_of(api.load(table)) == ["id", "name"]


def test_update_column_position_without_position_is_400(api, table):
    bad_request(api.alter(table, {"@type": "updateColumnPosition", "fieldName": ["id"]}), in_message="newPosition")


def test_update_column_nullability(api, table):
    altered = api.altered(table, {"@type": "updateColumnNullability", "fieldName": ["id"], "nullable": False})
    assert column_named(altered, "id")["nullable"] is False
    assert column_named(api.load(table), "id")["nullable"] is False


def test_update_column_default_value(api, table):
    change = {"@type": "updateColumnDefaultValue", "fieldName": ["id"], "newDefaultValue": literal("42")}
    assert column_named(api.altered(table, change), "id")["defaultValue"] == literal("42")
    assert column_named(api.load(table), "id")["defaultValue"] == literal("42")


def test_update_column_auto_increment(api, table):
    change = {"@type": "updateColumnAutoIncrement", "fieldName": ["id"], "autoIncrement": True}
    assert column_named(api.altered(table, change), "id")["autoIncrement"] is True


def test_second_auto_increment_column_is_400(api, table):
    response = api.alter(
        table,
        {"@type": "updateColumnAutoIncrement", "fieldName": ["id"], "autoIncrement": True},
        {"@type": "updateColumnAutoIncrement", "fieldName": ["name"], "autoIncrement": True},
    )
    bad_request(response, in_message="auto")
    assert not any(c["autoIncrement"] for c in api.load(table)["columns"])


@pytest.mark.parametrize(
    "change",
    [
        {"@type": "updateColumnType", "fieldName": ["ghost"], "newType": "long"},
        {"@type": "updateColumnComment", "fieldName": ["ghost"], "newComment": "x"},
        {"@type": "updateColumnNullability", "fieldName": ["ghost"], "nullable": False},
        {"@type": "updateColumnDefaultValue", "fieldName": ["ghost"], "newDefaultValue": literal("1")},
        {"@type": "updateColumnAutoIncrement", "fieldName": ["ghost"], "autoIncrement": True},
        {"@type": "updateColumnPosition", "fieldName": ["ghost"], "newPosition": "first"},
    ],
    ids=lambda change: change["@type"],
)
def test_column_change_on_a_missing_column_is_400_naming_it(api, table, change):
    bad_request(api.alter(table, change), in_message="ghost")


# ------------------------------------------------------------------ alter: indexes


def test_add_and_delete_table_index(api, table):
    index = {"indexType": "UNIQUE_KEY", "name": "uk_name", "fieldNames": [["name"]], "properties": {}}
    added = api.altered(table, {"@type": "addTableIndex", "index": index})
    assert added["indexes"] == [index]
    assert api.load(table)["indexes"] == [index]
    assert api.altered(table, {"@type": "deleteTableIndex", "name": "uk_name"})["indexes"] == []


def test_add_index_with_an_existing_name_is_400(api, table):
    index = {"indexType": "UNIQUE_KEY", "name": "uk", "fieldNames": [["name"]]}
    api.altered(table, {"@type": "addTableIndex", "index": index})
    bad_request(api.alter(table, {"@type": "addTableIndex", "index": index}), in_message="uk")


def test_add_index_on_missing_column_is_400(api, table):
    index = {"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["ghost"]]}
    bad_request(api.alter(table, {"@type": "addTableIndex", "index": index}), in_message="ghost")
    assert api.load(table)["indexes"] == []


def test_delete_missing_index_with_if_exists_is_a_no_op(api, table):
    assert api.altered(table, {"@type": "deleteTableIndex", "name": "ghost", "ifExists": True})["indexes"] == []


def test_delete_missing_index_without_if_exists_is_400(api, table):
    bad_request(api.alter(table, {"@type": "deleteTableIndex", "name": "ghost"}), in_message="ghost")


# ------------------------------------------------------------------ alter: atomicity and errors


def test_alter_whose_second_change_is_invalid_changes_nothing(api, table):
    before = api.load(table)
    response = api.alter(
        table,
        {"@type": "updateComment", "newComment": "changed"},
        {"@type": "addColumn", "fieldName": ["extra"], "type": "string"},
        {"@type": "deleteColumn", "fieldName": ["ghost"]},
    )
    bad_request(response, in_message="ghost")
    assert api.load(table) == before


def test_rename_plus_invalid_change_leaves_the_table_under_its_old_name(api, table):
    response = api.alter(
        table,
        {"@type": "rename", "newName": fresh("renamed")},
        {"@type": "renameColumn", "oldFieldName": ["ghost"], "newFieldName": "x"},
    )
    bad_request(response, in_message="ghost")
    assert api.names(table.parent.children()) == [table.name]


def test_alter_table_with_empty_update_list_is_400(api, table):
    bad_request(api.put(table.path, {"updates": []}), in_message="updates")


def test_alter_of_missing_table_is_404(api, schema):
    response = api.alter(schema.child(fresh("ghost")), {"@type": "updateComment", "newComment": "x"})
    error(response, 404, 1003, "NoSuchTableException")


def test_alter_table_in_disabled_catalog_is_409_not_in_use(api, table):
    catalog = table.parent.parent
    api.set_in_use(catalog, False)
    response = api.alter(table, {"@type": "updateComment", "newComment": "x"})
    error(response, 409, 1009, "CatalogNotInUseException")
    api.set_in_use(catalog, True)
    assert api.load(table)["comment"] == "a table"


def test_table_calls_under_a_disabled_metalake_are_409_metalake_not_in_use(api, table):
    metalake = table.parent.parent.parent
    api.set_in_use(metalake, False)
    error(api.get(table.path), 409, 1009, "MetalakeNotInUseException")
    error(api.get(table.parent.children()), 409, 1009, "MetalakeNotInUseException")
    error(api.alter(table, {"@type": "updateComment", "newComment": "x"}), 409, 1009, "MetalakeNotInUseException")
    error(api.delete(table.path), 409, 1009, "MetalakeNotInUseException")
    api.set_in_use(metalake, True)
    assert api.load(table)["comment"] == "a table"


# ------------------------------------------------------------------ drop


def test_drop_table_returns_dropped_true_and_removes_it(api, table):
    assert ok(api.delete(table.path)) == {"code": 0, "dropped": True}
    error(api.get(table.path), 404, 1003, "NoSuchTableException")
    assert api.names(table.parent.children()) == []


@pytest.mark.parametrize("purge", ["true", "True"])
def test_purge_table_drops_it(api, table, purge):
    assert ok(api.delete(f"{table.path}?purge={purge}")) == {"code": 0, "dropped": True}
    error(api.get(table.path), 404, 1003, "NoSuchTableException")


def test_drop_of_missing_table_returns_dropped_false(api, schema):
    assert ok(api.delete(schema.child(fresh("ghost")).path)) == {"code": 0, "dropped": False}


def test_drop_of_table_in_missing_schema_returns_dropped_false(api, catalog):
    assert ok(api.delete(catalog.child(fresh("ghost")).child("t").path)) == {"code": 0, "dropped": False}


def test_drop_table_with_garbage_purge_is_400_and_drops_nothing(api, table):
    bad_request(api.delete(f"{table.path}?purge=please"), in_message="purge")
    assert api.load(table)["name"] == table.name


def test_table_can_be_recreated_after_drop(api, table):
    ok(api.delete(table.path))
    api.create_table(table.parent, table.name, columns=[column("other", "string")])
    assert columns_of(api.load(table)) == ["other"]
