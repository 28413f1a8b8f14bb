"""Owners and principals in the store, each operation in one transaction (a change of
owner is a non-structural write, made under a row lock on the object).

The owner of an object:
- the gm_owner row of the object (found by the object's id), when there is one: its owner, or no owner
  at all when owner_type is NULL (the owning user or group was removed from the metalake);
- otherwise the object's creator, a user (Gravitino's hook dispatchers make the creator the owner).
Nothing is written when an object is created, so creates cost no extra statement, and rows created
before owners existed have their creator as owner.

Interleavings (READ COMMITTED on PostgreSQL/MariaDB; SQLite runs one writer at a time):
- set owner × drop (or cascade drop) of the object: set_owner locks the object's row FOR UPDATE before
  it writes, a drop locks it FOR UPDATE before it deletes it (a tag's delete locks it first, a role's
  delete locks it by deleting it). Whoever locks second waits: a drop that
  waited deletes the object and, through the foreign key, the owner row just written; a set_owner that
  waited finds no row (404). Without the lock the foreign key still refuses an owner row for a deleted
  object, so no owner row ever outlives its object, and a new object of the same name (a new id) never
  inherits one.
- set owner × rename: the row is keyed by id; the rename changes a name, not the id, so the owner
  follows whichever order they commit in (a set_owner that resolves the old name after the rename
  committed is a 404, like any request for a name that is gone).
- set owner × set owner of one object: serialised by the row lock; the last one wins.
- set owner to U × removal of user U: set_owner reads U FOR SHARE, the removal deletes U: whichever
  comes second waits. The removal then clears every owner row naming U, including one written just
  before it; a set_owner after it finds no U (404).
- removal of U × set owner of an object U created: the removal writes "no owner" rows for the objects
  U created that have no row yet, without locking them; a concurrent set_owner inserts the same key,
  and the database lets only one insert commit: the loser retries its transaction (_retry_unique).
- removal of U × create by U: an object whose create commits after the removal still has U, its
  creator, as owner (a removed user can create nothing in Gravitino; gravimeta has no membership
  check on creates).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import and_, bindparam, delete, exists, insert, literal, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from gravimeta import errors, failpoints
from gravimeta.entities import Audit
from gravimeta.ownership.models import GROUP, OBJECT_COLUMNS, USER, OwnerRow, PrincipalRow
from gravimeta.ownership.objects import BESIDE_TREE, OwnedObject
from gravimeta.roles.models import RoleRow
from gravimeta.roles.store import role_names_of
from gravimeta.store import EntityStore
from gravimeta.store.attached_models import TagRow
from gravimeta.store.database import disabled_for_test
from gravimeta.store.entity_store import is_unique_violation, now_iso
from gravimeta.store.models import CatalogRow, MetalakeRow, SchemaRow, TableRow

T = TypeVar("T")
KINDS = ("METALAKE", "CATALOG", "SCHEMA", "TABLE")
_ROWS: tuple[Any, ...] = (MetalakeRow, CatalogRow, SchemaRow, TableRow)
#: the tags and roles of a metalake, owned like the objects of its tree
_BESIDE: dict[str, Any] = {"TAG": TagRow, "ROLE": RoleRow}
_UNIQUE_RETRIES = 5


@dataclass(frozen=True)
class Owner:
    type: str  # USER or GROUP
    name: str


@dataclass(frozen=True)
class Level:
    """One level of a path as the store has it: the object's id (None: no such object), its creator,
    and its owner row if it has one."""

    kind: str
    id: int | None
    creator: str | None
    has_row: bool
    owner_type: str | None
    owner_name: str | None

    @property
    def owner(self) -> Owner | None:
        if self.has_row:
            return Owner(self.owner_type, self.owner_name) if self.owner_type and self.owner_name else None
        return Owner(USER, self.creator) if self.creator else None


@dataclass(frozen=True)
class Principal:
    kind: str  # USER or GROUP
    name: str
    audit: Audit
    roles: tuple[str, ...] = ()  # the names of the roles granted to it, in the order they were granted


class OwnershipStore:
    def __init__(self, store: EntityStore):
        self.store = store

    # ------------------------------------------------------------------ reads

    def levels(self, path: tuple[str, ...]) -> tuple[bool, list[Level]]:
        """(the metalake is in use, one Level per element of `path`), in ONE statement; NoSuchMetalake
        when the metalake does not exist."""
        with self.store.snapshot() as s:
            return self.levels_in(s, path)

    @staticmethod
    def levels_in(s: Session, path: tuple[str, ...]) -> tuple[bool, list[Level]]:
        """levels() in the caller's session."""
        params = dict(zip(("m", "c", "s", "t"), path, strict=False))
        row = s.execute(_LEVELS[len(path)], params).first()
        if row is None:
            raise errors.NoSuchMetalake(f"Metalake {path[0]} does not exist")
        values = list(row)
        in_use = bool(values.pop(0))
        levels = []
        for kind in KINDS[:len(path)]:
            object_id, creator, row_id, owner_type, owner_name = values[:5]
            del values[:5]
            levels.append(Level(kind, object_id, creator, row_id is not None, owner_type, owner_name))
        return in_use, levels

    def owner_of(self, obj: OwnedObject) -> Owner | None:
        """GET owner: the metalake must be in use and the object must exist."""
        with self.store.snapshot() as s:
            if obj.kind in BESIDE_TREE:
                row = s.execute(_BESIDE_LEVEL[obj.kind], {"m": obj.metalake, "name": obj.full_name}).first()
                if row is None:
                    raise errors.NoSuchMetalake(f"Metalake {obj.metalake} does not exist")
                in_use, object_id, creator, row_id, owner_type, owner_name = row
                level = Level(obj.kind, object_id, creator, row_id is not None, owner_type, owner_name)
            else:
                in_use, levels = self.levels_in(s, obj.path)
                level = levels[-1]
        _require_in_use(obj.metalake, bool(in_use))
        if level.id is None:
            raise _no_such_object(obj)
        return level.owner

    def get_principal(self, m: str, kind: str, name: str) -> Principal:
        with self.store.snapshot() as s:
            metalake = self.store._metalake_row(s, m)
            _require_in_use(m, metalake.in_use)
            row = s.scalar(_principal(metalake.id, kind, name))
            if row is None:
                raise _no_such_principal(m, kind, name)
            return _principal_of(row, role_names_of(s, [row.id])[row.id])

    def list_principals(self, m: str, kind: str) -> list[Principal]:
        with self.store.snapshot() as s:
            metalake = self.store._metalake_row(s, m)
            _require_in_use(m, metalake.in_use)
            rows = list(s.scalars(select(PrincipalRow).where(PrincipalRow.metalake_id == metalake.id,
                                                             PrincipalRow.kind == kind).order_by(PrincipalRow.name)))
            roles = role_names_of(s, [r.id for r in rows])
            return [_principal_of(r, roles[r.id]) for r in rows]

    # ------------------------------------------------------------------ writes

    def set_owner(self, obj: OwnedObject, owner: Owner, user: str) -> None:
        """Make `owner` (a user or group of the metalake) the owner of `obj`."""

        def work(s: Session) -> None:
            metalake = self.store._metalake_row(s, obj.metalake, lock="update" if obj.kind == "METALAKE" else None)
            _require_in_use(obj.metalake, metalake.in_use)
            target = metalake if obj.kind == "METALAKE" else self._locked_object(s, obj, metalake.id)
            failpoints.hit("owner.after_lock", object=obj.full_name, id=target.id)
            principal = s.scalar(_principal(metalake.id, owner.type, owner.name).with_for_update(read=True))
            if principal is None:
                raise errors.NotFound(f"Metadata object {obj.full_name} or owner {owner.name} is not found")
            _upsert(s, obj.kind, target.id, metalake.id, owner, user)

        self._retry_unique(work)

    def add_principal(self, m: str, kind: str, name: str, user: str) -> Principal:
        def work(s: Session) -> Principal:
            metalake = self.store._metalake_row(s, m, lock="share")
            _require_in_use(m, metalake.in_use)
            now = now_iso()
            row = PrincipalRow(metalake_id=metalake.id, kind=kind, name=name, creator=user, create_time=now,
                               last_modifier=user, last_modified_time=now, version=1)
            s.add(row)
            try:
                s.flush()
            except IntegrityError as exc:
                if is_unique_violation(exc):
                    raise _principal_exists(m, kind, name) from exc
                raise
            return _principal_of(row)

        return self.store.write(work)

    def remove_principal(self, m: str, kind: str, name: str) -> bool:
        """Remove a user or group; every object it owned has no owner afterwards (Gravitino deletes
        the owner relations with the user). The metalake's owner cannot be removed. False when there
        is no such principal."""

        def work(s: Session) -> bool:
            metalake = self.store._metalake_row(s, m, lock="share")  # set_owner of the metalake waits
            _require_in_use(m, metalake.in_use)
            _, (level,) = self.levels_in(s, (m,))
            if level.owner == Owner(kind, name):
                raise errors.IllegalArgument(f"Cannot remove {kind.lower()} {name} from metalake {m} because the "
                                             f"{kind.lower()} is the owner of the metalake.")
            removed = s.execute(delete(PrincipalRow).where(
                PrincipalRow.metalake_id == metalake.id, PrincipalRow.kind == kind, PrincipalRow.name == name))
            if not removed.rowcount:  # type: ignore[attr-defined]
                return False
            s.execute(update(OwnerRow)
                      .where(OwnerRow.metalake_id == metalake.id, OwnerRow.owner_type == kind,
                             OwnerRow.owner_name == name)
                      .values(owner_type=None, owner_name=None))
            if kind == USER:
                for statement in _unowned_rows(metalake.id, name):
                    s.execute(statement)
            return True

        return self._retry_unique(work)

    # ------------------------------------------------------------------ helpers

    def _locked_object(self, s: Session, obj: OwnedObject, metalake_id: int) -> Any:
        """The object's row, locked FOR UPDATE (NoSuchMetadataObject when it is missing)."""
        lock = None if disabled_for_test("no_owner_lock") else "update"  # TEST-ONLY: read it unlocked
        if obj.kind in BESIDE_TREE:
            model = _BESIDE[obj.kind]
            query = select(model).where(model.metalake_id == metalake_id, model.name == obj.full_name)
            row = s.scalar(query.with_for_update() if lock else query)
            if row is None:
                raise _no_such_object(obj)
            return row
        lookups: dict[str, Callable[..., Any]] = {
            "CATALOG": self.store.catalog_row, "SCHEMA": self.store.schema_row, "TABLE": self.store.table_row}
        lookup = lookups[obj.kind]
        try:
            return lookup(s, *obj.path, lock=lock)
        except errors.NoSuchMetalake:
            raise
        except errors.NotFound:
            raise _no_such_object(obj) from None

    def _retry_unique(self, work: Callable[[Session], T]) -> T:
        """store.write, run again when a concurrent insert of the same owner key won (see above)."""
        for attempt in range(_UNIQUE_RETRIES):
            try:
                return self.store.write(work)
            except IntegrityError as exc:
                if not is_unique_violation(exc) or attempt == _UNIQUE_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")


# ---------------------------------------------------------------------- statements


def levels_statement(depth: int) -> Any:
    """metalake.in_use, then per level (id, creator, owner row id, owner_type, owner_name): the levels
    joined down by name, each with its owner row joined by id."""
    columns: list[Any] = [MetalakeRow.in_use]
    joins: list[tuple[Any, Any]] = []
    parent: Any = None
    for kind, model, key in zip(KINDS[:depth], _ROWS, ("m", "c", "s", "t"), strict=False):
        owner = aliased(OwnerRow, name=f"owner_{kind.lower()}")
        columns += [model.id, model.creator, owner.id, owner.owner_type, owner.owner_name]
        if parent is not None:
            parent_id = {CatalogRow: CatalogRow.metalake_id, SchemaRow: SchemaRow.catalog_id,
                         TableRow: TableRow.schema_id}[model]
            joins.append((model, and_(parent_id == parent.id, model.name == bindparam(key))))
        joins.append((owner, and_(owner.object_kind == kind, owner.object_id == model.id)))
        parent = model
    statement = select(*columns).select_from(MetalakeRow)
    for target, condition in joins:
        statement = statement.outerjoin(target, condition)
    return statement.where(MetalakeRow.name == bindparam("m"))


_LEVELS = {depth: levels_statement(depth) for depth in range(1, 5)}


def beside_columns(kind: str, name: Any) -> tuple[list[Any], Any, Any]:
    """The tag or role called `name` in the metalake of MetalakeRow, with its owner row: (id, creator,
    owner row id, owner_type, owner_name) and the two outer joins that find them."""
    model, owner = aliased(_BESIDE[kind]), aliased(OwnerRow, name=f"owner_{kind.lower()}")
    named = (model, and_(model.metalake_id == MetalakeRow.id, model.name == name))
    owned = (owner, and_(owner.object_kind == kind, owner.object_id == model.id))
    return [model.id, model.creator, owner.id, owner.owner_type, owner.owner_name], named, owned


def _beside_level(kind: str) -> Any:
    columns, named, owned = beside_columns(kind, bindparam("name"))
    return (select(MetalakeRow.in_use, *columns).select_from(MetalakeRow).outerjoin(*named).outerjoin(*owned)
            .where(MetalakeRow.name == bindparam("m")))


_BESIDE_LEVEL = {kind: _beside_level(kind) for kind in BESIDE_TREE}


def _principal(metalake_id: int, kind: str, name: str) -> Any:
    return select(PrincipalRow).where(PrincipalRow.metalake_id == metalake_id, PrincipalRow.kind == kind,
                                      PrincipalRow.name == name)


def _upsert(s: Session, kind: str, object_id: int, metalake_id: int, owner: Owner, user: str) -> None:
    now = now_iso()
    changed = s.execute(update(OwnerRow)
                        .where(OwnerRow.object_kind == kind, OwnerRow.object_id == object_id)
                        .values(owner_type=owner.type, owner_name=owner.name, last_modifier=user,
                                last_modified_time=now, version=OwnerRow.version + 1))
    if changed.rowcount:  # type: ignore[attr-defined]
        return
    values = {"object_kind": kind, "object_id": object_id, "metalake_id": metalake_id,
              "owner_type": owner.type, "owner_name": owner.name, "creator": user, "create_time": now,
              "last_modifier": user, "last_modified_time": now, "version": 1}
    if kind != "METALAKE":
        values[OBJECT_COLUMNS[kind]] = object_id
    s.execute(insert(OwnerRow).values(**values))


def _unowned_rows(metalake_id: int, creator: str) -> list[Any]:
    """INSERT ... SELECT statements that give every object of the metalake created by `creator` and
    without an owner row a "no owner" row (the removed user's creator-ownership ends)."""
    now = now_iso()
    statements = []
    for kind, model in (*zip(KINDS, _ROWS, strict=True), *_BESIDE.items()):
        query = select(literal(kind), model.id, literal(metalake_id), *(
            [model.id] if kind != "METALAKE" else []), literal(now), literal(now), literal(1))
        if kind == "METALAKE":
            query = query.where(MetalakeRow.id == metalake_id)
        elif kind in _BESIDE:
            query = query.where(model.metalake_id == metalake_id)
        elif kind == "CATALOG":
            query = query.where(CatalogRow.metalake_id == metalake_id)
        elif kind == "SCHEMA":
            query = query.join(CatalogRow, CatalogRow.id == SchemaRow.catalog_id).where(
                CatalogRow.metalake_id == metalake_id)
        else:
            query = query.join(SchemaRow, SchemaRow.id == TableRow.schema_id).join(
                CatalogRow, CatalogRow.id == SchemaRow.catalog_id).where(CatalogRow.metalake_id == metalake_id)
        query = query.where(model.creator == creator, ~exists().where(
            OwnerRow.object_kind == kind, OwnerRow.object_id == model.id))
        targets = ["object_kind", "object_id", "metalake_id",
                   *([OBJECT_COLUMNS[kind]] if kind != "METALAKE" else []), "create_time", "last_modified_time",
                   "version"]
        statements.append(insert(OwnerRow).from_select(targets, query))
    return statements


# ---------------------------------------------------------------------- errors and conversions


def _require_in_use(metalake: str, in_use: bool) -> None:
    if not in_use:
        raise errors.MetalakeNotInUse(f"Metalake {metalake} is not in use; enable it first")


def _no_such_object(obj: OwnedObject) -> errors.NoSuchMetadataObject:
    return errors.NoSuchMetadataObject(f"Metadata object {obj.full_name} type {obj.kind} doesn't exist")


def _no_such_principal(m: str, kind: str, name: str) -> errors.NotFound:
    if kind == GROUP:
        return errors.NoSuchGroup(f"Group {name} does not exist in metalake {m}")
    return errors.NoSuchUser(f"User {name} does not exist in metalake {m}")


def _principal_exists(m: str, kind: str, name: str) -> errors.AlreadyExists:
    if kind == GROUP:
        return errors.GroupAlreadyExists(f"Group {name} already exists in metalake {m}")
    return errors.UserAlreadyExists(f"User {name} already exists in metalake {m}")


def _principal_of(row: PrincipalRow, roles: list[str] | None = None) -> Principal:
    return Principal(row.kind, row.name, Audit(row.creator, row.create_time, row.last_modifier, row.last_modified_time),
                     tuple(roles or ()))
