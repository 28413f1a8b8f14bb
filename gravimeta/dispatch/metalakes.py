"""Metalake operations, with Gravitino's lock choices (gravitino-api.md §2.2)."""

from __future__ import annotations

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes, apply_metalake_changes, is_rename
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.entities import ROOT, Metalake, NameIdentifier
from gravimeta.store import EntityStore


class MetalakeDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors

    def list(self) -> list[Metalake]:
        with self.coordinator.local(ROOT, LockType.READ):
            return self.store.list_metalakes()

    def load(self, name: str) -> Metalake:
        with self.coordinator.local(NameIdentifier.of(name), LockType.READ):
            return self.store.get_metalake(name)

    def create(self, metalake: Metalake, user: str) -> Metalake:
        with self.coordinator.structural(ROOT, LockType.WRITE):
            return self.store.create_metalake(metalake, user)

    def alter(self, name: str, changes: Changes, user: str) -> Metalake:
        def mutate(metalake: Metalake) -> Metalake:
            if not metalake.in_use:
                raise errors.MetalakeNotInUse(f"Metalake {name} is not in use; enable it first")
            return apply_metalake_changes(metalake, changes)

        if any(is_rename(c) for c in changes):
            with self.coordinator.structural(ROOT, LockType.WRITE):
                _, after = self.store.update_metalake(name, mutate, user)
                self.connectors.forget(name)
                return after
        with self.coordinator.local(NameIdentifier.of(name), LockType.WRITE):
            return self.store.update_metalake(name, mutate, user)[1]

    def set_in_use(self, name: str, in_use: bool, user: str) -> None:
        def mutate(metalake: Metalake) -> Metalake:
            metalake.in_use = in_use
            return metalake

        with self.coordinator.local(NameIdentifier.of(name), LockType.WRITE):
            self.store.update_metalake(name, mutate, user)

    def drop(self, name: str, force: bool) -> bool:
        """Drop a metalake; force also drops it while in use and cascades to its catalogs."""

        def precheck(metalake: Metalake) -> None:
            if metalake.in_use and not force:
                raise errors.MetalakeInUse(f"Metalake {name} is in use; disable it first or use force=true")

        with self.coordinator.structural(ROOT, LockType.WRITE):
            try:
                catalogs = self.store.list_catalogs(name) if force else []
            except errors.NoSuchMetalake:
                return False  # dropping a missing metalake is not an error, force or not
            dropped = self.store.drop_metalake(name, cascade=force, precheck=precheck)
            if dropped:
                self.connectors.forget(name)
                for catalog in catalogs:
                    self.connectors.for_catalog(catalog).close()
                    self.connectors.forget(name, catalog.name)
        return dropped
