"""Validation of a table definition, shared by the table dispatcher and the journal repair (which
re-applies a journalled rename/alter to the store)."""

from __future__ import annotations

from collections.abc import Callable

from connectors.base import Connector
from gravimeta import errors, shape_limits
from gravimeta.dispatch.changes import Changes, apply_table_changes
from gravimeta.entities import Table


def validate_table(table: Table) -> None:
    """The rules Gravitino's TableCreateRequest.validate() enforces, plus unique column names."""
    if not table.columns:
        raise errors.IllegalArgument(f"Table {table.name} needs at least one column")
    for what, items, limit in (("columns", table.columns, shape_limits.COLUMNS),
                               ("indexes", table.indexes, shape_limits.INDEXES)):
        if len(items) > limit:  # alters add them one request at a time
            raise errors.IllegalArgument(f"Table {table.name} would have {len(items)} {what}; the limit is {limit}")
    names = [c.name for c in table.columns]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise errors.IllegalArgument(f"Duplicate column names in table {table.name}: {', '.join(duplicates)}")
    if sum(c.auto_increment for c in table.columns) > 1:
        raise errors.IllegalArgument("Only one column can be auto-incremented")
    known = set(names)
    for where, path in _referenced_fields(table):
        if len(path) != 1 or path[0] not in known:
            raise errors.IllegalArgument(f"{where} references column {'.'.join(path)}, which is not in the table")


def table_mutation(changes: Changes) -> Callable[[Table], Table]:
    """The store mutation of an alter: apply the changes in order, then validate the result."""

    def mutate(table: Table) -> Table:
        changed = apply_table_changes(table, changes)
        validate_table(changed)
        return changed

    return mutate


def _referenced_fields(table: Table) -> list[tuple[str, list[str]]]:
    refs: list[tuple[str, list[str]]] = []
    for p in table.partitioning:
        if "fieldName" in p:
            refs.append(("partitioning", p["fieldName"]))
        refs.extend(("partitioning", f) for f in p.get("fieldNames", []))
    for order in table.sort_orders:
        term = order.get("sortTerm", {})
        if term.get("type") == "field":
            refs.append(("sortOrders", term["fieldName"]))
    for arg in (table.distribution or {}).get("funcArgs", []):
        if arg.get("type") == "field":
            refs.append(("distribution", arg["fieldName"]))
    for index in table.indexes:
        refs.extend(("indexes", f) for f in index.get("fieldNames", []))
    return refs


def engine_checked(mutate: Callable[[Table], Table], connector: Connector) -> Callable[[Table], Table]:
    """`mutate`, then the engine's own rules (Connector.check_table) on the result, inside the store
    transaction that applies it: a table the engine cannot hold is refused before anything changes."""

    def checked(table: Table) -> Table:
        changed = mutate(table)
        connector.check_table(changed)
        return changed

    return checked
