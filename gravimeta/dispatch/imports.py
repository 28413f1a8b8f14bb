"""Objects made in a catalog's engine outside gravimeta (issue 18 item 7, docs/compatibility.md §"Engine
objects made outside gravimeta").

As in Gravitino (SchemaOperationDispatcher.loadSchema/importSchema, TableOperationDispatcher.loadTable/
importTable): a load of a schema or table that the store lacks and the catalog's engine has imports it,
i.e. stores it with a new id, the engine's definition (a table's columns and types as the engine reports
them) and no creator (so no owner until one is set, as Gravitino's import sets none). An import is a
structural change: it runs under the claim of the object's parent scope (the catalog for a schema, the
schema for a table: the scope every create, rename and drop of that object claims), and only after the
claim is held does it decide anything:
  1. the catalog (and so its connector) is read again, and open intents under the scope are repaired
     first (the next claimant's duty, as in journal.Reconciler);
  2. the store is asked again: a row that is there now (another replica imported it, or a create
     finished meanwhile) is the answer, and nothing is written;
  3. the engine is asked: NoSuchSchema/NoSuchTable when it has no such object (the load is a 404), its
     error when it cannot be reached;
  4. one guarded store transaction (the claim's fence is checked in it) inserts the row; a unique-key
     conflict (a replica without the distributed lock) is answered with the row that won.
A process-local connector (memory) mirrors the store, so it has nothing to import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from connectors.base import Connector, Fence
from gravimeta import errors, failpoints
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.paths import scope_path
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_calls import call_fence
from gravimeta.dispatch.guarded import catalog_in_use
from gravimeta.dispatch.journal import Reconciler
from gravimeta.entities import NameIdentifier, Schema, Table
from gravimeta.store import EntityStore


class EngineImporter:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler):
        self.store, self.coordinator, self.connectors, self.reconciler = store, coordinator, connectors, reconciler

    def engine(self, m: str, c: str) -> Connector | None:
        """The catalog's connector when its engine keeps state of its own; None for a process-local one."""
        connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c))
        return None if connector.process_local else connector

    # ------------------------------------------------------------------ imports (each claims its parent)

    def import_schema(self, m: str, c: str, name: str) -> Schema:
        scope = NameIdentifier.of(m, c)
        imported: Schema = self.coordinator.run_structural(scope, lambda: self._import_schema(scope, m, c, name))
        return imported

    def import_table(self, m: str, c: str, s: str, name: str) -> Table:
        scope = NameIdentifier.of(m, c, s)
        imported: Table = self.coordinator.run_structural(scope, lambda: self._import_table(scope, m, c, s, name))
        return imported

    def _import_schema(self, scope: NameIdentifier, m: str, c: str, name: str) -> Schema:
        connector = self._claimed_engine(scope, m, c)
        try:
            return self.store.get_schema(m, c, name)
        except errors.NoSuchSchema:
            if connector is None:
                raise
        found = connector.load_schema(name)
        failpoints.hit("import.before_store", scope=scope_path(scope), entity=name)
        try:
            return self.store.write(lambda s: self.store.create_schema_in(s, m, c, replace(found, name=name), None))
        except errors.SchemaAlreadyExists:
            return self.store.get_schema(m, c, name)

    def _import_table(self, scope: NameIdentifier, m: str, c: str, s: str, name: str) -> Table:
        connector = self._claimed_engine(scope, m, c)
        try:
            return self.store.get_table(m, c, s, name)
        except errors.NoSuchTable:  # NoSuchSchema goes to the caller, which imports the schema first
            if connector is None:
                raise
        found = connector.load_table(s, name)
        failpoints.hit("import.before_store", scope=scope_path(scope), entity=name)
        try:
            return self.store.write(lambda ses: self.store.create_table_in(ses, m, c, s, replace(found, name=name), None))
        except errors.TableAlreadyExists:
            return self.store.get_table(m, c, s, name)

    def _claimed_engine(self, scope: NameIdentifier, m: str, c: str) -> Connector | None:
        """Under the claim: the catalog's engine (None: process-local), after the open intents under the
        scope were repaired."""
        connector = self.engine(m, c)
        if connector is None:
            return None
        require_lasting_claim()  # the import spans several transactions and an engine call
        with self.store.snapshot() as s:
            left_open = self.reconciler.journal.pending_in(s, scope_path(scope), self.reconciler.settle_ms)
        if left_open:
            self.reconciler.repairer.repair_all(left_open)
        return connector

    # ------------------------------------------------------------------ drops of engine-only objects

    def drop_engine_schema(self, scope: NameIdentifier, m: str, c: str, name: str, cascade: bool) -> bool:
        """Under the claim of `scope`, for a schema the store does not have: when the engine lists it, the
        engine's drop (its answer is the answer, as in Gravitino); otherwise False without a mutating call.
        Nothing to journal: the store has no row either way."""
        connector = self.engine(m, c)
        if connector is None or name not in connector.list_schemas():  # nothing to drop: no engine call
            return False
        require_lasting_claim()
        return _fenced(lambda fence: connector.drop_schema(name, cascade, fence=fence), scope)

    def drop_engine_table(self, scope: NameIdentifier, m: str, c: str, s: str, name: str, purge: bool) -> bool:
        """As drop_engine_schema, for a table."""
        connector = self.engine(m, c)
        if connector is None:
            return False
        try:
            if name not in connector.list_tables(s):  # nothing to drop: no engine call
                return False
        except errors.NoSuchSchema:
            return False
        require_lasting_claim()
        call = connector.purge_table if purge else connector.drop_table
        return _fenced(lambda fence: call(s, name, fence=fence), scope)

    def refuse_engine_tables(self, m: str, c: str, schema: str) -> None:
        """NonEmptySchema when the engine's schema has tables (a drop without cascade: the store alone
        does not know the tables made outside gravimeta)."""
        connector = self.engine(m, c)
        if connector is None:
            return
        try:
            tables = connector.list_tables(schema)
        except errors.NoSuchSchema:
            return
        if tables:
            raise errors.NonEmptySchema(f"Schema {m}.{c}.{schema} is not empty: its catalog's engine has "
                                        f"{len(tables)} table(s); use cascade=true to drop them")


def _fenced(call: Callable[[Fence], object], scope: NameIdentifier) -> bool:
    """An engine call with the running claim's fence; a stale fence is FenceLost (nothing was changed)."""
    try:
        return bool(call(call_fence(scope_path(scope))))
    except errors.StaleFence as exc:
        raise errors.FenceLost(f"{exc.message.rstrip('.')}. This drop was not saved; retry") from exc
