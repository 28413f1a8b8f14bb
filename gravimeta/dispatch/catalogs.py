"""Catalog operations. A catalog's provider names its connector; create validates the provider's
properties and tests nothing remote (testConnection does that on request)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from connectors.base import CatalogContext
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.changes import Changes, Unchanged, apply_catalog_changes, is_rename, property_changes
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.retirement import (
    forget_identities,
    identity_for,
    identity_name,
    retire,
    write_identity_in,
)
from gravimeta.entities import Catalog, Metalake, NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.catalog_locations import catalogs_of_provider
from gravimeta.store.database import disabled_for_test
from gravimeta.store.journal import OperationJournal
from gravimeta.store.server_settings import publish

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

        def work() -> Catalog:
            if not connector_class.process_local:
                # engine calls come next: never inside the store transaction a one-transaction (advisory)
                # claim has open; run again under the lease (Coordinator.run_structural)
                require_lasting_claim()
            with connector_class.location_guard(catalog.properties, self._others(catalog.provider)):
                # the engine's home first (the sqlite file), so that later "missing" means "unreachable"
                connector = connector_class(CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties)))
                try:
                    engine_door.prepare(connector)
                    identity = identity_for(connector)  # while its engine answers, before the store transaction
                    return self.store.create_catalog(
                        catalog, user, precheck=require_metalake_in_use,
                        also=lambda s, made: write_identity_in(s, made, identity) if identity else None)
                finally:
                    connector.close()

        created: Catalog = self.coordinator.run_structural(NameIdentifier.of(catalog.metalake), work)
        return created

    def _others(self, provider: str, exclude: tuple[str, str] | None = None) -> Callable[[], Iterable[Any]]:
        """The other catalogs of `provider` (all metalakes), for Connector.location_guard to read under its lock."""
        return lambda: catalogs_of_provider(self.store, provider, exclude)

    def alter(self, metalake: str, name: str, changes: Changes, user: str) -> Catalog:
        if disabled_for_test("identity_in_claim") and any(property_changes(changes)):  # TEST-ONLY: as before
            altered = self._alter(metalake, name, changes, user, record=False)
            self._identity_after_the_claim(altered)
            return altered
        return self._alter(metalake, name, changes, user, record=True)

    def _identity_after_the_claim(self, altered: Catalog) -> None:
        """TEST-ONLY (GRAVIMETA_HA_DISABLE=identity_in_claim): the engine identity recorded once the claim
        has ended, asking the engine of the properties this request wrote, as before it was recorded in the
        change's own transaction: another change made meanwhile is overwritten by this one's engine."""
        forget_identities(self.store, [altered])
        try:
            connector = self.connectors.registry.get(altered.provider)(
                CatalogContext(altered.metalake, altered.name, dict(altered.properties)))
        except errors.GravitinoError:
            return
        try:
            identity = identity_for(connector)
            if identity:
                publish(self.store.engine, identity_name(altered), identity)
        finally:
            connector.close()

    def _alter(self, metalake: str, name: str, changes: Changes, user: str, record: bool) -> Catalog:
        """A rename, and any change of the properties of a catalog whose engine keeps state outside the
        process, runs under the metalake's claim: the catalog is read again there; a change that moves it
        to another engine retires its key in the engine it leaves; the engine its properties name now is
        asked who it is (before the store transaction opens); and the store transaction that writes the
        properties records that identity with them (`record`), so the record always names the engine of
        the properties stored (retirement.py). Other changes (the comment) take the catalog's local lock."""
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

        renames = any(is_rename(c) for c in changes)
        engine_properties = bool(upserts or deletes) and not self.connectors.is_local(current)
        if renames or engine_properties:
            def work() -> Catalog:
                following = (self.journal.following_rename(f"/{metalake}/{name}", f"/{metalake}/{candidate.name}",
                                                           (metalake, name)) if renames else nullcontext())
                with guard(), following:
                    also = self._move(metalake, name, changes, record) if engine_properties else None
                    _, after = self.store.update_catalog(metalake, name, mutate, user, also=also)
                    if renames:
                        self.connectors.forget(metalake, name)
                    return after

            return self.coordinator.run_structural(NameIdentifier.of(metalake), work)
        with self.coordinator.local(NameIdentifier.of(metalake, name), LockType.WRITE), guard():
            return self.store.update_catalog(metalake, name, mutate, user)[1]

    def _move(self, metalake: str, name: str, changes: Changes,
              record: bool) -> Callable[[Session, Catalog], None] | None:
        """Under the metalake's claim (its token is above every one granted under the catalog), before the
        store takes a change of the catalog's properties: read the catalog again; if the change moves it
        to another engine, retire the catalog's key in the engine it leaves, as a drop does (retirement.py:
        its calls never go there again, so without it a call still in flight there could land at any
        later time, after another catalog on that engine imported the object it changes); then ask the
        engine the new properties name who it is. Returns what the store transaction of the change does
        besides (`record`): record that identity with the properties, or forget the record when the
        properties stored are not the ones asked about (or the engine could not say)."""
        require_lasting_claim()  # engine calls next: not inside a one-transaction (advisory) claim's transaction
        current = self.store.get_catalog(metalake, name)  # again, under the claim
        target = apply_catalog_changes(replace(current, properties=dict(current.properties)), list(changes))
        if self._moves_engine(current, target):
            retire(self.store, self.connectors, current)
        if not record:
            return None
        try:
            connector = self.connectors.registry.get(target.provider)(
                CatalogContext(target.metalake, target.name, dict(target.properties)))
        except errors.GravitinoError:
            connector = None  # no connector here (the allow-list): its first use records it, if ever
        try:
            identity = identity_for(connector) if connector is not None else None
        finally:
            if connector is not None:
                connector.close()
        return lambda s, after: write_identity_in(s, after, identity if after.properties == target.properties else None)

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
