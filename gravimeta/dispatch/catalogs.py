"""Catalog operations. A catalog's provider names its connector; create validates the provider's
properties and tests nothing remote (testConnection does that on request)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import replace
from typing import Any

from connectors.base import CatalogContext
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.changes import Changes, Unchanged, apply_catalog_changes, is_rename, property_changes
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.retirement import forget_identities, note_identity, retire
from gravimeta.entities import Catalog, Metalake, NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.catalog_locations import catalogs_of_provider
from gravimeta.store.database import disabled_for_test
from gravimeta.store.journal import OperationJournal

SUPPORTED_TYPES = ("relational",)


def require_metalake_in_use(metalake: Metalake) -> None:
    if not metalake.in_use:
        raise errors.MetalakeNotInUse(f"Metalake {metalake.name} is not in use; enable it first")


class CatalogDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.journal = OperationJournal(store)

    def list(self, metalake: str) -> list[Catalog]:
        with self.coordinator.local(NameIdentifier.of(metalake), LockType.READ):
            require_metalake_in_use(self.store.get_metalake(metalake))
            return self.store.list_catalogs(metalake)

    def load(self, metalake: str, name: str) -> Catalog:
        with self.coordinator.local(NameIdentifier.of(metalake, name), LockType.READ):
            require_metalake_in_use(self.store.get_metalake(metalake))
            return self.store.get_catalog(metalake, name)

    def shown_properties(self, catalog: Catalog) -> dict[str, str]:
        """The catalog's properties without those its provider hides from answers (Gravitino's
        BaseCatalog.properties(); a provider no longer installed hides nothing)."""
        try:
            provider = self.connectors.registry.get(catalog.provider)
        except errors.GravitinoError:
            return dict(catalog.properties)
        return provider.catalog_properties.shown(catalog.properties)

    def create(self, catalog: Catalog, user: str) -> Catalog:
        self._check_creatable(catalog)
        connector_class = self.connectors.registry.get(catalog.provider)
        with self.coordinator.structural(NameIdentifier.of(catalog.metalake), LockType.WRITE), \
                connector_class.location_guard(catalog.properties, self._others(catalog.provider)):
            # the engine's home first (the sqlite file), so that later "missing" means "unreachable"
            connector = connector_class(CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties)))
            try:
                engine_door.prepare(connector)
                created = self.store.create_catalog(catalog, user, precheck=require_metalake_in_use)
                note_identity(self.store, connector, created)  # while its engine answers (retirement.py)
                return created
            finally:
                connector.close()

    def _others(self, provider: str, exclude: tuple[str, str] | None = None) -> Callable[[], Iterable[Any]]:
        """The other catalogs of `provider` (all metalakes), for Connector.location_guard to read under its lock."""
        return lambda: catalogs_of_provider(self.store, provider, exclude)

    def alter(self, metalake: str, name: str, changes: Changes, user: str) -> Catalog:
        altered = self._alter(metalake, name, changes, user)
        if any(property_changes(changes)):  # the properties may name another engine now: record its identity
            forget_identities(self.store, [altered])
            try:
                connector = self.connectors.registry.get(altered.provider)(
                    CatalogContext(altered.metalake, altered.name, dict(altered.properties)))
            except errors.GravitinoError:
                return altered  # no connector here (the allow-list): its first use records it, if ever
            try:
                note_identity(self.store, connector, altered)
            finally:
                connector.close()
        return altered

    def _alter(self, metalake: str, name: str, changes: Changes, user: str) -> Catalog:
        current = self.load(metalake, name)
        if not current.in_use:
            raise errors.CatalogNotInUse(f"Catalog {metalake}.{name} is not in use; enable it first")
        provider = self.connectors.registry.get(current.provider)
        upserts, deletes = property_changes(changes)
        # a property change may move the catalog onto files another catalog owns: the rules first (a
        # refused change must not wait for the location lock), then the guard on what the change makes
        candidate = apply_catalog_changes(replace(current, properties=dict(current.properties)), list(changes))
        provider.validate_property_changes(upserts, deletes, candidate.properties)

        def guard() -> AbstractContextManager[None]:  # one for each attempt (Coordinator.run_structural)
            return (provider.location_guard(candidate.properties, self._others(current.provider, (metalake, name)))
                    if upserts or deletes else nullcontext())

        def mutate(catalog: Catalog) -> Catalog:
            if not catalog.in_use:
                raise errors.CatalogNotInUse(f"Catalog {metalake}.{name} is not in use; enable it first")
            altered = apply_catalog_changes(catalog, changes)
            provider.validate_property_changes(upserts, deletes, altered.properties)
            return altered

        if any(is_rename(c) for c in changes):
            def rename() -> Catalog:
                with guard(), self.journal.following_rename(f"/{metalake}/{name}", f"/{metalake}/{candidate.name}",
                                                            (metalake, name)):
                    self._retire_if_moved(metalake, name, changes)
                    _, after = self.store.update_catalog(metalake, name, mutate, user)
                    self.connectors.forget(metalake, name)
                    return after

            return self.coordinator.run_structural(NameIdentifier.of(metalake), rename)
        if (upserts or deletes) and self._moves_engine(current, candidate):
            def move() -> Catalog:
                with guard():
                    self._retire_if_moved(metalake, name, changes)
                    return self.store.update_catalog(metalake, name, mutate, user)[1]

            return self.coordinator.run_structural(NameIdentifier.of(metalake), move)
        with self.coordinator.local(NameIdentifier.of(metalake, name), LockType.WRITE), guard():
            return self.store.update_catalog(metalake, name, mutate, user)[1]

    def _moves_engine(self, before: Catalog, after: Catalog) -> bool:
        """Whether a property change moves the catalog to another engine: one that shares no location
        with its engine so far (Connector.engine_locations). Not when either cannot say where it is."""
        if self.connectors.is_local(before) or disabled_for_test("retire_moved"):  # TEST-ONLY switch
            return False
        was, will = (self._locations(catalog) for catalog in (before, after))
        return bool(was) and bool(will) and was.isdisjoint(will)

    def _locations(self, catalog: Catalog) -> frozenset[str]:
        try:
            connector = self.connectors.registry.get(catalog.provider)(
                CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties)))
        except errors.GravitinoError:
            return frozenset()  # properties that no longer make a connector here: nothing to compare
        try:
            return connector.engine_locations()
        finally:
            connector.close()

    def _retire_if_moved(self, metalake: str, name: str, changes: Changes) -> None:
        """Under the metalake's claim (its token is above every one granted under the catalog), before
        the store takes a change that moves the catalog to another engine: retire the catalog's key in the
        engine it leaves, as a drop does (retirement.py). The catalog's calls never go there again, so
        without it a call still in flight there could land at any later time, after another catalog on
        that engine imported the object it changes."""
        current = self.store.get_catalog(metalake, name)  # again, under the claim
        if self._moves_engine(current, apply_catalog_changes(replace(current, properties=dict(current.properties)),
                                                             list(changes))):
            retire(self.store, self.connectors, current)

    def set_in_use(self, metalake: str, name: str, in_use: bool, user: str) -> None:
        """Enable or disable; setting the state the catalog already has writes nothing (Gravitino's
        CatalogManager returns early then). It claims the metalake's scope (the scope of its TreeLock)
        like a structural change: a disable waits for the structural changes running in the catalog on
        any replica, so none of them can land after the disable was acknowledged."""

        def mutate(catalog: Catalog) -> Catalog:
            if catalog.in_use == in_use:
                raise Unchanged
            catalog.in_use = in_use
            return catalog

        with self.coordinator.structural(NameIdentifier.of(metalake), LockType.WRITE), suppress(Unchanged):
            require_metalake_in_use(self.store.get_metalake(metalake))
            self.store.update_catalog(metalake, name, mutate, user)

    def drop(self, metalake: str, name: str, force: bool, user: str | None = None) -> bool:
        """Drop a catalog; force also drops it while in use and cascades to its schemas and tables."""

        def precheck(catalog: Catalog) -> None:
            if catalog.in_use and not force:
                raise errors.CatalogInUse(f"Catalog {metalake}.{name} is in use; disable it first or use force=true")

        def work() -> bool:  # run_structural: again under the lease when the retirement needs its token
            try:
                catalog = self.store.get_catalog(metalake, name)
            except errors.NotFound:
                catalog = None
            if catalog is not None and (force or not catalog.in_use):  # what the store's prechecks let through
                retire(self.store, self.connectors, catalog)
            dropped = self.store.drop_catalog(metalake, name, cascade=force, precheck=precheck,
                                              metalake_precheck=require_metalake_in_use)
            if dropped:
                for connector in self.connectors.forget(metalake, name):
                    connector.close()
                if catalog is not None:
                    forget_identities(self.store, [catalog])
            return dropped

        return self.coordinator.run_structural(NameIdentifier.of(metalake), work)

    def test_connection(self, metalake: str, name: str, changes: Changes) -> None:
        """Test an existing catalog's connection with proposed changes applied (not stored)."""
        catalog = self.load(metalake, name)
        provider = self.connectors.registry.get(catalog.provider)
        upserts, deletes = property_changes(changes)
        candidate = apply_catalog_changes(catalog, list(changes))
        provider.validate_property_changes(upserts, deletes, candidate.properties)
        self.connectors.for_catalog(candidate).test_connection()

    def test_new(self, catalog: Catalog) -> None:
        """Gravitino's pre-create testConnection: the checks of a create (metalake in use, no catalog of
        that name, a served type, a known provider, valid properties), then the connector's probe. No
        lock and nothing stored; the probe uses a connector of its own, never a cached one."""
        require_metalake_in_use(self.store.get_metalake(catalog.metalake))
        try:
            self.store.get_catalog(catalog.metalake, catalog.name)
        except errors.NoSuchCatalog:
            pass
        else:
            raise errors.CatalogAlreadyExists(f"Catalog {catalog.metalake}.{catalog.name} already exists")
        self._check_creatable(catalog)
        provider = self.connectors.registry.get(catalog.provider)
        provider(CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties))).test_connection()

    def _check_creatable(self, catalog: Catalog) -> None:
        if catalog.type not in SUPPORTED_TYPES:
            raise errors.UnsupportedOperation(
                f"Catalog type {catalog.type} is not supported; gravimeta serves {', '.join(SUPPORTED_TYPES)}"
            )
        self.connectors.registry.get(catalog.provider).validate_properties(catalog.properties)
