"""What an authorization rule reads: the caller, and for each kind of object the request names (its
metalake, catalog, schema, table, tag, role) whether it exists, its owner, and which privileges the
caller's roles allow or deny on it. Pure data: gravimeta/access/reader.py fills it from the database.

Kinds are Gravitino's MetadataObject.Type names in upper case. A Level with `id` None is an object
that does not exist: nobody owns it and no privilege names it, as in Gravitino, where a missing
object makes every OWNER and privilege check false.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

METALAKE, CATALOG, SCHEMA, TABLE, COLUMN = "METALAKE", "CATALOG", "SCHEMA", "TABLE", "COLUMN"
TAG, ROLE, USER, GROUP = "TAG", "ROLE", "USER", "GROUP"
#: the tree, root first
TREE = (METALAKE, CATALOG, SCHEMA, TABLE)


@dataclass(frozen=True)
class Level:
    """One object the request names. `owner` is (owner type, owner name), None when it has none."""

    kind: str
    name: str
    id: int | None = None
    owner: tuple[str, str] | None = None
    allowed: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()

    @property
    def exists(self) -> bool:
        return self.id is not None


@dataclass(frozen=True)
class Facts:
    """`member`: the caller is a user of the metalake. `role_ids`: the roles granted to the caller
    (directly: gravimeta's authenticators report no group membership). `target`: the kind of the
    object a `/objects/{type}/{fullName}` or owner route addresses (COLUMN for a column), and
    `chain` the kinds of that object and of the objects above it, nearest first. `subject`: the user a
    USER::SELF rule compares the caller with."""

    user: str
    member: bool = False
    levels: Mapping[str, Level] = field(default_factory=dict)
    role_ids: frozenset[int] = frozenset()
    target: str | None = None
    chain: tuple[str, ...] = ()
    subject: str | None = None

    def level(self, kind: str) -> Level | None:
        found = self.levels.get(kind)
        return found if found is not None and found.exists else None

    def owns(self, kind: str) -> bool:
        """The caller is the owner of the `kind` object (an owner of type GROUP matches nobody)."""
        found = self.level(kind)
        return found is not None and found.owner == (USER, self.user)

    def allows(self, kind: str, privilege: str) -> bool:
        """KIND::PRIVILEGE: a role of the caller allows it on that object and none denies it there."""
        found = self.level(kind)
        return found is not None and privilege in found.allowed and privilege not in found.denied

    def denies(self, kind: str, privilege: str) -> bool:
        found = self.level(kind)
        return found is not None and privilege in found.denied

    def with_level(self, level: Level) -> Facts:
        """These facts about another object of the same kind (filtering a list)."""
        return replace(self, levels={**self.levels, level.kind: level})

    def with_subject(self, subject: str) -> Facts:
        return replace(self, subject=subject)
