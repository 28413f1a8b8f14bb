"""What ownership does beyond the store when gravitino.authorization.enable=true: registering the
creator of a metalake as one of its users. Who may do what is decided at the door
(gravimeta/api/door.py, gravimeta/access/)."""

from __future__ import annotations

from gravimeta import errors
from gravimeta.ownership.models import USER
from gravimeta.ownership.store import OwnershipStore


class Authorizer:
    def __init__(self, ownership: OwnershipStore | None, enabled: bool, admins: frozenset[str]):
        self.ownership, self.enabled, self.admins = ownership, enabled, admins

    @classmethod
    def off(cls) -> Authorizer:
        return cls(None, False, frozenset())

    def register_creator(self, metalake: str, user: str) -> None:
        """After a metalake is created: add its creator to it as a user, as Gravitino's
        MetalakeHookDispatcher does when authorization is on (so the creator can be made the owner of
        other objects again later). Best effort: a failure here leaves a metalake whose owner (its
        creator) is simply not listed among its users."""
        if not self.enabled:
            return
        assert self.ownership is not None
        try:
            self.ownership.add_principal(metalake, USER, user, user)
        except errors.GravitinoError:
            pass
