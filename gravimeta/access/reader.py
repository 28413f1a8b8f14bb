"""Facts for the door, read from the shared database for every request that needs them.

Nothing is cached between requests: a change of owner, a removal from a metalake (and, with roles, a
revoke) is seen by the next request on every replica, the moment it commits. A request reads its facts
in one snapshot transaction: a few indexed lookups by name and id. Service admins and requests with
authorization off read nothing (the door decides those without facts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, null, select
from sqlalchemy.orm import Session, aliased

from gravimeta import errors
from gravimeta.access.facts import CATALOG, METALAKE, SCHEMA, TABLE, TAG, TREE, USER, Facts, Level
from gravimeta.ownership.models import OwnerRow, PrincipalRow
from gravimeta.ownership.store import OwnershipStore
from gravimeta.store import EntityStore
from gravimeta.store.attached_models import TagRow
from gravimeta.store.models import CatalogRow, MetalakeRow, SchemaRow, TableRow


@dataclass(frozen=True)
class Target:
    """What a request names: `path` in the tree (metalake first; empty for routes above metalakes),
    a tag, a user (USER::SELF), and for the `/objects/{type}/{fullName}` and owner routes the kind of
    the object (`kind`) and the kinds of it and its parents, nearest first (`chain`)."""

    path: tuple[str, ...] = ()
    tag: str | None = None
    subject: str | None = None
    kind: str | None = None
    chain: tuple[str, ...] = ()

    @property
    def metalake(self) -> str | None:
        return self.path[0] if self.path else None


#: the row model of each kind of child a list can hold, and the column naming its parent
_CHILDREN: dict[str, tuple[Any, Any]] = {CATALOG: (CatalogRow, CatalogRow.metalake_id), SCHEMA: (SchemaRow, SchemaRow.catalog_id),
             TABLE: (TableRow, TableRow.schema_id), TAG: (TagRow, TagRow.metalake_id)}
_PARENT = {CATALOG: METALAKE, SCHEMA: CATALOG, TABLE: SCHEMA, TAG: METALAKE}
_IN_LIMIT = 100


class AccessReader:
    def __init__(self, store: EntityStore):
        self.store = store

    def facts(self, user: str, target: Target) -> Facts:
        """The facts of `target` for `user`, in one snapshot."""
        with self.store.snapshot() as s:
            return self._facts(s, user, target)

    def _facts(self, s: Session, user: str, target: Target) -> Facts:
        if not target.path:
            return Facts(user, target=target.kind, chain=target.chain, subject=target.subject)
        try:
            _, found = OwnershipStore.levels_in(s, target.path)
        except errors.NoSuchMetalake:
            return Facts(user, target=target.kind, chain=target.chain, subject=target.subject)
        levels = {}
        for kind, name, level in zip(TREE, target.path, found, strict=False):
            owner = level.owner
            levels[kind] = Level(kind, name, level.id, None if owner is None else (owner.type, owner.name))
        metalake_id = levels[METALAKE].id
        assert metalake_id is not None
        if target.tag is not None:
            levels[TAG] = self._named(s, TAG, metalake_id, [target.tag]).get(target.tag, Level(TAG, target.tag))
        member = s.scalar(select(PrincipalRow.id).where(
            PrincipalRow.metalake_id == metalake_id, PrincipalRow.kind == USER, PrincipalRow.name == user))
        return Facts(user, member is not None, levels, target=target.kind, chain=target.chain,
                     subject=target.subject)

    def children(self, facts: Facts, kind: str, names: Iterable[str]) -> dict[str, Level]:
        """Levels of the `kind` objects called `names` under the parent these facts name (a
        missing name gets a Level that does not exist)."""
        wanted = list(dict.fromkeys(names))
        parent = facts.level(_PARENT[kind])
        found: dict[str, Level] = {}
        if parent is not None and parent.id is not None and wanted:
            with self.store.snapshot() as s:
                found = self._named(s, kind, parent.id, wanted)
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
        was written, else the creator. Tags have no owner rows: a tag's owner is its creator."""
        model, parent_column = _CHILDREN[kind]
        query: Any
        if kind == TAG:
            query = select(model.id, model.name, model.creator, null(), null(), null())
        else:
            owner = aliased(OwnerRow)
            query = (select(model.id, model.name, model.creator, owner.id, owner.owner_type, owner.owner_name)
                     .outerjoin(owner, and_(owner.object_kind == kind, owner.object_id == model.id)))
        query = query.where(parent_column == parent_id)
        if len(names) <= _IN_LIMIT:  # a longer list (a whole listing) reads the parent's children
            query = query.where(model.name.in_(names))
        rows = s.execute(query)
        found = {}
        for object_id, name, creator, owner_row, owner_type, owner_name in rows:
            if owner_row is not None:
                who = (owner_type, owner_name) if owner_type and owner_name else None
            else:
                who = (USER, creator) if creator else None
            found[name] = Level(kind, name, object_id, who)
        return found
