"""How big a role and a principal's set of roles may grow: caps, answered with a 400 naming them.

Gravitino caps neither. A cap bounds what one request resolves and writes (a role create resolves
every securable object) and what every later request of a holder reads. Both default to 1,000,
beyond what access models need: a privilege on a schema, catalog or metalake counts for everything
below it, so a role rarely names more than tens of objects; and an Active Directory token carries at
most about 1,015 groups. Settings: gravimeta.limits.role-securable-objects-max-count and
gravimeta.limits.principal-roles-max-count (docs/authorization.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta import errors
from gravimeta.config import Settings

OBJECTS_KEY = "gravimeta.limits.role-securable-objects-max-count"
ROLES_KEY = "gravimeta.limits.principal-roles-max-count"


@dataclass(frozen=True)
class RoleLimits:
    """`objects`: securable objects per role; `roles`: roles per user or group."""

    objects: int = 1000
    roles: int = 1000

    @classmethod
    def of(cls, settings: Settings) -> RoleLimits:
        return cls(settings.max_role_securable_objects, settings.max_principal_roles)

    def check_objects(self, role: str, count: int) -> None:
        """IllegalArgument when role `role` would hold `count` securable objects, more than the cap."""
        if count > self.objects:
            raise errors.IllegalArgument(
                f"A role holds at most {self.objects} securable objects ({OBJECTS_KEY}); role {role} would hold "
                f"{count}. A privilege on a schema, catalog or metalake counts for every object below it")

    def check_roles(self, kind: str, principal: str, count: int) -> None:
        """IllegalArgument when user or group `principal` would hold `count` roles, more than the cap."""
        if count > self.roles:
            raise errors.IllegalArgument(
                f"A user or group holds at most {self.roles} roles ({ROLES_KEY}); {kind.lower()} {principal} "
                f"would hold {count}")
