"""Facts for the door, read from the shared database for every request that needs them.

Nothing is cached between requests: a change of owner, a removal from a metalake, a revoke of a role or
of a privilege is seen by the next request on every replica, the moment it commits. A request reads its facts
in one snapshot transaction: a few indexed lookups by name and id. Service admins and requests with
authorization off read nothing (the door decides those without facts).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import and_, bindparam, false, or_, select
from sqlalchemy.orm import Session, aliased

from gravimeta.access.facts import CATALOG, METALAKE, ROLE, SCHEMA, TABLE, TAG, TREE, USER, Facts, Level
from gravimeta.ownership.models import OwnerRow, PrincipalRow
from gravimeta.ownership.store import beside_columns, levels_statement
from gravimeta.roles.models import RoleMemberRow, RolePrivilegeRow, RoleRow
from gravimeta.roles.privileges import DENY
from gravimeta.store import EntityStore
from gravimeta.store.attached_models import TagRow
from gravimeta.store.database import disabled_for_test
from gravimeta.store.models import CatalogRow, MetalakeRow, SchemaRow, TableRow


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


#: the row model of each kind of child a list can hold, and the column naming its parent
_CHILDREN: dict[str, tuple[Any, Any]] = {
    CATALOG: (CatalogRow, CatalogRow.metalake_id), SCHEMA: (SchemaRow, SchemaRow.catalog_id),
    TABLE: (TableRow, TableRow.schema_id), TAG: (TagRow, TagRow.metalake_id), ROLE: (RoleRow, RoleRow.metalake_id)}
_PARENT = {CATALOG: METALAKE, SCHEMA: CATALOG, TABLE: SCHEMA, TAG: METALAKE, ROLE: METALAKE}
_IN_LIMIT = 100
CACHE_S = 60.0


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
        the caller's membership; then, for a member, its roles and their privileges on those objects."""
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
            levels[kind] = Level(kind, name, object_id, _owner(creator, owner_row, owner_type, owner_name))
        member = values.pop(0)
        for single, named in ((TAG, target.tag), (ROLE, target.role)):
            if named is not None:
                object_id, creator, owner_row, owner_type, owner_name = values[:5]
                del values[:5]
                owner = _owner(creator, owner_row, owner_type, owner_name) if object_id is not None else None
                levels[single] = Level(single, named, object_id, owner)
        if member is None:
            return replace(bare, levels=levels)
        objects = [(level.kind, level.id) for level in levels.values() if level.id is not None]
        granted = conn.execute(_grants_statement(len(objects)), {
            "principal": member, **{f"k{i}": k for i, (k, _) in enumerate(objects)},
            **{f"i{i}": o for i, (_, o) in enumerate(objects)}}).all()
        role_ids = frozenset(r[0] for r in granted)
        return replace(bare, member=True, levels=_apply(levels, [r[1:] for r in granted if r[1] is not None]),
                       role_ids=role_ids)

    def children(self, facts: Facts, kind: str, names: Iterable[str]) -> dict[str, Level]:
        """Levels of the `kind` objects called `names` under the parent these facts name (a
        missing name gets a Level that does not exist)."""
        wanted = list(dict.fromkeys(names))
        parent = facts.level(_PARENT[kind])
        found: dict[str, Level] = {}
        if parent is not None and parent.id is not None and wanted:
            with self.store.snapshot() as s:
                found = self._named(s, kind, parent.id, wanted)
                if facts.role_ids:
                    found = _with_privileges(s, facts.role_ids, found)
        return {n: found.get(n, Level(kind, n)) for n in wanted}

    def memberships(self, user: str) -> set[str]:
        """The metalakes `user` is a user of."""
        with self.store.snapshot() as s:
            return set(s.scalars(select(MetalakeRow.name).join(
                PrincipalRow, PrincipalRow.metalake_id == MetalakeRow.id).where(
                PrincipalRow.kind == USER, PrincipalRow.name == user)))

    @staticmethod
    def _named(s: Session, kind: str, parent_id: int, names: list[str]) -> dict[str, Level]:
        """The `kind` rows called `names` under `parent_id`, with their owners: an owner row when one
        was written, else the creator."""
        model, parent_column = _CHILDREN[kind]
        owner = aliased(OwnerRow)
        query = (select(model.id, model.name, model.creator, owner.id, owner.owner_type, owner.owner_name)
                 .outerjoin(owner, and_(owner.object_kind == kind, owner.object_id == model.id))
                 .where(parent_column == parent_id))
        if len(names) <= _IN_LIMIT:  # a longer list (a whole listing) reads the parent's children
            query = query.where(model.name.in_(names))
        return {name: Level(kind, name, object_id, _owner(creator, owner_row, owner_type, owner_name))
                for object_id, name, creator, owner_row, owner_type, owner_name in s.execute(query)}


def _with_privileges(s: Session, role_ids: frozenset[int], levels: dict[str, Level]) -> dict[str, Level]:
    """`levels` with the privileges the roles `role_ids` allow and deny on each (one statement)."""
    objects = [(level.kind, level.id) for level in levels.values() if level.id is not None]
    if not role_ids or not objects:
        return levels
    rows = s.execute(select(RolePrivilegeRow.object_kind, RolePrivilegeRow.object_id, RolePrivilegeRow.privilege,
                            RolePrivilegeRow.effect).where(
        RolePrivilegeRow.role_id.in_(sorted(role_ids)),
        or_(*(and_(RolePrivilegeRow.object_kind == kind, RolePrivilegeRow.object_id == object_id)
              for kind, object_id in objects))))
    return _apply(levels, list(rows))


def _apply(levels: dict[str, Level], rows: list[Any]) -> dict[str, Level]:
    """`levels` with the privileges of `rows` (object kind, object id, privilege, ALLOW or DENY)."""
    allowed: dict[tuple[str, int], set[str]] = {}
    denied: dict[tuple[str, int], set[str]] = {}
    for kind, object_id, privilege, condition in rows:
        (denied if condition == DENY else allowed).setdefault((kind, object_id), set()).add(privilege)
    return {key: replace(level, allowed=frozenset(allowed.get((level.kind, level.id or 0), ())),
                         denied=frozenset(denied.get((level.kind, level.id or 0), ())))
            for key, level in levels.items()}


def _owner(creator: str | None, owner_row: int | None, owner_type: str | None,
           owner_name: str | None) -> tuple[str, str] | None:
    """An object's owner: its owner row when one was written (which may say "no owner"), else its creator."""
    if owner_row is not None:
        return (owner_type, owner_name) if owner_type and owner_name else None
    return (USER, creator) if creator else None


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


@functools.cache
def _grants_statement(objects: int) -> Any:
    """The caller's roles (role_id), each with its privileges on the request's objects (kind, id,
    privilege, effect; NULL when it has none there): a LEFT JOIN, so a role without any still counts
    (ROLE::SELF)."""
    privilege = aliased(RolePrivilegeRow)
    on_objects = or_(*(and_(privilege.object_kind == bindparam(f"k{i}"), privilege.object_id == bindparam(f"i{i}"))
                       for i in range(objects))) if objects else false()
    return (select(RoleMemberRow.role_id, privilege.object_kind, privilege.object_id, privilege.privilege,
                   privilege.effect)
            .outerjoin(privilege, and_(privilege.role_id == RoleMemberRow.role_id, on_objects))
            .where(RoleMemberRow.principal_id == bindparam("principal")))
