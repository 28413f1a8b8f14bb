"""Table operations with Gravitino's lock choices: create/drop and rename within a schema WRITE-lock
the schema, a rename into another schema WRITE-locks the catalog, other alters READ-lock the table
(the store's row lock serialises them), load READ-locks the table. Create, rename and drop run as
journalled connector operations (intent, engine, store: gravimeta/dispatch/journal.py)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes, is_rename, target_schema
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use, check_in_use
from gravimeta.dispatch.intents import to_json
from gravimeta.dispatch.journal import Reconciler
from gravimeta.dispatch.table_rules import table_mutation, validate_table
from gravimeta.entities import NameIdentifier, Table
from gravimeta.store import EntityStore
from gravimeta.store import preconditions as pre

__all__ = ["TableDispatcher", "validate_table"]


class TableDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler | None = None):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.reconciler = reconciler or Reconciler(store, coordinator, connectors)

    def list(self, m: str, c: str, s: str) -> list[str]:
        with self.coordinator.local(NameIdentifier.of(m, c, s), LockType.READ):
            with self.store.snapshot():  # one snapshot for the in-use check and the read
                catalog_in_use(self.store, m, c)
                return self.store.list_tables(m, c, s)

    def load(self, m: str, c: str, s: str, name: str) -> Table:
        with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
            return self.store.load_table(m, c, s, name,  # in-use check and table in one statement
                                         lambda metalake_in_use, catalog_in_use:
                                         check_in_use(m, c, metalake_in_use, catalog_in_use))

    def create(self, m: str, c: str, s: str, table: Table, user: str) -> Table:
        validate_table(table)
        scope = NameIdentifier.of(m, c, s)
        created: Table = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, m, c, "create_table", {"m": m, "c": c, "user": user, "schema": s, "table": to_json(table)},
            lambda session: pre.table_creatable(self.store, session, m, c, s, table.name),
        ))
        return created

    def alter(self, m: str, c: str, s: str, name: str, changes: Changes, user: str) -> Table:
        mutate = table_mutation(changes)
        if not any(is_rename(ch) for ch in changes):
            with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
                connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
                before, after = self.store.update_table(m, c, s, name, mutate, user)
                connector.alter_table(s, before, after)
                return after
        new_schema = target_schema(changes)
        moving = new_schema is not None and new_schema != s
        scope = NameIdentifier.of(m, c) if moving else NameIdentifier.of(m, c, s)

        def check(session: Session) -> dict[str, object]:
            before, after = pre.table_renamable(self.store, session, m, c, s, name, mutate, new_schema)
            return {"before": to_json(before), "after": to_json(after)}

        payload = {"m": m, "c": c, "user": user, "schema": s, "name": name, "new_schema": new_schema,
                   "changes": changes}
        renamed: Table = self.coordinator.run_structural(
            scope, lambda: self.reconciler.run(scope, m, c, "rename_table", payload, check))
        return renamed

    def drop(self, m: str, c: str, s: str, name: str, purge: bool = False) -> bool:
        """Engine first, then the store; False when the store has no such table (the engine is not asked)."""
        scope = NameIdentifier.of(m, c, s)

        def refuse(connector: Connector) -> None:
            if purge and not connector.supports_purge:
                raise errors.UnsupportedOperation(f"Catalog {m}.{c} does not support purging tables")

        dropped = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, m, c, "drop_table", {"m": m, "c": c, "user": "", "schema": s, "name": name, "purge": purge},
            lambda session: pre.table_droppable(self.store, session, m, c, s, name), refuse,
        ))
        return dropped is not None
