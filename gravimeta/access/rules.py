"""The rule language, and Gravitino's rules written in it.

Gravitino 1.3 declares on each REST method an authorization expression (`@AuthorizationExpression`)
built from a few atoms; gravimeta declares the same rules on its routes with these combinators:

  owner(K1, K2, ...)       the caller owns the K1 object, or the K2 object, ...  (ANY(OWNER, K1, K2))
  allowed(K, P)            a role of the caller allows privilege P on the K object and none of its
                           roles denies P there                                  (K::P)
  inherited(P, K1, K2...)  P is allowed on one of the objects and denied on none (ANY_P: deny wins,
                           whatever level the allow is at)
  SERVICE_ADMIN, METALAKE_USER, self_(K), CAN_SET_OWNER, CAN_OPERATE_PRIVILEGES, CAN_ACCESS_METADATA
  a | b, a & b             either, both

Every rule renders as text in Gravitino's notation (str(rule)), for refusals and the docs.
Ownership implies all: the owner alternatives are part of each rule, as in Gravitino's expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gravimeta.access.facts import (
    CATALOG,
    COLUMN,
    METALAKE,
    ROLE,
    SCHEMA,
    TABLE,
    TAG,
    USER,
    Facts,
    Level,
    Standings,
)


class Rule:
    """A predicate over Facts."""

    def holds(self, facts: Facts) -> bool:
        raise NotImplementedError

    def __or__(self, other: Rule) -> Rule:
        return Either((self, other))

    def __and__(self, other: Rule) -> Rule:
        return Both((self, other))


@dataclass(frozen=True)
class Either(Rule):
    parts: tuple[Rule, ...]

    def holds(self, facts: Facts) -> bool:
        return any(p.holds(facts) for p in self.parts)

    def __str__(self) -> str:
        return " || ".join(str(p) for p in self.parts)


@dataclass(frozen=True)
class Both(Rule):
    parts: tuple[Rule, ...]

    def holds(self, facts: Facts) -> bool:
        return all(p.holds(facts) for p in self.parts)

    def __str__(self) -> str:
        return " && ".join(f"({p})" if isinstance(p, Either) else str(p) for p in self.parts)


@dataclass(frozen=True)
class Owner(Rule):
    kinds: tuple[str, ...]

    def holds(self, facts: Facts) -> bool:
        return any(facts.owns(k) for k in self.kinds)

    def __str__(self) -> str:
        if len(self.kinds) == 1:
            return f"{self.kinds[0]}::OWNER"
        return f"ANY(OWNER, {', '.join(self.kinds)})"


@dataclass(frozen=True)
class Allowed(Rule):
    kind: str
    privilege: str

    def holds(self, facts: Facts) -> bool:
        return facts.allows(self.kind, self.privilege)

    def __str__(self) -> str:
        return f"{self.kind}::{self.privilege}"


@dataclass(frozen=True)
class Inherited(Rule):
    """The privilege is allowed on the object or on one above it, and denied on none of them."""

    privilege: str
    kinds: tuple[str, ...]

    def holds(self, facts: Facts) -> bool:
        return any(facts.allows(k, self.privilege) for k in self.kinds) and \
            not any(facts.denies(k, self.privilege) for k in self.kinds)

    def __str__(self) -> str:
        return f"ANY_{self.privilege}"


@dataclass(frozen=True)
class Named(Rule):
    """An atom computed by a function of the facts (METALAKE_USER, USER::SELF, CAN_SET_OWNER, ...)."""

    text: str
    test: Callable[[Facts], bool]

    def holds(self, facts: Facts) -> bool:
        return self.test(facts)

    def __str__(self) -> str:
        return self.text


def owner(*kinds: str) -> Rule:
    return Owner(kinds)


def allowed(kind: str, privilege: str) -> Rule:
    return Allowed(kind, privilege)


def inherited(privilege: str, *kinds: str) -> Rule:
    return Inherited(privilege, kinds)


# ---------------------------------------------------------------------- atoms computed from the facts


def _is_self(kind: str) -> Callable[[Facts], bool]:
    def test(facts: Facts) -> bool:
        if kind == USER:
            return facts.subject is not None and facts.subject == facts.user
        role = facts.level(ROLE)
        return role is not None and role.held

    return test


def self_(kind: str) -> Rule:
    """USER::SELF: the user the route names is the caller; ROLE::SELF: the role is granted to the caller."""
    return Named(f"{kind}::SELF", _is_self(kind))


#: checked by the door itself, before any facts are read (gravimeta/api/door.py)
SERVICE_ADMIN = Named("SERVICE_ADMIN", lambda facts: False)
METALAKE_USER = Named("METALAKE_USER", lambda facts: facts.member)

ANY_USE_CATALOG = inherited("USE_CATALOG", METALAKE, CATALOG)
ANY_USE_SCHEMA = inherited("USE_SCHEMA", METALAKE, CATALOG, SCHEMA)
ANY_CREATE_SCHEMA = inherited("CREATE_SCHEMA", METALAKE, CATALOG, SCHEMA)
ANY_CREATE_TABLE = inherited("CREATE_TABLE", METALAKE, CATALOG, SCHEMA, TABLE)
ANY_SELECT_TABLE = inherited("SELECT_TABLE", METALAKE, CATALOG, SCHEMA, TABLE)
ANY_MODIFY_TABLE = inherited("MODIFY_TABLE", METALAKE, CATALOG, SCHEMA, TABLE)
ANY_APPLY_TAG = inherited("APPLY_TAG", METALAKE, TAG)
SCHEMA_OWNER_WITH_USE_CATALOG = Named("SCHEMA_OWNER_WITH_USE_CATALOG",
                                      lambda facts: facts.owns(SCHEMA) and ANY_USE_CATALOG.holds(facts))

# ---------------------------------------------------------------------- Gravitino's rules, route by route

METALAKE_OWNER = owner(METALAKE)
CREATE_CATALOG = allowed(METALAKE, "CREATE_CATALOG") | owner(METALAKE)
LOAD_CATALOG = ANY_USE_CATALOG | owner(METALAKE, CATALOG)
ALTER_CATALOG = owner(METALAKE, CATALOG)
CREATE_SCHEMA = owner(METALAKE, CATALOG, SCHEMA) | ANY_USE_CATALOG & ANY_CREATE_SCHEMA
LOAD_SCHEMA = owner(METALAKE, CATALOG) | ANY_USE_CATALOG & (owner(SCHEMA) | ANY_USE_SCHEMA)
ALTER_SCHEMA = owner(METALAKE, CATALOG) | SCHEMA_OWNER_WITH_USE_CATALOG
CREATE_TABLE = (owner(METALAKE, CATALOG) | SCHEMA_OWNER_WITH_USE_CATALOG
                | ANY_USE_CATALOG & ANY_USE_SCHEMA & ANY_CREATE_TABLE)
LOAD_TABLE = (owner(METALAKE, CATALOG) | SCHEMA_OWNER_WITH_USE_CATALOG
              | ANY_USE_CATALOG & ANY_USE_SCHEMA & (owner(TABLE) | ANY_SELECT_TABLE | ANY_MODIFY_TABLE))
MODIFY_TABLE = (owner(METALAKE, CATALOG) | SCHEMA_OWNER_WITH_USE_CATALOG
                | ANY_USE_CATALOG & ANY_USE_SCHEMA & (owner(TABLE) | ANY_MODIFY_TABLE))
DROP_TABLE = (owner(METALAKE, CATALOG) | SCHEMA_OWNER_WITH_USE_CATALOG
              | ANY_USE_CATALOG & ANY_USE_SCHEMA & owner(TABLE))
FILTER_SCHEMA = owner(METALAKE, CATALOG, SCHEMA) | ANY_USE_SCHEMA
FILTER_TABLE = owner(METALAKE, CATALOG, SCHEMA, TABLE) | ANY_SELECT_TABLE | ANY_MODIFY_TABLE
CREATE_TAG = owner(METALAKE) | allowed(METALAKE, "CREATE_TAG")
LOAD_TAG = owner(METALAKE) | owner(TAG) | ANY_APPLY_TAG
ALTER_TAG = owner(METALAKE) | owner(TAG)
MANAGE_USERS = owner(METALAKE) | allowed(METALAKE, "MANAGE_USERS")
MANAGE_GROUPS = owner(METALAKE) | allowed(METALAKE, "MANAGE_GROUPS")
LOAD_USER = MANAGE_USERS | self_(USER)
CREATE_ROLE = owner(METALAKE) | allowed(METALAKE, "CREATE_ROLE")
MANAGE_GRANTS = owner(METALAKE) | allowed(METALAKE, "MANAGE_GRANTS")
LOAD_ROLE = MANAGE_GRANTS | owner(ROLE) | self_(ROLE)
DELETE_ROLE = owner(METALAKE) | owner(ROLE)
#: who may see the roles that name an object (Gravitino's MetadataObjectRoleOperations)
SEE_OBJECT_ROLE = owner(METALAKE) | owner(ROLE) | self_(ROLE)

#: the rule that says who may see a metadata object, by its kind (Gravitino's CAN_ACCESS_METADATA);
#: gravimeta keeps no filesets, topics, models, views or functions: those cannot exist here, and are
#: held to the table's rule, the one of their level
_ACCESS: dict[str, Rule] = {
    METALAKE: METALAKE_USER, CATALOG: LOAD_CATALOG, SCHEMA: LOAD_SCHEMA, TABLE: LOAD_TABLE, COLUMN: LOAD_TABLE,
    ROLE: LOAD_ROLE, TAG: LOAD_TAG,
}


#: policies and jobs, which gravimeta does not keep either, to the metalake owner
_THREE_LEVEL = ("FILESET", "TOPIC", "MODEL", "VIEW", "FUNCTION")


def _can_access(facts: Facts) -> bool:
    target = facts.target or METALAKE
    rule = _ACCESS.get(target) or (LOAD_TABLE if target in _THREE_LEVEL else owner(METALAKE))
    return rule.holds(facts)


CAN_ACCESS_METADATA = Named("CAN_ACCESS_METADATA", _can_access)
CAN_ACCESS_METADATA_AND_TAG = owner(METALAKE) | CAN_ACCESS_METADATA & (owner(TAG) | ANY_APPLY_TAG)
GET_OBJECT_TAG = owner(METALAKE) | (owner(TAG) | ANY_APPLY_TAG) & CAN_ACCESS_METADATA


def _can_set_owner(facts: Facts) -> bool:
    """The owner of the metalake, or the owner of the object or of one above it; a schema owner needs
    USE_CATALOG (on the catalog or the metalake) too, a table owner USE_SCHEMA (on the schema, its
    catalog or the metalake): Gravitino's JcasbinAuthorizer.hasSetOwnerPermission. The nearest owned
    level decides."""
    if facts.owns(METALAKE):
        return True
    for kind in facts.chain:
        if not facts.owns(kind):
            continue
        if kind == SCHEMA:
            return facts.allows(CATALOG, "USE_CATALOG") or facts.allows(METALAKE, "USE_CATALOG")
        if kind == TABLE:
            return any(facts.allows(k, "USE_SCHEMA") for k in (METALAKE, CATALOG, SCHEMA))
        return True
    return False


def _can_operate_privileges(facts: Facts) -> bool:
    """MANAGE_GRANTS on the object, on one above it or on the metalake; else the right to set its
    owner (Gravitino's hasMetadataPrivilegePermission)."""
    kinds = (*facts.chain, METALAKE)
    return any(facts.allows(k, "MANAGE_GRANTS") for k in kinds) or _can_set_owner(facts)


CAN_SET_OWNER = Named("CAN_SET_OWNER", _can_set_owner)
CAN_OPERATE_PRIVILEGES = Named("CAN_OPERATE_METADATA_PRIVILEGE", _can_operate_privileges)


# ---------------------------------------------------------------------- many items at once


def exceptions(rule: Rule, facts: Facts, standings: Standings) -> tuple[bool, set[str]]:
    """Which items of a list pass `rule` with these facts about each: (whether the usual item passes,
    the unusual items that decide otherwise). Decided once per distinct standing object (the reader
    shares one among equal standings), so a list of 10,000 items costs a handful of decisions."""
    decided: dict[int, bool] = {}  # by id: each standing is alive in `standings` throughout

    def holds(level: Level) -> bool:
        verdict = decided.get(id(level))
        if verdict is None:
            verdict = decided[id(level)] = rule.holds(facts.with_level(level))
        return verdict

    usual = holds(standings.usual)
    return usual, {name for name, level in standings.unusual.items() if holds(level) != usual}


def each_holds(rule: Rule, many: Iterable[Facts]) -> list[bool]:
    """Whether `rule` holds for each of these facts, decided once per Facts object: the objects of a
    tag that stand alike share one (AccessReader.object_standings)."""
    facts = list(many)  # alive until the end: an id names one object throughout
    decided: dict[int, bool] = {}
    verdicts = []
    for one in facts:
        verdict = decided.get(id(one))
        if verdict is None:
            verdict = decided[id(one)] = rule.holds(one)
        verdicts.append(verdict)
    return verdicts
