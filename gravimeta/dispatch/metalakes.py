"""Metalake operations, with Gravitino's lock choices (gravitino-api.md §2.2)."""

from __future__ import annotations

from contextlib import suppress

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import IN_USE, Changes, Unchanged, apply_metalake_changes, is_rename
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.retirement import forget_identities, retire
from gravimeta.entities import ROOT, Metalake, NameIdentifier
from gravimeta.ownership.authorizer import Authorizer
from gravimeta.store import EntityStore
from gravimeta.store.journal import OperationJournal


class MetalakeDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 authorizer: Authorizer | None = None):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.authorizer = authorizer or Authorizer.off()

    def list(self) -> list[Metalake]:
        with self.coordinator.local(ROOT, LockType.READ):
            return self.store.list_metalakes()

    def load(self, name: str) -> Metalake:
        with self.coordinator.local(NameIdentifier.of(name), LockType.READ):
            return self.store.get_metalake(name)

    def create(self, metalake: Metalake, user: str) -> Metalake:
        with self.coordinator.structural(ROOT, LockType.WRITE):
            created = self.store.create_metalake(metalake, user)
        self.authorizer.register_creator(created.name, user)
        return created

    def alter(self, name: str, changes: Changes, user: str) -> Metalake:
        def mutate(metalake: Metalake) -> Metalake:
            if not metalake.in_use:
                raise errors.MetalakeNotInUse(f"Metalake {name} is not in use; enable it first")
            return apply_metalake_changes(metalake, changes)

        if any(is_rename(c) for c in changes):
            new_name = apply_metalake_changes(Metalake(name), list(changes)).name
            with self.coordinator.structural(ROOT, LockType.WRITE), \
                    OperationJournal(self.store).following_rename(f"/{name}", f"/{new_name}"):
                _, after = self.store.update_metalake(name, mutate, user)
                self.connectors.forget(name)
                return after
        with self.coordinator.local(NameIdentifier.of(name), LockType.WRITE):
            return self.store.update_metalake(name, mutate, user)[1]

    def set_in_use(self, name: str, in_use: bool, user: str) -> None:
        """Enable or disable. Like Gravitino's MetalakeManager, a change also stores `in-use` among the
        metalake's properties (so later alter responses show it), and setting the state it already has
        writes nothing. It claims the metalake's scope like a structural change: a disable waits for the
        structural changes running inside the metalake on any replica, so none of them can land after
        the disable was acknowledged (each checks in-use under its own claim)."""

        def mutate(metalake: Metalake) -> Metalake:
            if metalake.in_use == in_use:
                raise Unchanged
            metalake.in_use = in_use
            metalake.properties[IN_USE] = "true" if in_use else "false"
            return metalake

        with self.coordinator.structural(NameIdentifier.of(name), LockType.WRITE), suppress(Unchanged):
            self.store.update_metalake(name, mutate, user)

    def drop(self, name: str, force: bool, user: str | None = None) -> bool:
        """Drop a metalake; force also drops it while in use and cascades to its catalogs."""

        def precheck(metalake: Metalake) -> None:
            if metalake.in_use and not force:
                raise errors.MetalakeInUse(f"Metalake {name} is in use; disable it first or use force=true")

        def work() -> bool:  # run_structural: again under the lease when a retirement needs its token
            try:
                catalogs = self.store.list_catalogs(name) if force else []
            except errors.NoSuchMetalake:
                return False  # dropping a missing metalake is not an error, force or not
            for catalog in catalogs:
                retire(self.store, self.connectors, catalog)
            dropped = self.store.drop_metalake(name, cascade=force, precheck=precheck)
            if dropped:  # close the cached ones (never make one: a new connector delivers retirements first)
                for connector in self.connectors.forget(name):
                    connector.close()
                forget_identities(self.store, catalogs)
            return dropped

        return self.coordinator.run_structural(ROOT, work)
