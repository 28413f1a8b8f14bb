"""Who may change an object when gravitino.authorization.enable=true (off: everyone, as in Gravitino).

Gravitino 1.3 allows an alter, enable/disable or drop to the owner of the object or of an object that
contains it (`ANY(OWNER, METALAKE, CATALOG)`, `METALAKE::OWNER`, ... in its *Operations), and setting
an owner to the same owners (JcasbinAuthorizer.hasSetOwnerPermission); gravimeta has no roles or
privileges, so ownership is the whole rule, plus the service admins, who may do anything. Reads and
creates stay open to every caller (creating makes the caller the new object's owner).

An owner of type GROUP matches no caller: gravimeta's authenticators report no group membership.

When the check runs: structural operations (rename, drop) check inside their claim, once it is held,
so that with the distributed lock on no other structural change of that scope can come between the
check and the change (a drop-and-recreate of the same name by another user, for instance). The other
changes check just before their store transaction, like Gravitino's interceptor: an ownership change
that commits between the two is not seen by an operation already past its check.
"""

from __future__ import annotations

from gravimeta import errors
from gravimeta.ownership.models import USER
from gravimeta.ownership.store import Owner, OwnershipStore


class Authorizer:
    def __init__(self, ownership: OwnershipStore | None, enabled: bool, admins: frozenset[str]):
        self.ownership, self.enabled, self.admins = ownership, enabled, admins

    @classmethod
    def off(cls) -> Authorizer:
        return cls(None, False, frozenset())

    def is_admin(self, user: str | None) -> bool:
        return user is not None and user in self.admins

    def require_owner(self, user: str | None, path: tuple[str, ...], action: str) -> None:
        """Refuse (403 ForbiddenException) unless authorization is off, `user` is a service admin, or
        `user` owns the object at `path` or one of the objects above it. Levels that do not exist are
        skipped (the operation reports them itself); a missing metalake is left to the operation."""
        if not self.enabled or self.is_admin(user):
            return
        assert self.ownership is not None
        try:
            _, levels = self.ownership.levels(path)
        except errors.NoSuchMetalake:
            return
        caller = Owner(USER, user or "anonymous")
        if any(level.id is not None and level.owner == caller for level in levels):
            return
        kinds = ("metalake", "catalog", "schema", "table")
        raise errors.Forbidden(
            f"User {caller.name} cannot {action} {kinds[len(path) - 1]} {'.'.join(path)}: only its owner, the owner "
            "of an object that contains it, or a service admin can"
        )

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
