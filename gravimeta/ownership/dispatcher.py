"""The owner, user and group operations, with Gravitino's checks in its order: authorization enabled
(else 405, as Gravitino's AccessControlNotAllowedFilter answers), the caller's rights, the metalake in
use, the object's existence."""

from __future__ import annotations

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.entities import NameIdentifier
from gravimeta.ownership import objects
from gravimeta.ownership.authorizer import Authorizer
from gravimeta.ownership.store import Owner, OwnershipStore, Principal

DISABLED = ("You should set 'gravitino.authorization.enable' to true in the server side `gravitino.conf` to "
            "enable the authorization of the system, otherwise these interfaces can't work.")


class OwnershipDispatcher:
    def __init__(self, ownership: OwnershipStore, authorizer: Authorizer, coordinator: Coordinator):
        self.ownership, self.authorizer, self.coordinator = ownership, authorizer, coordinator

    def _require_enabled(self) -> None:
        if not self.authorizer.enabled:
            raise errors.UnsupportedOperation(DISABLED)

    # ------------------------------------------------------------------ owners

    def get_owner(self, metalake: str, type_name: str, full_name: str) -> Owner | None:
        self._require_enabled()
        obj = objects.parse(metalake, type_name, full_name)
        with self.coordinator.local(NameIdentifier.of(*obj.path), LockType.READ):
            return self.ownership.owner_of(obj)

    def set_owner(self, metalake: str, type_name: str, full_name: str, owner: Owner, user: str) -> None:
        """A non-structural write: the object's row lock orders it with drops and other owner changes
        (ownership/store.py), the READ TreeLock with this process's structural work on the object."""
        self._require_enabled()
        obj = objects.parse(metalake, type_name, full_name)
        with self.coordinator.local(NameIdentifier.of(*obj.path), LockType.READ):
            self.ownership.set_owner(obj, owner, user)

    # ------------------------------------------------------------------ users and groups

    def add_principal(self, metalake: str, kind: str, name: str, user: str) -> Principal:
        self._require_enabled()
        return self.ownership.add_principal(metalake, kind, name, user)

    def get_principal(self, metalake: str, kind: str, name: str) -> Principal:
        self._require_enabled()
        return self.ownership.get_principal(metalake, kind, name)

    def list_principals(self, metalake: str, kind: str) -> list[Principal]:
        self._require_enabled()
        return self.ownership.list_principals(metalake, kind)

    def remove_principal(self, metalake: str, kind: str, name: str, user: str) -> bool:
        self._require_enabled()
        return self.ownership.remove_principal(metalake, kind, name)
