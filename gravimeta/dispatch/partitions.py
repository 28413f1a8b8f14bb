"""Partition operations (Gravitino's PartitionOperationDispatcher): reads READ-lock the table, an add
or a drop is a structural change of the table: it claims the table's scope across replicas and WRITE-
locks it (coordinator.run_structural), so it is ordered with every create, rename and drop of the table,
its schema and its catalog (all of which claim an ancestor scope).

Where the partitions live is the connector's answer (Connector.partitions, docs/consistency.md §8,
docs/tags-statistics-partitions.md):
- in the store (`memory`): the whole add or drop is one store transaction behind the claim's fence
  guard (gravimeta/store/partitions.py); nothing outside the store changes, so nothing needs repair;
- in the engine (`hive`): the store keeps nothing about partitions. One store transaction checks what
  the store decides (metalake and catalog in use, the table exists) and runs the claim's fence guard,
  so a holder whose claim was taken over stops before the engine call; then the engine call, through
  the engine door, fenced by the table's identity key (engine_door.NO_STORE_STATE: no intent). A crash or
  a lost answer after it leaves the partition added (or dropped) in the engine only, which is the one
  place that has partitions: the next read shows it, a retried add answers PartitionAlreadyExists and a
  retried drop `dropped: false`, as Gravitino does. There is no store state to reconcile, so no journal;
- nowhere (`sqlite`): 405 UnsupportedOperation, after the table was found (Gravitino's order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from connectors.base import PARTITIONS_IN_ENGINE, PARTITIONS_IN_STORE, Connector
from gravimeta import errors, failpoints, partitions
from gravimeta.concurrency import paths
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache, ConnectorNotReady
from gravimeta.dispatch.engine_keys import identity_key
from gravimeta.dispatch.guarded import catalog_in_use_in
from gravimeta.dispatch.journal import READY_ATTEMPTS
from gravimeta.entities import NameIdentifier
from gravimeta.partitions import Partition
from gravimeta.store import EntityStore, guard
from gravimeta.store.partitions import PartitionStore


@dataclass
class _Found:
    connector: Connector
    kind: str
    key: str = ""  # the table's identity key (engine_keys.py), for an engine-kept partition's fence


class PartitionDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.kept = PartitionStore(store)

    def _find(self, s: Session, m: str, c: str, sc: str, t: str, purge: bool = False, writing: bool = False) -> _Found:
        """In-use checks, the table in the store, then whether the catalog has partitions at all. `writing`:
        `s` is a write transaction, in which no new connector is made (ConnectorCache.ready)."""
        catalog = catalog_in_use_in(s, m, c)
        connector = self.connectors.ready(catalog, s) if writing else self.connectors.for_catalog(catalog, reading=True)
        self.store.table_row(s, m, c, sc, t)  # NoSuchSchema / NoSuchTable before anything else
        kind = connector.partitions
        if kind not in (PARTITIONS_IN_STORE, PARTITIONS_IN_ENGINE):
            raise errors.UnsupportedOperation(
                f"Table {m}.{c}.{sc}.{t} does not support partition operations (provider of catalog {c})")
        if purge and not connector.supports_partition_purge:
            raise errors.UnsupportedOperation("Partition purging is not supported")
        return _Found(connector, kind)

    # ------------------------------------------------------------------ reads

    def list(self, m: str, c: str, sc: str, t: str) -> list[Partition]:
        with self.coordinator.local(NameIdentifier.of(m, c, sc, t), LockType.READ):
            with self.store.snapshot() as s:
                found = self._find(s, m, c, sc, t)
                if found.kind == PARTITIONS_IN_STORE:
                    return self.kept.list_in(s, m, c, sc, t)
            return found.connector.list_partitions(sc, t)

    def get(self, m: str, c: str, sc: str, t: str, name: str) -> Partition:
        with self.coordinator.local(NameIdentifier.of(m, c, sc, t), LockType.READ):
            with self.store.snapshot() as s:
                found = self._find(s, m, c, sc, t)
                if found.kind == PARTITIONS_IN_STORE:
                    return self.kept.get_in(s, m, c, sc, t, name)
            return found.connector.get_partition(sc, t, name)

    # ------------------------------------------------------------------ changes (structural)

    def add(self, m: str, c: str, sc: str, t: str, partition: Partition, user: str) -> Partition:
        def check(table: Any) -> Partition:
            return partitions.for_table(partition, table.partitioning, f"{m}.{c}.{sc}.{t}")

        def change(found: _Found, s: Session | None) -> Partition:
            if s is not None:
                return self.kept.add_in(s, m, c, sc, t, check, user)
            return engine_door.change(lambda fence: found.connector.add_partition(sc, t, partition, fence=fence),
                                      found.key, why_no_intent=engine_door.NO_STORE_STATE)

        added: Partition = self._structural(m, c, sc, t, change)
        return added

    def drop(self, m: str, c: str, sc: str, t: str, name: str, purge: bool = False) -> bool:
        def change(found: _Found, s: Session | None) -> bool:
            if s is not None:
                return self.kept.drop_in(s, m, c, sc, t, name)
            return engine_door.change(lambda fence: found.connector.drop_partition(sc, t, name, purge, fence=fence),
                                      found.key, why_no_intent=engine_door.NO_STORE_STATE)

        dropped: bool = self._structural(m, c, sc, t, change, purge)
        return dropped

    def _structural(self, m: str, c: str, sc: str, t: str, change: Any, purge: bool = False) -> Any:
        """Under the table scope's claim: one store transaction (the checks, the fence guard, and for a
        store-kept partition the change itself), then for an engine-kept one the engine call."""
        scope = NameIdentifier.of(m, c, sc, t)

        def work() -> Any:
            holder: dict[str, _Found] = {}

            def look(s: Session) -> None:  # reads before the fence guard (EntityStore.write's prelude)
                holder["found"] = found = self._find(s, m, c, sc, t, purge, writing=True)
                if found.kind == PARTITIONS_IN_ENGINE:
                    require_lasting_claim()  # the engine call comes after this transaction
                    found.key = identity_key(self.store, s, paths.scope_path(scope))

            def in_store(s: Session) -> Any:
                found = holder["found"]
                return change(found, s) if found.kind == PARTITIONS_IN_STORE else None

            for _ in range(READY_ATTEMPTS):
                try:
                    with guard.last_write(lambda: holder["found"].kind == PARTITIONS_IN_STORE):
                        result = self.store.write(in_store, prelude=look)
                    break
                except ConnectorNotReady as exc:  # made outside the transaction (it wrote nothing), then again
                    self.connectors.for_catalog(exc.catalog)
            else:
                raise errors.ScopeBusy(f"The properties of catalog {m}.{c} kept changing while this operation made "
                                       "its connector; nothing was changed, retry later")
            found = holder["found"]
            if found.kind == PARTITIONS_IN_STORE:
                return result
            failpoints.hit("partitions.before_engine", table=str(scope))
            return change(found, None)

        return self.coordinator.run_structural(scope, work)
