"""What an authorization rule reads: the caller, and for each kind of object the request names (its
metalake, catalog, schema, table, tag, role) whether it exists, its owner, and which privileges the
caller's roles allow or deny on it. Pure data: gravimeta/access/reader.py fills it from the database.

Kinds are Gravitino's MetadataObject.Type names in upper case. A Level with `id` None is an object
that does not exist: nobody owns it and no privilege names it, as in Gravitino, where a missing
object makes every OWNER and privilege check false.

A rule reads a level only through Facts.level, owns, allows and denies, and Level.exists and held: never
its name or id. So two levels with one `standing` decide every rule alike, and a list of 10,000 items
is decided once per distinct standing (Standings; gravimeta/access/rules.py `exceptions`;
tests/unit/test_access_rules.py checks every rule of rules.py against that).
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
    """One object the request names. `owner` is (owner type, owner name), None when it has none.
    `held`: the object is a role granted to the caller (ROLE::SELF)."""

    kind: str
    name: str
    id: int | None = None
    owner: tuple[str, str] | None = None
    allowed: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    held: bool = False

    @property
    def exists(self) -> bool:
        return self.id is not None

    def standing(self, user: str) -> Level:
        """What a rule can see of this level for caller `user`: whether it exists, whether `user` owns
        it, what is allowed and denied on it, whether it is held; not its name or id."""
        return Level(self.kind, "", None if self.id is None else 0, standing_owner(self.owner, user),
                     self.allowed, self.denied, self.held)


def standing_owner(owner: tuple[str, str] | None, user: str) -> tuple[str, str] | None:
    """An owner as a rule sees it: the caller, or nobody (Facts.owns compares with the caller only)."""
    return owner if owner == (USER, user) else None


@dataclass(frozen=True)
class Facts:
    """`member`: the caller is a user of the metalake; `principal` its row's id there (its roles are
    granted to that row, directly: gravimeta's authenticators report no group membership). `target`:
    the kind of the object a `/objects/{type}/{fullName}` or owner route addresses (COLUMN for a
    column), and `chain` the kinds of that object and of the objects above it, nearest first.
    `subject`: the user a USER::SELF rule compares the caller with."""

    user: str
    member: bool = False
    levels: Mapping[str, Level] = field(default_factory=dict)
    principal: int | None = None
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


@dataclass(frozen=True)
class Standings:
    """The standings of the items of a list of one kind: `usual` for every item but those in `unusual`
    (most items of a big list stand alike: existing, not the caller's, no privilege of its roles)."""

    usual: Level
    unusual: Mapping[str, Level] = field(default_factory=dict)

    def of(self, name: str) -> Level:
        return self.unusual.get(name, self.usual)
