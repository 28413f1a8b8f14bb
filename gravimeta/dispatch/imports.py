"""Objects made in a catalog's engine outside gravimeta (docs/compatibility.md, "Engine objects made
outside gravimeta").

As in Gravitino (SchemaOperationDispatcher.loadSchema/importSchema, TableOperationDispatcher.loadTable/
importTable): a load of a schema or table that the store lacks and the catalog's engine has imports it,
i.e. stores it with a new id, the engine's definition (a table's columns and types as the engine reports
them) and no creator (so no owner until one is set, as Gravitino's import sets none). An import is a
structural change: it runs under the claim of the object's parent scope (the catalog for a schema, the
schema for a table: the scope every create, rename and drop of that object claims), and only after the
claim is held does it decide anything:
  1. the catalog (and so its connector) is read again, and open intents under the scope are repaired
     first (the next claimant's duty, as in journal.Reconciler); one that stays open refuses the import
     (ScopeBusy), and the engine is made to see this claim's fence (engine_door.barrier), so no earlier
     holder's call can change the engine after the import has read it;
  2. the store is asked again: a row that is there now (another replica imported it, or a create
     finished meanwhile) is the answer, and nothing is written;
  3. the engine is asked: NoSuchSchema/NoSuchTable when it has no such object (the load is a 404), its
     error when it cannot be reached;
  4. one guarded store transaction (the claim's fence is checked in it) inserts the row; a unique-key
     conflict (a replica without the distributed lock) is answered with the row that won.
A process-local connector (memory) mirrors the store, so it has nothing to import.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors, failpoints
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.paths import scope_path
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_keys import identity_key
from gravimeta.dispatch.guarded import catalog_in_use
from gravimeta.dispatch.intent_records import DropSchema, DropTable, Where
from gravimeta.dispatch.journal import Reconciler
from gravimeta.entities import NameIdentifier, Schema, Table
from gravimeta.store import EntityStore
from gravimeta.store import preconditions as pre
from gravimeta.store.database import disabled_for_test


class EngineImporter:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 reconciler: Reconciler):
        self.store, self.coordinator, self.connectors, self.reconciler = store, coordinator, connectors, reconciler

    def engine(self, m: str, c: str, reading: bool = False) -> Connector | None:
        """The catalog's connector when its engine keeps state of its own; None for a process-local one.
        `reading`: only to read through (ConnectorCache.for_catalog)."""
        connector = self.connectors.for_catalog(catalog_in_use(self.store, m, c), reading)
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
        """Under the claim: the catalog's engine (None: process-local), once nothing earlier can still
        change what the import is about to read. The open intents under the scope are repaired first; one
        that stays open (its engine could not be observed, or cannot yet be taken as final) refuses the
        import with ScopeBusy, since its engine call may still land. Then the barrier an engine mutation
        would meet: the engine sees this claim's token on the scope's identity key, so a call of an
        earlier holder (a drop of the very object being imported, say) that has not landed by now never
        will."""
        connector = self.engine(m, c)
        if connector is None:
            return None
        require_lasting_claim()  # the import spans several transactions and an engine call
        path = scope_path(scope)
        with self.store.snapshot() as s:
            left_open = self.reconciler.journal.pending_in(s, path, self.reconciler.settle_ms)
            key = identity_key(self.store, s, path)
        if left_open:
            self.reconciler.repairer.repair_all(left_open)
            with self.store.snapshot() as s:
                still = self.reconciler.journal.pending_in(s, path, self.reconciler.settle_ms)
            if still:
                raise errors.ScopeBusy(
                    f"An earlier operation on {'.'.join(scope.levels)} is still pending (operation {still[0].id}); "
                    "nothing was imported. Retry later, or see `gravimeta repair`")
        if engine_door.can_fence(connector) and not disabled_for_test("import_barrier"):  # TEST-ONLY switch
            try:
                engine_door.barrier(connector, key)
            except errors.StaleFence as exc:
                raise errors.FenceLost(f"{exc.message.rstrip('.')}. Nothing was imported; retry") from exc
        return connector

    # ------------------------------------------------------------------ drops of engine-only objects
    # Journalled like every drop (an intent first, the engine call through the door, then the store
    # step, which finds nothing to delete): an import racing the drop meets the intent and the barrier.

    def drop_engine_schema(self, scope: NameIdentifier, m: str, c: str, name: str, cascade: bool) -> bool:
        """Under the claim of `scope`, for a schema the store does not have: when the engine lists it, the
        engine's drop (its answer is the answer, as in Gravitino); otherwise False without a mutating call."""
        connector = self.engine(m, c)
        if connector is None or name not in connector.list_schemas():  # nothing to drop: no engine call
            return False

        def check(s: Session, record: DropSchema) -> DropSchema | None:
            return record if pre.schema_droppable(self.store, s, m, c, name, cascade) is None else None

        return self.reconciler.run(scope, DropSchema(Where(0, m, c), name, cascade, engine_only=True), check) is not None

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

        if disabled_for_test("engine_only_intent"):  # TEST-ONLY switch: the drop as before it was journalled
            with self.store.snapshot() as ses:
                key = identity_key(self.store, ses, scope_path(scope))
            return engine_door.change(lambda fence: connector.drop_table(s, name, fence=fence), key,
                                      why_no_intent=engine_door.UNJOURNALLED_FOR_TEST)

        def check(ses: Session, record: DropTable) -> DropTable | None:
            try:
                found = pre.table_droppable(self.store, ses, m, c, s, name)
            except errors.NoSuchSchema:  # a schema only the engine has
                found = None
            return record if found is None else None

        return self.reconciler.run(scope, DropTable(Where(0, m, c), s, name, purge, engine_only=True), check) is not None

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

