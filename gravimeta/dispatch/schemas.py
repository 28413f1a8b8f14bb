"""Schema operations. Create and drop WRITE-lock the catalog and run as journalled connector
operations (intent, engine, store: gravimeta/dispatch/journal.py); alter WRITE-locks the schema.
Schemas made in the catalog's engine outside gravimeta are listed, imported on load and dropped in the
engine (gravimeta/dispatch/imports.py)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes, apply_schema_changes
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use
from gravimeta.dispatch.imports import EngineImporter
from gravimeta.dispatch.intent_records import CreateSchema, DropSchema, Where
from gravimeta.dispatch.journal import Reconciler
from gravimeta.entities import NameIdentifier, Schema
from gravimeta.store import EntityStore
from gravimeta.store import preconditions as pre

#: Gravitino's default gravitino.schema.separator, which splits a hierarchical schema's path
SCHEMA_SEPARATOR = ":"


class SchemaDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler | None = None):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.reconciler = reconciler or Reconciler(store, coordinator, connectors)
        self.importer = EngineImporter(store, coordinator, connectors, self.reconciler)

    def list(self, m: str, c: str, parent_schema: str = "") -> list[Schema]:
        """The catalog's schemas. A non-blank `parent_schema` asks for the sub-schemas of a hierarchical
        schema: like Gravitino 1.3 (SchemaOperations.validateParentSchema, SchemaNormalizeDispatcher),
        an empty segment between ':' separators is a 400, and since no catalog here has hierarchical
        schemas, any other value is a 405 once the catalog is known to exist and be in use."""
        if parent_schema.strip() and "" in parent_schema.split(SCHEMA_SEPARATOR):
            raise errors.IllegalArgument(f"The parentSchema '{parent_schema}' contains an empty segment after "
                                         f"splitting by '{SCHEMA_SEPARATOR}'.")
        with self.coordinator.local(NameIdentifier.of(m, c), LockType.READ):
            with self.store.snapshot():  # one snapshot for the in-use check and the read
                catalog_in_use(self.store, m, c)
                if parent_schema.strip():
                    raise errors.UnsupportedOperation(
                        f"The catalog [{m}.{c}] does not support hierarchical schemas, so listing schemas "
                        "under a parent schema is not supported.")
                stored = self.store.list_schemas(m, c)
            # the engine's names too (outside the snapshot: no store transaction waits on an engine);
            # an engine that cannot be reached fails the list rather than leave it a guess
            connector = self.importer.engine(m, c, reading=True)
            if connector is None:
                return stored
            known = {schema.name for schema in stored}
            found = stored + [Schema(name) for name in connector.list_schemas() if name not in known]
            return sorted(found, key=lambda schema: schema.name)

    def load(self, m: str, c: str, name: str) -> Schema:
        """The stored schema; one the store lacks is imported from the catalog's engine (imports.py)."""
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.READ):
            with self.store.snapshot():
                catalog_in_use(self.store, m, c)
                try:
                    return self.store.get_schema(m, c, name)
                except errors.NoSuchSchema:
                    pass
        return self.importer.import_schema(m, c, name)

    def create(self, m: str, c: str, schema: Schema, user: str) -> Schema:
        scope = NameIdentifier.of(m, c)
        def check(s: Session, record: CreateSchema) -> CreateSchema:
            pre.schema_creatable(self.store, s, m, c, schema.name)
            return record

        created: Schema = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, CreateSchema(Where(0, m, c, user), schema), check))
        return created

    def alter(self, m: str, c: str, name: str, changes: Changes, user: str) -> Schema:
        with self.coordinator.local(NameIdentifier.of(m, c, name), LockType.WRITE):
            catalog_in_use(self.store, m, c)
            return self.store.update_schema(m, c, name, lambda s: apply_schema_changes(s, changes), user)[1]

    def drop(self, m: str, c: str, name: str, cascade: bool, user: str | None = None) -> bool:
        """Engine first (with cascade: the store and, without cascade, the engine decided emptiness), then
        the store. A schema the store lacks is dropped in the engine alone, whose answer is the answer."""
        scope = NameIdentifier.of(m, c)
        def check(s: Session, record: DropSchema) -> DropSchema | None:
            return record if pre.schema_droppable(self.store, s, m, c, name, cascade) is not None else None

        def work() -> bool:
            if not cascade:
                self.importer.refuse_engine_tables(m, c, name)
            if self.reconciler.run(scope, DropSchema(Where(0, m, c), name, cascade), check) is not None:
                return True
            return self.importer.drop_engine_schema(scope, m, c, name, cascade)

        return self.coordinator.run_structural(scope, work)
