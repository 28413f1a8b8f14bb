"""Reads and writes of roles, their privileges and their grants, each in one transaction.

Locks (so that replicas racing on the same rows serialize on them, and the database's keys decide
what the locks do not):

- a change of a role's privileges (grant, revoke, override) locks the role's row FOR UPDATE: two of
  them on one role take turns, and each decides from the privileges the previous one left (one
  condition per privilege name and object: a grant of DENY X next to a committed ALLOW X is refused);
- the object a privilege names is read FOR SHARE: a drop of the object (which locks it FOR UPDATE)
  waits for the grant, then deletes the object and the grant with it (the grant's foreign key, ON
  DELETE CASCADE); a grant that waited finds no object (404);
- a grant of roles to a user or group locks the principal's row FOR UPDATE and each role's FOR SHARE:
  a deletion of the role waits, then takes the grant with it; a grant that waited finds no role (400
  IllegalRoleException, as Gravitino answers);
- a role's deletion deletes its row: its privileges and grants go with it (ON DELETE CASCADE);
- a role create or override resolves its objects in a snapshot before its write (roles/resolve.py),
  then locks each FOR SHARE by id in the write and checks it is unchanged, else resolves again: the
  write holds its locks (on SQLite, the store's one write lock) for a normal write's time.
Caps (roles/limits.py): securable objects per role, roles per user or group.
The door reads none of this through a cache: a revoke is seen by the next request on every replica.
GRAVIMETA_HA_DISABLE=no_role_lock (TEST-ONLY) reads the role and object rows without locks
(tests/ha/test_access_races.py shows what then goes wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.access import bulk
from gravimeta.entities import Audit
from gravimeta.metadata_objects import MetadataObject
from gravimeta.ownership.models import GROUP, PrincipalRow
from gravimeta.roles import resolve
from gravimeta.roles.limits import RoleLimits
from gravimeta.roles.models import OBJECT_COLUMNS, RoleMemberRow, RolePrivilegeRow, RoleRow
from gravimeta.roles.privileges import Privilege, check_binding, check_no_duplicates
from gravimeta.roles.resolve import Target
from gravimeta.store import EntityStore, objects
from gravimeta.store.attached_models import TagRow
from gravimeta.store.database import disabled_for_test
from gravimeta.store.entity_store import is_unique_violation, now_iso
from gravimeta.store.models import CatalogRow, MetalakeRow

T = TypeVar("T")
_RETRIES = 5
#: resolutions in a snapshot before a role create or override resolves inside its write (the tree
#: changed under each of them: renames, drops, disables racing the request)
_RESOLVE_ATTEMPTS = 3
Grants = list[tuple[MetadataObject, list[Privilege]]]


@dataclass(frozen=True)
class SecurableObject:
    type: str  # lower case, as Gravitino writes it: metalake, catalog, schema, table, tag
    full_name: str
    privileges: tuple[Privilege, ...]


@dataclass(frozen=True)
class Role:
    name: str
    properties: dict[str, str]
    objects: tuple[SecurableObject, ...]
    audit: Audit


class _Changed(Exception):
    """The tree changed between a role's resolution in a snapshot and its write (resolve.verify)."""


class RoleStore:
    def __init__(self, store: EntityStore, limits: RoleLimits | None = None):
        self.store = store
        self.limits = limits or RoleLimits()

    # ------------------------------------------------------------------ roles

    def create(self, m: str, name: str, properties: dict[str, str], grants: Grants, user: str) -> Role:
        """A new role owned by `user`. Each object must exist (else IllegalMetadataObject, as Gravitino
        answers a create) and take its privileges; at most the cap of objects (IllegalArgument)."""
        self.limits.check_objects(name, len(grants))

        def work(s: Session, resolved: resolve.Resolved | None) -> Role:
            metalake_id = _metalake_in_use(s, m, lock="share")
            now = now_iso()
            role = RoleRow(metalake_id=metalake_id, name=name, properties=properties, creator=user,
                           create_time=now, last_modifier=user, last_modified_time=now, version=1)
            s.add(role)
            try:
                s.flush()
            except IntegrityError as exc:
                if is_unique_violation(exc):
                    raise errors.RoleAlreadyExists(f"Role {name} in the metalake {m} already exists") from exc
                raise
            _insert_all(s, role.id, self._verified(s, m, metalake_id, grants, resolved, creating=True))
            return _role_of(s, role)

        return self._resolved_write(m, grants, work, creating=True)

    def get(self, m: str, name: str) -> Role:
        with self.store.snapshot() as s:
            metalake_id = _metalake_in_use(s, m)
            return _role_of(s, _role_row(s, m, metalake_id, name))

    def list_names(self, m: str) -> list[str]:
        with self.store.snapshot() as s:
            metalake_id = _metalake_in_use(s, m)
            return list(s.scalars(select(RoleRow.name).where(RoleRow.metalake_id == metalake_id).order_by(RoleRow.name)))

    def delete(self, m: str, name: str) -> bool:
        """False when there is no such role. Its privileges and grants go with it."""

        def work(s: Session) -> bool:
            metalake_id = _metalake_in_use(s, m, lock="share")
            deleted = s.execute(delete(RoleRow).where(RoleRow.metalake_id == metalake_id, RoleRow.name == name))
            return bool(deleted.rowcount)  # type: ignore[attr-defined]

        return self.store.write(work)

    def roles_naming(self, m: str, obj: MetadataObject) -> list[str]:
        """The roles holding a privilege on `obj` (404 when it does not exist)."""
        with self.store.snapshot() as s:
            target = self._target(s, m, obj, [], lock=None)
            return list(s.scalars(select(RoleRow.name).distinct().join(
                RolePrivilegeRow, RolePrivilegeRow.role_id == RoleRow.id).where(
                RolePrivilegeRow.object_kind == target.kind, RolePrivilegeRow.object_id == target.id)
                .order_by(RoleRow.name)))

    # ------------------------------------------------------------------ privileges of a role

    def grant_privileges(self, m: str, name: str, obj: MetadataObject, privileges: list[Privilege], user: str) -> Role:
        """Add `privileges` on `obj` to the role; IllegalPrivilege when the role would then hold one
        privilege name with both conditions on the object, IllegalArgument past the cap of objects."""

        def change(s: Session, role: RoleRow, target: Target, held: list[Privilege]) -> None:
            check_no_duplicates([*held, *privileges])
            if not held:  # a new securable object of the role (the role's row lock orders the count)
                self.limits.check_objects(name, _object_count(s, role.id) + 1)
            _insert(s, role.id, target, [p for p in dict.fromkeys(privileges) if p not in held])

        return self._change_privileges(m, name, obj, privileges, user, change)

    def revoke_privileges(self, m: str, name: str, obj: MetadataObject, privileges: list[Privilege], user: str) -> Role:
        """Remove those privileges (name and condition) on `obj` from the role; an object left without
        privileges is no longer one of the role's securable objects."""

        def change(s: Session, role: RoleRow, target: Target, held: list[Privilege]) -> None:
            for p in privileges:
                s.execute(delete(RolePrivilegeRow).where(
                    RolePrivilegeRow.role_id == role.id, RolePrivilegeRow.object_kind == target.kind,
                    RolePrivilegeRow.object_id == target.id, RolePrivilegeRow.privilege == p.name,
                    RolePrivilegeRow.effect == p.condition))

        return self._change_privileges(m, name, obj, privileges, user, change)

    def override(self, m: str, name: str, grants: Grants, user: str) -> Role:
        """Replace every privilege of the role by `grants` (at most the cap of objects)."""
        self.limits.check_objects(name, len(grants))

        def work(s: Session, resolved: resolve.Resolved | None) -> Role:
            metalake_id = _metalake_in_use(s, m, lock="share")
            role = _role_row(s, m, metalake_id, name, lock=_lock("update"))
            targets = self._verified(s, m, metalake_id, grants, resolved, creating=False)
            s.execute(delete(RolePrivilegeRow).where(RolePrivilegeRow.role_id == role.id))
            _insert_all(s, role.id, targets)
            _touch(s, role, user)
            return _role_of(s, role)

        def exists(s: Session, metalake_id: int) -> None:
            _role_row(s, m, metalake_id, name)  # NoSuchRole before any object's error, as before

        return self._resolved_write(m, grants, work, creating=False, first=exists)

    def _resolved_write(self, m: str, grants: Grants, work: Callable[[Session, resolve.Resolved | None], T],
                        creating: bool, first: Callable[[Session, int], None] | None = None) -> T:
        """`work` in a write transaction, given `grants` resolved in a snapshot before it (None: resolve
        them inside, the last resort when the tree changed under each earlier resolution), so that the
        write holds its locks for a normal write's time, not for the resolution of up to the cap of
        objects (gravimeta/roles/resolve.py)."""
        in_write = disabled_for_test("role_resolve_in_write")  # TEST-ONLY: the old way, inside the write
        for _ in range(0 if in_write else _RESOLVE_ATTEMPTS):
            with self.store.snapshot() as s:
                metalake_id = _metalake_in_use(s, m)
                if first is not None:
                    first(s, metalake_id)
                resolved = resolve.resolve(s, m, metalake_id, grants,
                                           lambda s, obj, privileges: self._target_of(s, m, obj, privileges, creating))
            failpoints.hit("role.after_resolve", metalake=m, objects=len(grants))
            try:
                return self._retry_unique(_with(work, resolved))
            except _Changed:
                continue
        return self._retry_unique(lambda s: work(s, None))

    def _verified(self, s: Session, m: str, metalake_id: int, grants: Grants, resolved: resolve.Resolved | None,
                  creating: bool) -> list[tuple[Target, list[Privilege]]]:
        """Inside the write: the targets resolved before it, verified (else _Changed), or, without
        them, resolved here one by one under FOR SHARE locks."""
        if resolved is None:
            found = [(self._target_of(s, m, obj, privileges, creating, lock="share"), privileges)
                     for obj, privileges in grants]
            failpoints.hit("role.after_resolve", metalake=m, objects=len(grants))
            return found
        unverified = disabled_for_test("role_verify")  # TEST-ONLY: the snapshot's ids as they are
        if not unverified and not resolve.verify(s, metalake_id, resolved, lock=_lock("share") is not None):
            raise _Changed()
        return [(target, privileges) for _, privileges, target in resolved]

    def _target_of(self, s: Session, m: str, obj: MetadataObject, privileges: list[Privilege], creating: bool,
                   lock: str | None = None) -> Target:
        """One object resolved one by one; a create answers a missing one IllegalMetadataObject."""
        try:
            return self._target(s, m, obj, privileges, lock=lock)
        except errors.NotFound as exc:
            if creating:
                raise errors.IllegalMetadataObject(exc.message) from exc
            raise

    def _change_privileges(self, m: str, name: str, obj: MetadataObject, privileges: list[Privilege], user: str,
                           change: Callable[[Session, RoleRow, Target, list[Privilege]], None]) -> Role:
        def work(s: Session) -> Role:
            metalake_id = _metalake_in_use(s, m, lock="share")
            role = _role_row(s, m, metalake_id, name, lock=_lock("update"))
            target = self._target(s, m, obj, privileges)
            failpoints.hit("role.after_lock", role=name, object=obj.full_name)
            held = [Privilege(p, c) for p, c in s.execute(
                select(RolePrivilegeRow.privilege, RolePrivilegeRow.effect).where(
                    RolePrivilegeRow.role_id == role.id, RolePrivilegeRow.object_kind == target.kind,
                    RolePrivilegeRow.object_id == target.id))]
            change(s, role, target, held)
            _touch(s, role, user)
            return _role_of(s, role)

        return self._retry_unique(work)

    # ------------------------------------------------------------------ roles of users and groups

    def grant_roles(self, m: str, kind: str, principal: str, names: list[str], user: str) -> None:
        """Grant the roles `names` to the user or group; at most the cap of roles (IllegalArgument)."""
        self.limits.check_roles(kind, principal, len(set(names)))

        def change(s: Session, row: PrincipalRow, role_ids: list[int]) -> None:
            have = set(s.scalars(select(RoleMemberRow.role_id).where(RoleMemberRow.principal_id == row.id)))
            new = [r for r in dict.fromkeys(role_ids) if r not in have]
            self.limits.check_roles(kind, principal, len(have) + len(new))
            if new:
                s.execute(insert(RoleMemberRow), [{"principal_id": row.id, "role_id": r} for r in new])

        self._retry_unique(lambda s: self._change_roles(s, m, kind, principal, names, user, change))

    def revoke_roles(self, m: str, kind: str, principal: str, names: list[str], user: str) -> None:
        def change(s: Session, row: PrincipalRow, role_ids: list[int]) -> None:
            for batch in bulk.chunks(sorted(set(role_ids))):
                s.execute(delete(RoleMemberRow).where(RoleMemberRow.principal_id == row.id,
                                                      RoleMemberRow.role_id.in_(batch)))

        self.store.write(lambda s: self._change_roles(s, m, kind, principal, names, user, change))

    def _change_roles(self, s: Session, m: str, kind: str, principal: str, names: list[str], user: str,
                      change: Callable[[Session, PrincipalRow, list[int]], None]) -> None:
        """Gravitino's order: the roles first (a missing one is IllegalRole), then the user or group.
        The roles are read FOR SHARE, at most bulk.BATCH names per statement."""
        metalake_id = _metalake_in_use(s, m, lock="share")
        found: dict[str, int] = {}
        for batch in bulk.chunks(sorted(set(names))):
            query = select(RoleRow.name, RoleRow.id).where(RoleRow.metalake_id == metalake_id, RoleRow.name.in_(batch))
            found.update(s.execute(_lock_query(query.order_by(RoleRow.id), _lock("share"))).all())
        for name in names:
            if name not in found:
                raise errors.IllegalRole(f"Role {name} does not exist in the metalake {m}")
        role_ids = [found[n] for n in names]
        failpoints.hit("role.after_lock", role=",".join(names), object=principal)
        row = s.scalar(_lock_query(select(PrincipalRow).where(
            PrincipalRow.metalake_id == metalake_id, PrincipalRow.kind == kind, PrincipalRow.name == principal),
            "update"))
        if row is None:
            if kind == GROUP:
                raise errors.NoSuchGroup(f"Group {principal} does not exist in the metalake {m}")
            raise errors.NoSuchUser(f"User {principal} does not exist in the metalake {m}")
        change(s, row, role_ids)
        row.last_modifier, row.last_modified_time, row.version = user, now_iso(), row.version + 1

    # ------------------------------------------------------------------ helpers

    def _target(self, s: Session, m: str, obj: MetadataObject, privileges: Iterable[Privilege],
                lock: str | None = "share") -> Target:
        """The object a privilege names, read (and locked) in this transaction, after the privileges
        were checked against its kind (Gravitino checks them first, then that the object exists)."""
        kind = obj.type.upper()
        for privilege in privileges:
            check_binding(privilege, kind, obj.full_name)
        if kind == "TAG":
            metalake_id = _metalake_in_use(s, m)
            tag = s.scalar(_lock_query(select(TagRow.id).where(TagRow.metalake_id == metalake_id,
                                                                 TagRow.name == obj.name), _lock(lock)))
            if tag is None:
                raise objects.missing(obj)
            return Target(kind, tag, metalake_id)
        if kind not in OBJECT_COLUMNS:
            raise objects.missing(obj)  # a fileset, topic, model, ...: gravimeta keeps none
        resolved = objects.resolve(self.store, s, m, obj, lock=_lock(lock))
        catalog_id = dict(resolved.chain).get("catalog")
        catalog_type = None
        if catalog_id is not None:
            catalog_type = (s.scalar(select(CatalogRow.type).where(CatalogRow.id == catalog_id)) or "").upper()
            for privilege in privileges:
                check_binding(privilege, kind, obj.full_name, catalog_type)
        return Target(kind, resolved.id, resolved.metalake_id, catalog_type, catalog_id)

    def _retry_unique(self, work: Callable[[Session], T]) -> T:
        """store.write, again when a concurrent insert of the same key won the race (the unique keys
        of grants decide what the row locks did not)."""
        for attempt in range(_RETRIES):
            try:
                return self.store.write(work)
            except IntegrityError as exc:
                if not is_unique_violation(exc) or attempt == _RETRIES - 1:
                    raise
        raise AssertionError("unreachable")


def _with(work: Callable[[Session, resolve.Resolved | None], T], resolved: resolve.Resolved) -> Callable[[Session], T]:
    return lambda s: work(s, resolved)


# ---------------------------------------------------------------------- statements


def _lock(lock: str | None) -> str | None:
    return None if disabled_for_test("no_role_lock") else lock  # TEST-ONLY: read without row locks


def _lock_query(query: Any, lock: str | None) -> Any:
    if lock == "update":
        return query.with_for_update()
    if lock == "share":
        return query.with_for_update(read=True)
    return query


def _metalake_in_use(s: Session, m: str, lock: str | None = None) -> int:
    row = s.scalar(_lock_query(select(MetalakeRow).where(MetalakeRow.name == m), lock))
    if row is None:
        raise errors.NoSuchMetalake(f"Metalake {m} does not exist")
    if not row.in_use:
        raise errors.MetalakeNotInUse(f"Metalake {m} is not in use; enable it first")
    return row.id


def _role_row(s: Session, m: str, metalake_id: int, name: str, lock: str | None = None) -> RoleRow:
    row = s.scalar(_lock_query(select(RoleRow).where(RoleRow.metalake_id == metalake_id, RoleRow.name == name), lock))
    if row is None:
        raise errors.NoSuchRole(f"Role {name} does not exist in the metalake {m}")
    return row


def _insert(s: Session, role_id: int, target: Target, privileges: Iterable[Privilege]) -> None:
    _insert_all(s, role_id, [(target, list(privileges))])


def _insert_all(s: Session, role_id: int, targets: Iterable[tuple[Target, list[Privilege]]]) -> None:
    """The privilege rows of `targets`, in order, in batches of one statement each."""
    rows: list[dict[str, Any]] = []
    for target, privileges in targets:
        for p in privileges:
            values: dict[str, Any] = {"role_id": role_id, "object_kind": target.kind, "object_id": target.id,
                                      "metalake_id": target.metalake_id, "privilege": p.name, "effect": p.condition}
            for kind, column in OBJECT_COLUMNS.items():
                if kind != "METALAKE":
                    values[column] = target.id if kind == target.kind else None
            rows.append(values)
    for batch in bulk.chunks(rows):
        s.execute(insert(RolePrivilegeRow), list(batch))


def _object_count(s: Session, role_id: int) -> int:
    """How many securable objects the role holds."""
    pairs = select(RolePrivilegeRow.object_kind, RolePrivilegeRow.object_id).where(
        RolePrivilegeRow.role_id == role_id).distinct().subquery()
    return int(s.scalar(select(func.count()).select_from(pairs)) or 0)


def _touch(s: Session, role: RoleRow, user: str) -> None:
    s.execute(update(RoleRow).where(RoleRow.id == role.id).values(
        last_modifier=user, last_modified_time=now_iso(), version=RoleRow.version + 1))
    s.refresh(role)


def _role_of(s: Session, role: RoleRow) -> Role:
    """The role with its securable objects in the order they were first granted, named as they are
    named now."""
    rows = list(s.execute(select(RolePrivilegeRow.object_kind, RolePrivilegeRow.object_id, RolePrivilegeRow.privilege,
                                 RolePrivilegeRow.effect).where(RolePrivilegeRow.role_id == role.id)
                          .order_by(RolePrivilegeRow.id)))
    grouped: dict[tuple[str, int], list[Privilege]] = {}
    for kind, object_id, name, condition in rows:
        grouped.setdefault((kind, object_id), []).append(Privilege(name, condition))
    names = _names(s, role.metalake_id, {key for key in grouped})
    found = tuple(SecurableObject(kind.lower(), names[(kind, i)], tuple(ps))
                  for (kind, i), ps in grouped.items() if (kind, i) in names)
    return Role(role.name, dict(role.properties or {}), found,
                Audit(role.creator, role.create_time, role.last_modifier, role.last_modified_time))


def _names(s: Session, metalake_id: int, keys: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """(kind, id) -> the object's full name as Gravitino writes it in a securable object."""
    out: dict[tuple[str, int], str] = {}
    by_kind: dict[str, list[int]] = {}
    for kind, object_id in keys:
        by_kind.setdefault(kind, []).append(object_id)
    for kind, ids in by_kind.items():
        if kind == "METALAKE":
            found = dict(s.execute(select(MetalakeRow.id, MetalakeRow.name).where(MetalakeRow.id.in_(ids))).all())
        elif kind == "TAG":
            found = dict(s.execute(select(TagRow.id, TagRow.name).where(TagRow.id.in_(ids))).all())
        else:
            found = objects.full_names(s, metalake_id, kind.lower(), ids)
        out.update({(kind, i): n for i, n in found.items()})
    return out


def role_names_of(s: Session, principal_ids: list[int]) -> dict[int, list[str]]:
    """principal id -> the names of its roles, in the order they were granted."""
    out: dict[int, list[str]] = {p: [] for p in principal_ids}
    if principal_ids:
        for principal_id, name in s.execute(
                select(RoleMemberRow.principal_id, RoleRow.name).join(RoleRow, RoleRow.id == RoleMemberRow.role_id)
                .where(RoleMemberRow.principal_id.in_(principal_ids)).order_by(RoleMemberRow.id)):
            out[principal_id].append(name)
    return out

