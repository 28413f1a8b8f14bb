"""Table operations with Gravitino's lock choices: create/drop and rename within a schema WRITE-lock
the schema, a rename into another schema WRITE-locks the catalog, other alters READ-lock the table
(the store's row lock serialises them), load READ-locks the table. Create, rename and drop run as
journalled connector operations (intent, engine, store: gravimeta/dispatch/journal.py). Tables made in
the catalog's engine outside gravimeta are listed, imported on load and dropped in the engine
(gravimeta/dispatch/imports.py)."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.changes import Changes, is_rename, target_schema
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use, check_in_use
from gravimeta.dispatch.imports import EngineImporter
from gravimeta.dispatch.intent_records import CreateTable, DropTable, RenameTable, Where
from gravimeta.dispatch.journal import Reconciler
from gravimeta.dispatch.table_rules import engine_checked, table_mutation, validate_table
from gravimeta.entities import NameIdentifier, Table
from gravimeta.store import EntityStore
from gravimeta.store import preconditions as pre

__all__ = ["TableDispatcher", "validate_table"]


class TableDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler | None = None):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.reconciler = reconciler or Reconciler(store, coordinator, connectors)
        self.importer = EngineImporter(store, coordinator, connectors, self.reconciler)

    def list(self, m: str, c: str, s: str) -> list[str]:
        """The store's and the engine's names (the engine's alone for a schema only the engine has)."""
        with self.coordinator.local(NameIdentifier.of(m, c, s), LockType.READ):
            missing: errors.NoSuchSchema | None = None
            with self.store.snapshot():  # one snapshot for the in-use check and the read
                catalog_in_use(self.store, m, c)
                try:
                    stored = self.store.list_tables(m, c, s)
                except errors.NoSuchSchema as exc:
                    stored, missing = [], exc
            connector = self.importer.engine(m, c, reading=True)
            if connector is None:
                if missing is not None:
                    raise missing
                return stored
            try:
                engine = connector.list_tables(s)
            except errors.NoSuchSchema:
                if missing is not None:
                    raise missing from None
                engine = []
            return sorted(set(stored) | set(engine))

    def load(self, m: str, c: str, s: str, name: str) -> Table:
        """The stored table; one the store lacks is imported from the catalog's engine (its schema first,
        when the store lacks that too: imports.py)."""
        with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
            try:
                return self.store.load_table(m, c, s, name,  # in-use check and table in one statement
                                             lambda metalake_in_use, catalog_in_use:
                                             check_in_use(m, c, metalake_in_use, catalog_in_use))
            except errors.NoSuchSchema:
                schema_missing = True
            except errors.NoSuchTable:
                schema_missing = False
        if schema_missing:
            connector = self.importer.engine(m, c, reading=True)  # the imports below look again
            if connector is None:
                raise errors.NoSuchSchema(f"Schema {m}.{c}.{s} does not exist")
            connector.load_table(s, name)  # as Gravitino: no schema is imported for a table the engine lacks
            self.importer.import_schema(m, c, s)
        return self.importer.import_table(m, c, s, name)

    def create(self, m: str, c: str, s: str, table: Table, user: str) -> Table:
        validate_table(table)
        scope = NameIdentifier.of(m, c, s)
        def check(session: Session, record: CreateTable) -> CreateTable:
            pre.table_creatable(self.store, session, m, c, s, table.name)
            return record

        created: Table = self.coordinator.run_structural(scope, lambda: self.reconciler.run(
            scope, CreateTable(Where(0, m, c, user), s, table), check,
            lambda connector: connector.check_table(table),  # before the intent: the engine would refuse it
        ))
        return created

    def alter(self, m: str, c: str, s: str, name: str, changes: Changes, user: str) -> Table:
        """A rename or move, and any alter of a table whose engine keeps state of its own, runs journalled
        under the schema's claim (intent, engine call through the door, store), as a rename that keeps
        the name. Only a process-local engine (memory, a mirror of the store) keeps the one-transaction
        alter under the table's READ lock and the row's version check."""
        mutate = table_mutation(changes)
        if not any(is_rename(ch) for ch in changes):
            with self.coordinator.local(NameIdentifier.of(m, c, s, name), LockType.READ):
                connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
                if connector.process_local:
                    def work(session: Session) -> Table:
                        before, after = self.store.update_table_in(session, m, c, s, name,
                                                                   engine_checked(mutate, connector), user)
                        engine_door.mirror(lambda: connector.alter_table(s, before, after))
                        return after

                    return self.store.write(work)
        new_schema = target_schema(changes)
        moving = new_schema is not None and new_schema != s
        scope = NameIdentifier.of(m, c) if moving else NameIdentifier.of(m, c, s)

        engine: list[Connector] = []  # the catalog's connector, picked by the operation's first transaction

        def check(session: Session, record: RenameTable) -> RenameTable:
            checked = engine_checked(mutate, engine[-1])
            before, after = pre.table_renamable(self.store, session, m, c, s, name, checked, new_schema)
            return replace(record, before=before, after=after)

        record = RenameTable(Where(0, m, c, user), s, name, new_schema, list(changes))

        def rename() -> Table:
            renamed: Table = self.reconciler.run(scope, record, check, engine.append)
            return renamed

        return self.coordinator.run_structural(scope, rename)

    def drop(self, m: str, c: str, s: str, name: str, purge: bool = False, user: str | None = None) -> bool:
        """Engine first, then the store. A table the store lacks is dropped in the engine alone, whose
        answer is the answer (as Gravitino's dropTable answers the catalog's drop)."""
        scope = NameIdentifier.of(m, c, s)

        def refuse(connector: Connector) -> None:
            if purge and not connector.supports_purge:
                raise errors.UnsupportedOperation(f"Catalog {m}.{c} does not support purging tables")

        def check(session: Session, record: DropTable) -> DropTable | None:
            return record if pre.table_droppable(self.store, session, m, c, s, name) is not None else None

        def work() -> bool:
            if self.reconciler.run(scope, DropTable(Where(0, m, c), s, name, purge), check, refuse) is not None:
                return True
            return self.importer.drop_engine_table(scope, m, c, s, name, purge)

        return self.coordinator.run_structural(scope, work)
