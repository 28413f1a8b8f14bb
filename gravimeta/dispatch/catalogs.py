"""Catalog operations. A catalog's provider names its connector; create validates the provider's
properties and tests nothing remote (testConnection does that on request)."""

from __future__ import annotations

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes, apply_catalog_changes, is_rename
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.entities import Catalog, Metalake, NameIdentifier
from gravimeta.store import EntityStore

SUPPORTED_TYPES = ("relational",)


def require_metalake_in_use(metalake: Metalake) -> None:
    if not metalake.in_use:
        raise errors.MetalakeNotInUse(f"Metalake {metalake.name} is not in use; enable it first")


class CatalogDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors

    def list(self, metalake: str) -> list[Catalog]:
        with self.coordinator.local(NameIdentifier.of(metalake), LockType.READ):
            require_metalake_in_use(self.store.get_metalake(metalake))
            return self.store.list_catalogs(metalake)

    def load(self, metalake: str, name: str) -> Catalog:
        with self.coordinator.local(NameIdentifier.of(metalake, name), LockType.READ):
            require_metalake_in_use(self.store.get_metalake(metalake))
            return self.store.get_catalog(metalake, name)

    def create(self, catalog: Catalog, user: str) -> Catalog:
        if catalog.type not in SUPPORTED_TYPES:
            raise errors.UnsupportedOperation(
                f"Catalog type {catalog.type} is not supported; gravimeta serves {', '.join(SUPPORTED_TYPES)}"
            )
        self.connectors.registry.get(catalog.provider).validate_properties(catalog.properties)
        with self.coordinator.structural(NameIdentifier.of(catalog.metalake), LockType.WRITE):
            return self.store.create_catalog(catalog, user, precheck=require_metalake_in_use)

    def alter(self, metalake: str, name: str, changes: Changes, user: str) -> Catalog:
        current = self.load(metalake, name)
        if not current.in_use:
            raise errors.CatalogNotInUse(f"Catalog {metalake}.{name} is not in use; enable it first")
        candidate = apply_catalog_changes(current, list(changes))
        self.connectors.registry.get(current.provider).validate_properties(candidate.properties)

        def mutate(catalog: Catalog) -> Catalog:
            if not catalog.in_use:
                raise errors.CatalogNotInUse(f"Catalog {metalake}.{name} is not in use; enable it first")
            return apply_catalog_changes(catalog, changes)

        if any(is_rename(c) for c in changes):
            with self.coordinator.structural(NameIdentifier.of(metalake), LockType.WRITE):
                _, after = self.store.update_catalog(metalake, name, mutate, user)
                self.connectors.forget(metalake, name)
                return after
        with self.coordinator.local(NameIdentifier.of(metalake, name), LockType.WRITE):
            return self.store.update_catalog(metalake, name, mutate, user)[1]

    def set_in_use(self, metalake: str, name: str, in_use: bool, user: str) -> None:
        def mutate(catalog: Catalog) -> Catalog:
            catalog.in_use = in_use
            return catalog

        with self.coordinator.local(NameIdentifier.of(metalake), LockType.WRITE):
            require_metalake_in_use(self.store.get_metalake(metalake))
            self.store.update_catalog(metalake, name, mutate, user)

    def drop(self, metalake: str, name: str, force: bool) -> bool:
        """Drop a catalog; force also drops it while in use and cascades to its schemas and tables."""

        def precheck(catalog: Catalog) -> None:
            if catalog.in_use and not force:
                raise errors.CatalogInUse(f"Catalog {metalake}.{name} is in use; disable it first or use force=true")

        with self.coordinator.structural(NameIdentifier.of(metalake), LockType.WRITE):
            dropped = self.store.drop_catalog(metalake, name, cascade=force, precheck=precheck)
            if dropped:
                for connector in self.connectors.forget(metalake, name):
                    connector.close()
        return dropped

    def test_connection(self, metalake: str, name: str, changes: Changes) -> None:
        catalog = self.load(metalake, name)
        candidate = apply_catalog_changes(catalog, list(changes))
        connector_class = self.connectors.registry.get(candidate.provider)
        connector_class.validate_properties(candidate.properties)
        self.connectors.for_catalog(candidate).test_connection()
