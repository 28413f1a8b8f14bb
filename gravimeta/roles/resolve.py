"""A role's securable objects, names to ids: set-based in a snapshot before the write, verified by id
inside it.

A role create or override may name up to the cap of securable objects (gravimeta/roles/limits.py).
Resolving them one by one inside the write transaction held every other write of a SQLite store for
seconds (BEGIN IMMEDIATE is one lock for the whole database), and on PostgreSQL and MariaDB held row
locks as long. So `resolve` runs in a snapshot: the catalogs, schemas, tables and tags named, at most
bulk.BATCH names per statement; an object it does not find plainly (missing, a disabled catalog, a
kind gravimeta keeps none of) goes through the one-by-one resolution, which raises Gravitino's error
for it. Objects are checked in request order, each one's privileges before its existence, as
Gravitino does. Then the write calls `verify`: each object's row locked FOR SHARE by id (a drop waits
for the role, or the role sees it gone), still called what the request named, its catalog still in
use. A failed verification means the tree changed between the two; the caller resolves again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gravimeta.access import bulk
from gravimeta.metadata_objects import MetadataObject
from gravimeta.roles.privileges import Privilege, check_binding
from gravimeta.store import objects
from gravimeta.store.attached_models import TagRow
from gravimeta.store.models import CatalogRow, SchemaRow, TableRow


@dataclass(frozen=True)
class Target:
    """An object a privilege can name: its kind (upper case), its id, its metalake, the type of the
    catalog it is or is in (upper case, None above catalogs), and that catalog's id."""

    kind: str
    id: int
    metalake_id: int
    catalog_type: str | None = None
    catalog_id: int | None = None


Resolved = list[tuple[MetadataObject, list[Privilege], Target]]
#: the one-by-one resolution of one object (RoleStore._target): a Target, or Gravitino's error
OneByOne = Callable[[Session, MetadataObject, list[Privilege]], Target]
_MODELS: dict[str, Any] = {"CATALOG": CatalogRow, "SCHEMA": SchemaRow, "TABLE": TableRow, "TAG": TagRow}


def resolve(s: Session, m: str, metalake_id: int, grants: Sequence[tuple[MetadataObject, list[Privilege]]],
            one_by_one: OneByOne) -> Resolved:
    """Each (object, privileges) of `grants` with its Target, in order; the first object that does not
    resolve raises its error (see the module docstring)."""
    plain = _plainly(s, m, metalake_id, [obj for obj, _ in grants])
    out: Resolved = []
    for obj, privileges in grants:
        target = plain.get(obj)
        if target is None:
            target = one_by_one(s, obj, privileges)
        else:
            for privilege in privileges:  # the kind first, then the catalog's type, as one by one
                check_binding(privilege, target.kind, obj.full_name)
            for privilege in privileges:
                check_binding(privilege, target.kind, obj.full_name, target.catalog_type)
        out.append((obj, privileges, target))
    return out


def _plainly(s: Session, m: str, metalake_id: int, wanted: list[MetadataObject]) -> dict[MetadataObject, Target]:
    """The objects found without a question: the metalake itself, tags, and catalogs, schemas and
    tables whose catalog is in use (a catalog in use or not)."""
    found: dict[MetadataObject, Target] = {}
    tags = bulk.named(s, "TAG", ((metalake_id, o.name) for o in wanted if o.type == "tag"))
    catalogs = _catalogs(s, metalake_id, {o.names[0] for o in wanted if o.type in ("catalog", "schema", "table")})
    schemas = bulk.named(s, "SCHEMA", ((catalogs[o.names[0]][0], o.names[1]) for o in wanted
                                       if o.type in ("schema", "table") and o.names[0] in catalogs))
    tables = bulk.named(s, "TABLE", ((schemas[(catalogs[o.names[0]][0], o.names[1])][0], o.names[2]) for o in wanted
                                     if o.type == "table" and o.names[0] in catalogs
                                     and (catalogs[o.names[0]][0], o.names[1]) in schemas))
    for obj in wanted:
        if obj.type == "metalake" and obj.name == m:
            found[obj] = Target("METALAKE", metalake_id, metalake_id)
        elif obj.type == "tag" and (metalake_id, obj.name) in tags:
            found[obj] = Target("TAG", tags[(metalake_id, obj.name)][0], metalake_id)
        elif obj.type in ("catalog", "schema", "table") and obj.names[0] in catalogs:
            catalog_id, catalog_type, in_use = catalogs[obj.names[0]]
            if obj.type == "catalog":
                found[obj] = Target("CATALOG", catalog_id, metalake_id, catalog_type, catalog_id)
                continue
            schema = schemas.get((catalog_id, obj.names[1]))
            if not in_use or schema is None:
                continue
            if obj.type == "schema":
                found[obj] = Target("SCHEMA", schema[0], metalake_id, catalog_type, catalog_id)
                continue
            table = tables.get((schema[0], obj.names[2]))
            if table is not None:
                found[obj] = Target("TABLE", table[0], metalake_id, catalog_type, catalog_id)
    return found


def _catalogs(s: Session, metalake_id: int, names: set[str]) -> dict[str, tuple[int, str, bool]]:
    """name -> (id, type in upper case, in use) of the metalake's catalogs called `names`."""
    found: dict[str, tuple[int, str, bool]] = {}
    for batch in bulk.chunks(sorted(names)):
        for object_id, name, kind, in_use in s.execute(select(
                CatalogRow.id, CatalogRow.name, CatalogRow.type, CatalogRow.in_use).where(
                CatalogRow.metalake_id == metalake_id, CatalogRow.name.in_(batch))):
            if name in names:
                found[name] = (object_id, (kind or "").upper(), bool(in_use))
    return found


def verify(s: Session, metalake_id: int, resolved: Resolved, lock: bool = True) -> bool:
    """Inside the write: whether every resolved object is still there (its row locked FOR SHARE by id
    when `lock`), still called what the request named, and below a catalog, in a catalog in use."""
    by_kind: dict[str, dict[int, str]] = {}
    for obj, _, target in resolved:
        if target.kind == "METALAKE":
            if target.id != metalake_id:
                return False
            continue
        by_kind.setdefault(target.kind, {})[target.id] = obj.full_name
    for kind in ("CATALOG", "SCHEMA", "TABLE", "TAG"):  # root first, as every drop locks
        wanted = by_kind.get(kind)
        if not wanted:
            continue
        model = _MODELS[kind]
        present: set[int] = set()
        for batch in bulk.chunks(sorted(wanted)):
            query = select(model.id).where(model.id.in_(batch))
            present.update(s.scalars(query.with_for_update(read=True) if lock else query))
        if present != set(wanted):
            return False
        names: dict[int, str] = {}
        for batch in bulk.chunks(sorted(wanted)):
            if kind == "TAG":
                names.update(s.execute(select(TagRow.id, TagRow.name).where(
                    TagRow.metalake_id == metalake_id, TagRow.id.in_(batch))).all())
            else:
                names.update(objects.full_names(s, metalake_id, kind.lower(), batch))
        if names != wanted:
            return False
    below = {t.catalog_id for _, _, t in resolved if t.kind in ("SCHEMA", "TABLE") and t.catalog_id is not None}
    for batch in bulk.chunks(sorted(below)):
        if not all(s.scalars(select(CatalogRow.in_use).where(CatalogRow.id.in_(batch)))):
            return False
    return True
