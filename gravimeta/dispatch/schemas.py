"""Schema operations. Create and drop WRITE-lock the catalog; alter WRITE-locks the schema."""

from __future__ import annotations

from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Change, apply_schema_changes
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use, store_then_engine
from gravimeta.entities import NameIdentifier, Schema
from gravimeta.store import EntityStore


class SchemaDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors

    def list(self, m: str, c: str) -> list[Schema]:
        with self.coordinator.local(NameIdentifier.of(m, c), LockType.READ):
            catalog_in_use(self.store, m, c)
            return self.store.list_schemas(m, c)

    def load(self, m: str, c: str, name: str) -> Schema:
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.READ):
            catalog_in_use(self.store, m, c)
            return self.store.get_schema(m, c, name)

    def create(self, m: str, c: str, schema: Schema, user: str) -> Schema:
        with self.coordinator.structural(NameIdentifier.of(m, c), LockType.WRITE):
            connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
            return store_then_engine(
                lambda: self.store.create_schema(m, c, schema, user),
                connector.create_schema,
                lambda created: self.store.drop_schema(m, c, created.name, cascade=False),
            )

    def alter(self, m: str, c: str, name: str, changes: list[Change], user: str) -> Schema:
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.WRITE):
            catalog_in_use(self.store, m, c)
            return self.store.update_schema(m, c, name, lambda s: apply_schema_changes(s, changes), user)[1]

    def drop(self, m: str, c: str, name: str, cascade: bool) -> bool:
        with self.coordinator.structural(NameIdentifier.of(m, c), LockType.WRITE):
            connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
            dropped = self.store.drop_schema(m, c, name, cascade)
            if dropped:
                connector.drop_schema(name, cascade=True)
            return dropped
