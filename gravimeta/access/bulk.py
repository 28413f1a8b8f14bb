"""Access facts about many objects at once, set-based: a list's children, a tag's objects.

Each statement reads a set: the children of one parent (a join), or at most BATCH names or ids per
statement (a bounded IN). No statement grows with the list: one OR term per item made SQLite refuse a
list of ~1,000 ("Expression tree is too large") and made PostgreSQL plan for seconds. A whole listing
reads its children's names, and then only the few rows that make a child stand out for the caller:
those it owns, those its roles hold privileges on, the roles it holds. Everything runs in the caller's
snapshot transaction (gravimeta/access/reader.py), on its Core connection (no ORM per row).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, aliased

from gravimeta.access.facts import CATALOG, METALAKE, ROLE, SCHEMA, TABLE, TAG, USER
from gravimeta.ownership.models import OwnerRow
from gravimeta.roles.models import RoleMemberRow, RolePrivilegeRow, RoleRow
from gravimeta.roles.privileges import DENY
from gravimeta.store.attached_models import TagRow
from gravimeta.store.models import CatalogRow, SchemaRow, TableRow

#: the most names or ids one statement carries
BATCH = 500
#: a parent more of whose children than this are wanted has all of them read at once (no IN)
WHOLE = 100
#: the row model of each kind of child, and the column naming its parent
CHILDREN: dict[str, tuple[Any, Any]] = {
    CATALOG: (CatalogRow, CatalogRow.metalake_id), SCHEMA: (SchemaRow, SchemaRow.catalog_id),
    TABLE: (TableRow, TableRow.schema_id), TAG: (TagRow, TagRow.metalake_id), ROLE: (RoleRow, RoleRow.metalake_id)}
PARENT = {CATALOG: METALAKE, SCHEMA: CATALOG, TABLE: SCHEMA, TAG: METALAKE, ROLE: METALAKE}

Owner = tuple[str, str] | None
#: (parent id, name) -> (id, owner)
Named = dict[tuple[int, str], tuple[int, Owner]]
#: object id (or name) -> (allowed, denied)
Privileges = dict[Any, tuple[frozenset[str], frozenset[str]]]


def chunks(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for lo in range(0, len(items), size):
        yield items[lo:lo + size]


def owner_of(creator: str | None, owner_row: int | None, owner_type: str | None,
             owner_name: str | None) -> Owner:
    """An object's owner: its owner row when one was written (which may say "no owner"), else its creator."""
    if owner_row is not None:
        return (owner_type, owner_name) if owner_type and owner_name else None
    return (USER, creator) if creator else None


@functools.cache
def _named_query(kind: str) -> tuple[Any, Any, Any, Any]:
    """(parent id, name, id, creator, owner row id, owner type, owner name) of `kind` objects; the
    query, the model, its parent column and the owner alias (built once per kind)."""
    model, parent_column = CHILDREN[kind]
    owner = aliased(OwnerRow)
    query = (select(parent_column, model.name, model.id, model.creator, owner.id, owner.owner_type, owner.owner_name)
             .outerjoin(owner, and_(owner.object_kind == kind, owner.object_id == model.id)))
    return query, model, parent_column, owner


@functools.cache
def _statement(what: str, kind: str) -> Any:
    """The statements of this module, built once per kind; their parameters are bound at execution."""
    query, model, parent_column, owner = _named_query(kind)
    if what == "all":
        return query.where(parent_column == bindparam("parent"))
    if what == "named":
        return query.where(parent_column.in_(bindparam("parents", expanding=True)),
                           model.name.in_(bindparam("names", expanding=True)))
    if what == "names":
        return select(model.name).where(parent_column == bindparam("parent"))
    if what == "owned":
        user: Any = bindparam("user")
        return query.where(parent_column == bindparam("parent"), or_(
            and_(owner.id.is_(None), model.creator == user), and_(owner.owner_type == USER, owner.owner_name == user)))
    member = aliased(RoleMemberRow)
    granted = and_(member.role_id == RolePrivilegeRow.role_id, member.principal_id == bindparam("principal"))
    if what == "privileges under":
        return (select(model.name, RolePrivilegeRow.privilege, RolePrivilegeRow.effect).join(member, granted)
                .join(model, model.id == RolePrivilegeRow.object_id)
                .where(RolePrivilegeRow.object_kind == kind, parent_column == bindparam("parent")))
    assert what == "privileges on"
    return (select(RolePrivilegeRow.object_id, RolePrivilegeRow.privilege, RolePrivilegeRow.effect).join(member, granted)
            .where(RolePrivilegeRow.object_kind == kind,
                   RolePrivilegeRow.object_id.in_(bindparam("ids", expanding=True))))


def _collect(rows: Iterable[Any]) -> Named:
    return {(parent, name): (object_id, owner_of(creator, owner_row, owner_type, owner_name))
            for parent, name, object_id, creator, owner_row, owner_type, owner_name in rows}


def all_children(s: Session, kind: str, parent_id: int) -> Named:
    """Every `kind` object under `parent_id`, with its owner (one statement, a join)."""
    return _collect(s.connection().execute(_statement("all", kind), {"parent": parent_id}))


def named(s: Session, kind: str, wanted: Iterable[tuple[int, str]]) -> Named:
    """The `kind` objects called by these (parent id, name) pairs, with their owners, missing ones
    left out: a parent's children at once when more than WHOLE of them are wanted, the rest at most
    BATCH pairs per statement."""
    pairs = list(dict.fromkeys(wanted))
    per_parent: dict[int, int] = {}
    for parent, _ in pairs:
        per_parent[parent] = per_parent.get(parent, 0) + 1
    found: Named = {}
    for parent in sorted(p for p, count in per_parent.items() if count > WHOLE):
        found.update(all_children(s, kind, parent))
    rest = [pair for pair in pairs if per_parent[pair[0]] <= WHOLE]
    for batch in chunks(rest):
        parents, names = sorted({p for p, _ in batch}), sorted({n for _, n in batch})
        found.update(_collect(s.connection().execute(_statement("named", kind), {"parents": parents, "names": names})))
    return {pair: found[pair] for pair in pairs if pair in found}


def names_under(s: Session, kind: str, parent_id: int) -> list[str]:
    """The names of every `kind` object under `parent_id`."""
    return first_column(s, _statement("names", kind), {"parent": parent_id})


def first_column(s: Session, statement: Any, params: dict[str, Any]) -> list[Any]:
    """The first column of every row `statement` gives, fetched from the driver's cursor: for the
    10,000 names of a listing, a third of the time of SQLAlchemy's rows. Executed by SQLAlchemy (its
    events, its errors); an error while fetching is raised as SQLAlchemy's DBAPIError too."""
    conn = s.connection()
    result = conn.execute(statement, params)
    try:
        return [row[0] for row in result.cursor.fetchall()]
    except conn.dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(str(statement), params, exc, conn.dialect.loaded_dbapi.Error) from exc
    finally:
        result.close()


def owned_under(s: Session, kind: str, parent_id: int, user: str) -> set[str]:
    """The names of the `kind` objects under `parent_id` that `user` owns. The database picks the
    candidates (a collation may match more than equal strings), owner_of decides."""
    rows = s.connection().execute(_statement("owned", kind), {"parent": parent_id, "user": user})
    return {name for _, name, _, creator, owner_row, owner_type, owner_name in rows
            if owner_of(creator, owner_row, owner_type, owner_name) == (USER, user)}


def privileges_under(s: Session, principal: int, kind: str, parent_id: int) -> Privileges:
    """What the roles of `principal` allow and deny on the `kind` objects under `parent_id`, by name
    (one statement: the principal's grants joined with the children of the parent)."""
    return _privileges(s.connection().execute(_statement("privileges under", kind),
                                              {"principal": principal, "parent": parent_id}))


def privileges_on(s: Session, principal: int, kind: str, ids: Iterable[int]) -> Privileges:
    """What the roles of `principal` allow and deny on the `kind` objects with these ids, by id (at
    most BATCH ids per statement)."""
    rows: list[Any] = []
    for batch in chunks(sorted(set(ids))):
        rows += s.connection().execute(_statement("privileges on", kind), {"principal": principal,
                                                                           "ids": list(batch)}).all()
    return _privileges(rows)


def _privileges(rows: Iterable[Any]) -> Privileges:
    allowed: dict[Any, set[str]] = {}
    denied: dict[Any, set[str]] = {}
    for key, privilege, effect in rows:
        (denied if effect == DENY else allowed).setdefault(key, set()).add(privilege)
    return {k: (frozenset(allowed.get(k, ())), frozenset(denied.get(k, ()))) for k in {*allowed, *denied}}


_HELD = (select(RoleRow.id, RoleRow.name).join(RoleMemberRow, RoleMemberRow.role_id == RoleRow.id)
         .where(RoleMemberRow.principal_id == bindparam("principal")))


def held_roles(s: Session, principal: int) -> dict[int, str]:
    """id -> name of the roles granted to `principal` (at most the cap of roles per principal)."""
    return dict(s.connection().execute(_HELD, {"principal": principal}).all())
