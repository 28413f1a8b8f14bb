"""Facts for the door, read from the shared database for every request that needs them.

Nothing is cached between requests: a change of owner, a removal from a metalake, a revoke of a role or
of a privilege is seen by the next request on every replica, the moment it commits. A request reads its facts
in one snapshot transaction: a few indexed lookups by name and id. A list's items and a tag's objects
are read set-based (bulk.py), never one statement or one term per item. Service admins and requests
with authorization off read nothing (the door decides those without facts).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import and_, bindparam, false, literal, null, or_, select
from sqlalchemy.orm import Session, aliased

from gravimeta.access import bulk
from gravimeta.access.bulk import owner_of
from gravimeta.access.facts import METALAKE, ROLE, TAG, TREE, USER, Facts, Level, Standings
from gravimeta.ownership.models import PrincipalRow
from gravimeta.ownership.store import beside_columns, levels_statement
from gravimeta.roles.models import RoleMemberRow, RolePrivilegeRow
from gravimeta.roles.privileges import DENY
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test
from gravimeta.store.models import MetalakeRow


@dataclass(frozen=True)
class Target:
    """What a request names: `path` in the tree (metalake first; empty for routes above metalakes),
    a tag, a user (USER::SELF), a role, and for the `/objects/{type}/{fullName}` and owner routes the kind of
    the object (`kind`) and the kinds of it and its parents, nearest first (`chain`)."""

    path: tuple[str, ...] = ()
    tag: str | None = None
    subject: str | None = None
    kind: str | None = None
    chain: tuple[str, ...] = ()
    role: str | None = None

    @property
    def metalake(self) -> str | None:
        return self.path[0] if self.path else None


CACHE_S = 60.0
#: a list naming more children than this reads all of its parent's children (one join) instead
_IN_LIMIT = 100
_NOTHING: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


class AccessReader:
    def __init__(self, store: EntityStore):
        self.store = store
        #: TEST-ONLY (GRAVIMETA_HA_DISABLE=access_cache): facts kept per process for CACHE_S, as a
        #: per-replica authorization cache would; tests/ha/test_access_races.py shows a revoke outlived
        self._cache: dict[tuple[str, Target], tuple[float, Facts]] | None = {} if disabled_for_test("access_cache") \
            else None

    def facts(self, user: str, target: Target) -> Facts:
        """The facts of `target` for `user`, in one snapshot."""
        if self._cache is not None:
            kept = self._cache.get((user, target))
            if kept is not None and time.monotonic() - kept[0] < CACHE_S:
                return kept[1]
        with self.store.snapshot() as s:
            found = self._facts(s, user, target)
        if self._cache is not None:
            self._cache[(user, target)] = (time.monotonic(), found)
        return found

    def _facts(self, s: Session, user: str, target: Target) -> Facts:
        """Two statements: the objects of the path (with their owners), the tag and role named, and
        the caller's membership; then, for a member, its roles' privileges on those objects (and
        whether it holds the role named)."""
        bare = Facts(user, target=target.kind, chain=target.chain, subject=target.subject)
        if not target.path:
            return bare
        conn = s.connection()
        params = {**dict(zip(("m", "c", "s", "t"), target.path, strict=False)), "user": user,
                  "tag": target.tag, "role": target.role}
        row = conn.execute(_facts_statement(len(target.path), target.tag is not None, target.role is not None),
                           params).first()
        if row is None:  # no such metalake
            return bare
        values = list(row)[1:]  # after the metalake's in_use
        levels: dict[str, Level] = {}
        for kind, name in zip(TREE, target.path, strict=False):
            object_id, creator, owner_row, owner_type, owner_name = values[:5]
            del values[:5]
            levels[kind] = Level(kind, name, object_id, owner_of(creator, owner_row, owner_type, owner_name))
        member = values.pop(0)
        for single, named in ((TAG, target.tag), (ROLE, target.role)):
            if named is not None:
                object_id, creator, owner_row, owner_type, owner_name = values[:5]
                del values[:5]
                owner = owner_of(creator, owner_row, owner_type, owner_name) if object_id is not None else None
                levels[single] = Level(single, named, object_id, owner)
        if member is None:
            return replace(bare, levels=levels)
        objects = [(level.kind, level.id) for level in levels.values() if level.id is not None]
        role = levels.get(ROLE)
        held = role is not None and role.id is not None
        granted = conn.execute(_grants_statement(len(objects), held), {
            "principal": member, "role_id": role.id if held and role is not None else None,
            **{f"k{i}": k for i, (k, _) in enumerate(objects)},
            **{f"i{i}": o for i, (_, o) in enumerate(objects)}}).all()
        levels = _apply(levels, [r for r in granted if r[0] != _HELD])
        if held and role is not None and any(r[0] == _HELD for r in granted):
            levels[ROLE] = replace(levels[ROLE], held=True)
        return replace(bare, member=True, levels=levels, principal=member)

    # ------------------------------------------------------------------ many objects at once

    def children(self, facts: Facts, kind: str, names: Iterable[str]) -> dict[str, Level]:
        """Levels of the `kind` objects called `names` under the parent these facts name (a
        missing name gets a Level that does not exist)."""
        wanted = list(dict.fromkeys(names))
        parent = facts.level(bulk.PARENT[kind])
        found: dict[str, Level] = {}
        if parent is not None and parent.id is not None and wanted:
            with self.store.snapshot() as s:
                whole = len(wanted) > _IN_LIMIT
                rows = bulk.all_children(s, kind, parent.id) if whole else \
                    bulk.named(s, kind, ((parent.id, n) for n in wanted))
                privileges: bulk.Privileges = {}
                held: dict[int, str] = {}
                if facts.principal is not None:
                    privileges = bulk.privileges_on(s, facts.principal, kind, (i for i, _ in rows.values()))
                    held = bulk.held_roles(s, facts.principal) if kind == ROLE else {}
            found = {name: Level(kind, name, object_id, owner, *privileges.get(object_id, _NOTHING), object_id in held)
                     for (_, name), (object_id, owner) in rows.items()}
        return {n: found.get(n, Level(kind, n)) for n in wanted}

    def standings(self, facts: Facts, kind: str, names: Iterable[str], listed_here: bool = False) -> Standings:
        """The standing (Level.standing) of each of the `kind` objects called `names` under the
        parent these facts name, for rules.exceptions; equal standings are one object. A whole
        listing reads its children's names (not with `listed_here`: the names were listed in the
        snapshot this joins, so each exists), then only those that stand out for the caller (owned,
        named by a privilege of its roles, held): a list of 10,000 items costs two to four set-based
        statements, and Python work for the items that stand out (gravimeta/access/bulk.py)."""
        wanted = set(names)
        missing = Level(kind, "")
        parent = facts.level(bulk.PARENT[kind])
        if parent is None or parent.id is None or not wanted:
            return Standings(missing)
        if len(wanted) <= _IN_LIMIT:
            shared: dict[Level, Level] = {}
            return Standings(missing, {n: shared.setdefault(found, found) for n, found in (
                (n, level.standing(facts.user)) for n, level in self.children(facts, kind, wanted).items())})
        with self.store.snapshot() as s:
            present = wanted if listed_here else bulk.names_under(s, kind, parent.id)
            owned = bulk.owned_under(s, kind, parent.id, facts.user)
            privileges: bulk.Privileges = {}
            held: set[str] = set()
            if facts.principal is not None:
                if kind != ROLE:  # nothing is granted on a role
                    privileges = bulk.privileges_under(s, facts.principal, kind, parent.id)
                else:
                    held = set(bulk.held_roles(s, facts.principal).values())
        unusual = dict.fromkeys(wanted.difference(present), missing)
        me = (USER, facts.user)
        interned: dict[tuple[Any, ...], Level] = {}
        for name in wanted.intersection(owned.union(privileges, held)):
            key = (me if name in owned else None, *privileges.get(name, _NOTHING), name in held)
            standing = interned.get(key)
            if standing is None:
                standing = interned[key] = Level(kind, "", 0, *key)
            unusual[name] = standing
        return Standings(Level(kind, "", 0), unusual)

    def object_standings(self, facts: Facts, targets: Sequence[Target]) -> list[Facts]:
        """The facts of each target (objects of the metalake these facts name: a tag's objects) with
        the standings of their levels, for rules.each_holds: as `facts(user, target)` reads them one
        by one, read set-based in one snapshot (each level of the tree with at most bulk.BATCH names
        per statement, or a parent's children at once, then the caller's privileges on all of them).
        Targets that stand alike get one Facts object."""
        metalake = facts.level(METALAKE)
        if metalake is None or any(t.metalake != metalake.name or t.tag or t.role for t in targets):
            return [self.facts(facts.user, t) for t in targets]  # not a tag's objects: one by one
        paths = {t.path for t in targets}
        found: dict[tuple[str, ...], tuple[int, bulk.Owner]] = {}
        ids: dict[tuple[str, ...], int] = {(metalake.name,): metalake.id or 0}
        privileges: dict[tuple[str, int], tuple[frozenset[str], frozenset[str]]] = {}
        with self.store.snapshot() as s:
            for depth, kind in enumerate(TREE[1:], start=2):
                wanted = {p[:depth] for p in paths if len(p) >= depth and p[:depth - 1] in ids}
                rows = bulk.named(s, kind, ((ids[p[:-1]], p[-1]) for p in sorted(wanted)))
                for path in wanted:
                    hit = rows.get((ids[path[:-1]], path[-1]))
                    if hit is not None:
                        ids[path], found[path] = hit[0], hit
                if facts.principal is not None:
                    on = bulk.privileges_on(s, facts.principal, kind, (found[p][0] for p in wanted if p in found))
                    privileges.update(((kind, object_id), both) for object_id, both in on.items())
        # standings shared by identity: an id below names one live object (kept in `interned`/`along`)
        me = (USER, facts.user)
        interned: dict[tuple[Any, ...], Level] = {}
        along: dict[tuple[str, ...], tuple[Level, ...]] = {(metalake.name,): (metalake.standing(facts.user),)}
        joined: dict[tuple[int, int], tuple[Level, ...]] = {}

        def standings_along(path: tuple[str, ...]) -> tuple[Level, ...]:
            known = along.get(path)
            if known is not None:
                return known
            above, kind, hit = standings_along(path[:-1]), TREE[len(path) - 1], found.get(path)
            key: tuple[Any, ...] = (kind, None) if hit is None else \
                (kind, hit[1] == me, *privileges.get((kind, hit[0]), _NOTHING))
            standing = interned.get(key)
            if standing is None:
                standing = interned[key] = Level(kind, "") if hit is None else \
                    Level(kind, "", 0, me if key[1] else None, key[2], key[3])
            known = joined.get((id(above), id(standing)))
            if known is None:
                known = joined[(id(above), id(standing))] = (*above, standing)
            along[path] = known
            return known

        alike: dict[tuple[Any, ...], Facts] = {}
        out = []
        for target in targets:
            levels = standings_along(target.path)
            key = (target.kind, target.chain, target.subject, id(levels))
            one = alike.get(key)
            if one is None:
                one = alike[key] = Facts(facts.user, facts.member, dict(zip(TREE, levels, strict=False)),
                                         facts.principal, target.kind, target.chain, target.subject)
            out.append(one)
        return out

    def memberships(self, user: str) -> set[str]:
        """The metalakes `user` is a user of."""
        with self.store.snapshot() as s:
            return set(s.scalars(select(MetalakeRow.name).join(
                PrincipalRow, PrincipalRow.metalake_id == MetalakeRow.id).where(
                PrincipalRow.kind == USER, PrincipalRow.name == user)))


def _apply(levels: dict[str, Level], rows: list[Any]) -> dict[str, Level]:
    """`levels` with the privileges of `rows` (object kind, object id, privilege, ALLOW or DENY)."""
    allowed: dict[tuple[str, int], set[str]] = {}
    denied: dict[tuple[str, int], set[str]] = {}
    for kind, object_id, privilege, condition in rows:
        (denied if condition == DENY else allowed).setdefault((kind, object_id), set()).add(privilege)
    return {key: replace(level, allowed=frozenset(allowed.get((level.kind, level.id or 0), ())),
                         denied=frozenset(denied.get((level.kind, level.id or 0), ())))
            for key, level in levels.items()}


@functools.cache
def _facts_statement(depth: int, tag: bool, role: bool) -> Any:
    """The path's levels with their owners (ownership/store.py), then the caller's principal id in
    the metalake, then the tag and the role named with their owners (id, creator, owner row id, owner
    type, owner name): one row, or none without the metalake. Built once per shape; executed on the
    Core connection (no ORM per request)."""
    member = (select(PrincipalRow.id).where(PrincipalRow.metalake_id == MetalakeRow.id, PrincipalRow.kind == USER,
                                            PrincipalRow.name == bindparam("user")).scalar_subquery())
    statement = levels_statement(depth).add_columns(member)
    for wanted, kind in ((tag, TAG), (role, ROLE)):
        if wanted:
            columns, named, owned = beside_columns(kind, bindparam(kind.lower()))
            statement = statement.outerjoin(*named).outerjoin(*owned).add_columns(*columns)
    return statement


#: the kind of the row _grants_statement adds when the caller holds the role the request names
_HELD = "HELD"


@functools.cache
def _grants_statement(objects: int, held: bool) -> Any:
    """The privileges the caller's roles hold on the request's objects (kind, id, privilege, effect):
    the principal's grants joined with their privileges there, so the rows are those privileges, however
    many roles the caller holds. With `held`, one more row (HELD, role id) when the caller holds the
    role the request names (ROLE::SELF)."""
    member, privilege = aliased(RoleMemberRow), aliased(RolePrivilegeRow)
    on_objects = or_(*(and_(privilege.object_kind == bindparam(f"k{i}"), privilege.object_id == bindparam(f"i{i}"))
                       for i in range(objects))) if objects else false()
    statement: Any = (select(privilege.object_kind, privilege.object_id, privilege.privilege, privilege.effect)
                 .join(member, and_(member.role_id == privilege.role_id, member.principal_id == bindparam("principal")))
                 .where(on_objects))
    if held:
        statement = statement.union_all(
            select(literal(_HELD), member.role_id, null(), null()).where(
                member.principal_id == bindparam("principal"), member.role_id == bindparam("role_id")))
    return statement
