"""Schema operations. Create and drop WRITE-lock the catalog and run as journalled connector
operations (intent, engine, store: gravimeta/dispatch/journal.py); alter WRITE-locks the schema."""

from __future__ import annotations

from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes, apply_schema_changes
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use
from gravimeta.dispatch.intents import to_json
from gravimeta.dispatch.journal import Reconciler
from gravimeta.entities import NameIdentifier, Schema
from gravimeta.store import EntityStore
from gravimeta.store import preconditions as pre


class SchemaDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler | None = None):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.reconciler = reconciler or Reconciler(store, coordinator, connectors)

    def list(self, m: str, c: str) -> list[Schema]:
        with self.coordinator.local(NameIdentifier.of(m, c), LockType.READ):
            with self.store.snapshot():  # one snapshot for the in-use check and the read
                catalog_in_use(self.store, m, c)
                return self.store.list_schemas(m, c)

    def load(self, m: str, c: str, name: str) -> Schema:
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.READ):
            with self.store.snapshot():
                catalog_in_use(self.store, m, c)
                return self.store.get_schema(m, c, name)

    def create(self, m: str, c: str, schema: Schema, user: str) -> Schema:
        scope = NameIdentifier.of(m, c)
        created: Schema = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, m, c, "create_schema", {"m": m, "c": c, "user": user, "schema": to_json(schema)},
            lambda s: pre.schema_creatable(self.store, s, m, c, schema.name),
        ))
        return created

    def alter(self, m: str, c: str, name: str, changes: Changes, user: str) -> Schema:
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.WRITE):
            catalog_in_use(self.store, m, c)
            return self.store.update_schema(m, c, name, lambda s: apply_schema_changes(s, changes), user)[1]

    def drop(self, m: str, c: str, name: str, cascade: bool) -> bool:
        """Engine first (with cascade: the store decided emptiness), then the store; False when the
        store has no such schema (the engine is not asked)."""
        scope = NameIdentifier.of(m, c)
        dropped = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, m, c, "drop_schema", {"m": m, "c": c, "user": "", "name": name, "cascade": cascade},
            lambda s: pre.schema_droppable(self.store, s, m, c, name, cascade),
        ))
        return dropped is not None
