"""Apply validated `updates` lists (Gravitino's `@type` changes) to entities, in list order.

Every function is pure: it returns the changed entity or raises IllegalArgument, so the store can run
it inside its transaction and a bad change leaves nothing half-applied.
"""

from __future__ import annotations

from typing import Any

from gravimeta.capacity import check_json_size
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from gravimeta.errors import IllegalArgument

#: the property that reports whether a metalake or catalog is enabled (Gravitino's PROPERTY_IN_USE)
IN_USE = "in-use"

Change = dict[str, Any]
Changes = list[Change]  # an alias: in the dispatchers, `list` names their own list() method


class Unchanged(Exception):
    """Raised by a mutation that has nothing to change: the store transaction rolls back, nothing is
    written (an enable of an enabled metalake or catalog, as in Gravitino)."""


def is_rename(change: Change) -> bool:
    return change["@type"] == "rename"


def _common(entity: Any, change: Change) -> bool:
    """Changes shared by several kinds; True when handled."""
    kind = change["@type"]
    if kind == "setProperty":
        entity.properties[change["property"]] = change["value"]
    elif kind == "removeProperty":
        entity.properties.pop(change["property"], None)
    elif kind == "updateComment":
        entity.comment = change.get("newComment")
    elif kind == "rename":
        entity.name = change["newName"]
    else:
        return False
    return True


def property_changes(changes: list[Change]) -> tuple[dict[str, str], list[str]]:
    """The keys an update list sets (with their last value) and removes, for the property checks."""
    upserts = {c["property"]: c["value"] for c in changes if c["@type"] == "setProperty"}
    deletes = [c["property"] for c in changes if c["@type"] == "removeProperty"]
    return upserts, deletes


def apply_metalake_changes(metalake: Metalake, changes: list[Change]) -> Metalake:
    for change in changes:
        _common(metalake, change)
    return _storable(metalake, changes)


def apply_catalog_changes(catalog: Catalog, changes: list[Change]) -> Catalog:
    for change in changes:
        _common(catalog, change)
    return _storable(catalog, changes)


def apply_schema_changes(schema: Schema, changes: list[Change]) -> Schema:
    for change in changes:
        _common(schema, change)
    return _storable(schema, changes)


def _storable(entity: Any, changes: list[Change]) -> Any:
    """The properties that setProperty changes let grow across alters must still fit their column."""
    if any(change["@type"] == "setProperty" for change in changes):
        check_json_size(entity.properties, f"The properties of {entity.name}")
    return entity


def apply_table_changes(table: Table, changes: list[Change]) -> Table:
    for change in changes:
        if not _common(table, change):
            _TABLE_CHANGES[change["@type"]](table, change)
    if not table.columns:
        raise IllegalArgument(f"Table {table.name} must keep at least one column")
    return _storable(table, changes)


def target_schema(changes: list[Change]) -> str | None:
    """The schema a table moves to (the last rename with newSchemaName), or None."""
    result = None
    for change in changes:
        if is_rename(change) and change.get("newSchemaName"):
            result = change["newSchemaName"]
    return result


# ------------------------------------------------------------------ column changes


def _column_name(path: list[str]) -> str:
    if len(path) != 1:
        raise IllegalArgument(f"Nested column path {'.'.join(path)} is not supported; use a top-level column")
    return path[0]


def _find(table: Table, path: list[str]) -> tuple[int, Column]:
    name = _column_name(path)
    for i, column in enumerate(table.columns):
        if column.name == name:
            return i, column
    raise IllegalArgument(f"Column {name} does not exist in table {table.name}")


def _place(table: Table, column: Column, position: Any) -> None:
    if position in (None, "default"):
        table.columns.append(column)
    elif position == "first":
        table.columns.insert(0, column)
    else:
        index, _ = _find(table, [position["after"]])
        table.columns.insert(index + 1, column)


def _add_column(table: Table, change: Change) -> None:
    name = _column_name(change["fieldName"])
    if table.column(name) is not None:
        raise IllegalArgument(f"Column {name} already exists in table {table.name}")
    column = Column(
        name, change["type"], change.get("comment"), change.get("nullable", True),
        change.get("autoIncrement", False), change.get("defaultValue"),
    )
    _place(table, column, change.get("position"))


def _rename_column(table: Table, change: Change) -> None:
    _, column = _find(table, change["oldFieldName"])
    new_name = change["newFieldName"]
    if new_name != column.name and table.column(new_name) is not None:
        raise IllegalArgument(f"Column {new_name} already exists in table {table.name}")
    _rename_references(table, column.name, new_name)
    column.name = new_name


def _rename_references(table: Table, old: str, new: str) -> None:
    """Carry a column rename into the indexes, partitioning, sort orders and distribution that name
    the column (as MySQL does for indexes), so they do not end up pointing at a missing column. The
    entries are replaced, not edited: Table.working_copy shares them with the table it copied."""

    def rename(path: list[str]) -> list[str]:
        return [new] if path == [old] else path

    def term(expression: dict[str, Any]) -> dict[str, Any]:
        if expression.get("type") != "field":
            return expression
        return {**expression, "fieldName": rename(expression["fieldName"])}

    def partition(part: dict[str, Any]) -> dict[str, Any]:
        part = dict(part)
        if "fieldName" in part:
            part["fieldName"] = rename(part["fieldName"])
        if "fieldNames" in part:
            part["fieldNames"] = [rename(p) for p in part["fieldNames"]]
        return part

    table.indexes = [{**index, "fieldNames": [rename(p) for p in index.get("fieldNames", [])]} for index in table.indexes]
    table.partitioning = [partition(part) for part in table.partitioning]
    table.sort_orders = [{**order, "sortTerm": term(order["sortTerm"])} if "sortTerm" in order else order
                         for order in table.sort_orders]
    if table.distribution is not None and "funcArgs" in table.distribution:
        table.distribution = {**table.distribution, "funcArgs": [term(a) for a in table.distribution["funcArgs"]]}


def _delete_column(table: Table, change: Change) -> None:
    name = _column_name(change["fieldName"])
    if table.column(name) is None:
        if change.get("ifExists"):
            return
        raise IllegalArgument(f"Column {name} does not exist in table {table.name}")
    table.columns = [c for c in table.columns if c.name != name]


def _update_position(table: Table, change: Change) -> None:
    index, column = _find(table, change["fieldName"])
    position = change["newPosition"]
    if isinstance(position, dict) and position.get("after") == column.name:
        raise IllegalArgument(f"Column {column.name} cannot be placed after itself")
    del table.columns[index]
    if position == "default":
        table.columns.append(column)
    else:
        _place(table, column, position)


def _setter(attribute: str, key: str) -> Any:
    def apply(table: Table, change: Change) -> None:
        _, column = _find(table, change["fieldName"])
        setattr(column, attribute, change.get(key))

    return apply


def _add_index(table: Table, change: Change) -> None:
    index = change["index"]
    if index.get("name") and any(i.get("name") == index["name"] for i in table.indexes):
        raise IllegalArgument(f"Index {index['name']} already exists in table {table.name}")
    for field_path in index["fieldNames"]:
        _find(table, field_path)
    table.indexes.append(index)


def _delete_index(table: Table, change: Change) -> None:
    kept = [i for i in table.indexes if i.get("name") != change["name"]]
    if len(kept) == len(table.indexes) and not change.get("ifExists"):
        raise IllegalArgument(f"Index {change['name']} does not exist in table {table.name}")
    table.indexes = kept


_TABLE_CHANGES = {
    "addColumn": _add_column,
    "renameColumn": _rename_column,
    "deleteColumn": _delete_column,
    "updateColumnType": _setter("type", "newType"),
    "updateColumnComment": _setter("comment", "newComment"),
    "updateColumnPosition": _update_position,
    "updateColumnNullability": _setter("nullable", "nullable"),
    "updateColumnDefaultValue": _setter("default_value", "newDefaultValue"),
    "updateColumnAutoIncrement": _setter("auto_increment", "autoIncrement"),
    "addTableIndex": _add_index,
    "deleteTableIndex": _delete_index,
}
