"""Table.working_copy: any change an alter applies to the copy (gravimeta/dispatch/changes.py) leaves
the table it was copied from as it was, down to the JSON inside its columns, indexes, partitioning,
sort orders and distribution."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gravimeta.api.payloads import TABLE_UPDATES
from gravimeta.dispatch.changes import apply_table_changes
from gravimeta.entities import Audit, Column, Table


def _field(name: str) -> dict[str, Any]:
    return {"type": "field", "fieldName": [name]}


def _table() -> Table:
    return Table(
        name="t",
        columns=[
            Column("id", "integer", "the id", False, True, None, id=1),
            Column("name", {"type": "list", "elementType": "string", "containsNull": True}, None, True, False,
                   {"type": "literal", "dataType": "string", "value": "x"}, id=2),
            Column("day", "date", None, True, False, None, id=3),
        ],
        comment="a table",
        properties={"k": "v", "gone": "soon"},
        partitioning=[{"strategy": "identity", "fieldName": ["day"]}, {"strategy": "list", "fieldNames": [["day"], ["id"]]}],
        distribution={"strategy": "hash", "number": 4, "funcArgs": [_field("id"), _field("day")]},
        sort_orders=[{"sortTerm": _field("day"), "direction": "asc", "nullOrdering": "nulls_first"}],
        indexes=[{"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["id"]], "properties": {}}],
        audit=Audit("ann", "2026-01-01T00:00:00Z", "ann", "2026-01-01T00:00:00Z"),
        version=3,
    )


CHANGES: dict[str, list[dict[str, Any]]] = {
    "setProperty": [{"@type": "setProperty", "property": "k", "value": "w"}],
    "removeProperty": [{"@type": "removeProperty", "property": "gone"}],
    "rename": [{"@type": "rename", "newName": "u", "newSchemaName": None}],
    "updateComment": [{"@type": "updateComment", "newComment": "another"}],
    "addColumn": [{"@type": "addColumn", "fieldName": ["extra"], "type": "string", "comment": None,
                   "position": {"after": "id"}, "nullable": True, "autoIncrement": False, "defaultValue": None}],
    "renameColumn": [{"@type": "renameColumn", "oldFieldName": ["day"], "newFieldName": "when"},
                     {"@type": "renameColumn", "oldFieldName": ["id"], "newFieldName": "key"}],
    "deleteColumn": [{"@type": "deleteColumn", "fieldName": ["name"], "ifExists": False}],
    "updateColumnType": [{"@type": "updateColumnType", "fieldName": ["name"], "newType": "string"}],
    "updateColumnComment": [{"@type": "updateColumnComment", "fieldName": ["id"], "newComment": "changed"}],
    "updateColumnPosition": [{"@type": "updateColumnPosition", "fieldName": ["day"], "newPosition": "first"}],
    "updateColumnNullability": [{"@type": "updateColumnNullability", "fieldName": ["day"], "nullable": False}],
    "updateColumnDefaultValue": [{"@type": "updateColumnDefaultValue", "fieldName": ["name"],
                                  "newDefaultValue": {"type": "literal", "dataType": "string", "value": "y"}}],
    "updateColumnAutoIncrement": [{"@type": "updateColumnAutoIncrement", "fieldName": ["id"], "autoIncrement": False}],
    "addTableIndex": [{"@type": "addTableIndex", "index": {"indexType": "UNIQUE_KEY", "name": "uk",
                                                            "fieldNames": [["day"]], "properties": {}}}],
    "deleteTableIndex": [{"@type": "deleteTableIndex", "name": "pk", "ifExists": False}],
}


def _snapshot(table: Table) -> tuple[Table, list[int | None]]:
    """The table's value, deep, with the column ids that Table equality leaves out."""
    return copy.deepcopy(table), [c.id for c in table.columns]


def test_every_kind_of_table_change_is_covered():
    assert set(CHANGES) == set(TABLE_UPDATES)


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_a_change_applied_to_the_working_copy_never_alters_the_original(kind):
    original = _table()
    before = _snapshot(original)
    changed = apply_table_changes(original.working_copy(), copy.deepcopy(CHANGES[kind]))
    assert _snapshot(original) == before
    assert changed != original


def test_all_changes_at_once_leave_the_original_as_it_was():
    original = _table()
    before = _snapshot(original)
    kinds = [k for k in sorted(CHANGES) if k not in ("deleteColumn", "deleteTableIndex", "renameColumn")]
    changes = [c for kind in [*kinds, "renameColumn"] for c in copy.deepcopy(CHANGES[kind])]
    changed = apply_table_changes(original.working_copy(), changes)
    assert _snapshot(original) == before
    assert changed.sort_orders[0]["sortTerm"]["fieldName"] == ["when"]
    assert changed.distribution is not None and changed.distribution["funcArgs"] == [_field("key"), _field("when")]
    assert changed.partitioning[0]["fieldName"] == ["when"] and changed.indexes[0]["fieldNames"] == [["key"]]


def test_the_working_copy_equals_the_original_with_its_column_ids():
    original = _table()
    assert _snapshot(original.working_copy()) == _snapshot(original)
