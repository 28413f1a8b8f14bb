"""Table operations with Gravitino's lock choices: create/drop and rename within a schema WRITE-lock
the schema, a rename into another schema WRITE-locks the catalog, other alters READ-lock the table
(the store's row lock serialises them), load READ-locks the table."""

from __future__ import annotations

from dataclasses import replace

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Change, apply_table_changes, is_rename, target_schema
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use, store_then_engine
from gravimeta.entities import NameIdentifier, Table
from gravimeta.store import EntityStore


def validate_table(table: Table) -> None:
    """The rules Gravitino's TableCreateRequest.validate() enforces, plus unique column names."""
    if not table.columns:
        raise errors.IllegalArgument(f"Table {table.name} needs at least one column")
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


class TableDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors

    def list(self, m: str, c: str, s: str) -> list[str]:
        with self.coordinator.local(NameIdentifier.of(m, c, s), LockType.READ):
            catalog_in_use(self.store, m, c)
            return self.store.list_tables(m, c, s)

    def load(self, m: str, c: str, s: str, name: str) -> Table:
        with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
            catalog_in_use(self.store, m, c)
            return self.store.get_table(m, c, s, name)

    def create(self, m: str, c: str, s: str, table: Table, user: str) -> Table:
        validate_table(table)
        with self.coordinator.structural(NameIdentifier.of(m, c, s), LockType.WRITE):
            connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
            return store_then_engine(
                lambda: self.store.create_table(m, c, s, table, user),
                lambda created: connector.create_table(s, created),
                lambda created: self.store.drop_table(m, c, s, created.name),
            )

    def alter(self, m: str, c: str, s: str, name: str, changes: list[Change], user: str) -> Table:
        new_schema = target_schema(changes)

        def mutate(table: Table) -> Table:
            changed = apply_table_changes(table, changes)
            validate_table(changed)
            return changed

        if not any(is_rename(ch) for ch in changes):
            with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
                connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
                before, after = self.store.update_table(m, c, s, name, mutate, user)
                connector.alter_table(s, before, after)
                return after
        moving = new_schema is not None and new_schema != s
        scope = NameIdentifier.of(m, c) if moving else NameIdentifier.of(m, c, s)
        with self.coordinator.structural(scope, LockType.WRITE):
            connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))

            def engine_step(result: tuple[Table, Table]) -> None:
                before, after = result
                connector.rename_table(s, before.name, new_schema or s, after.name)
                connector.alter_table(new_schema or s, replace(before, name=after.name), after)

            def undo(result: tuple[Table, Table]) -> None:
                before, after = result
                self.store.update_table(m, c, new_schema or s, after.name, lambda _: before, user, new_schema=s)

            return store_then_engine(
                lambda: self.store.update_table(m, c, s, name, mutate, user, new_schema=new_schema),
                engine_step,
                undo,
            )[1]

    def drop(self, m: str, c: str, s: str, name: str, purge: bool = False) -> bool:
        with self.coordinator.structural(NameIdentifier.of(m, c, s), LockType.WRITE):
            connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
            if purge and not connector.supports_purge:
                raise errors.UnsupportedOperation(f"Catalog {m}.{c} does not support purging tables")
            dropped = self.store.drop_table(m, c, s, name)
            if dropped:
                (connector.purge_table if purge else connector.drop_table)(s, name)
            return dropped

