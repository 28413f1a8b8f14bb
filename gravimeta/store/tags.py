"""Tags of a metalake and their associations with catalogs, schemas, tables and columns.

Each operation is one store transaction with these rules:
- create locks the metalake row FOR SHARE (a metalake drop locks it FOR UPDATE and then deletes its
  tags: the two are ordered) and lets the unique (metalake, name) key decide a race of two creates;
- alter and delete lock the tag row FOR UPDATE; alter bumps its version (no lost update);
- an association names its object by kind and row id, never by name, so renames leave it alone. The
  transaction that writes it first locks the object's row FOR SHARE (gravimeta/store/objects.py) and
  the tags FOR SHARE. A drop of the object (or of a parent, by cascade) locks the same rows FOR UPDATE
  before it deletes the associations with them (gravimeta/store/attachments.py), so whichever commits
  first, no association outlives its object: either the drop waits and then deletes the new association
  with the object, or the association finds the object gone (NoSuchMetadataObject).
  A rename of the object waits for the association too, and then keeps it (same id); an association
  that comes after the rename finds the object under its new name only.
  The unique (tag, kind, id) key turns two racing associations of the same tag into
  TagAlreadyAssociated for the second, as Gravitino answers an association that exists already.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.entities import Tag
from gravimeta.metadata_objects import MetadataObject
from gravimeta.store import objects
from gravimeta.store.attached_models import TAGGABLE, TagRelationRow, TagRow, audit_of, touch
from gravimeta.store.database import disabled_for_test
from gravimeta.store.entity_store import EntityStore, _flush_unique, _is_unique_violation, now_iso
from gravimeta.store.models import MetalakeRow

#: (tag, inherited): a tag of an object, and whether it comes from a parent of the object
ObjectTag = tuple[Tag, bool]


def tag_of(row: TagRow) -> Tag:
    return Tag(row.name, row.comment, dict(row.properties or {}), audit_of(row), row.version)


class TagStore:
    def __init__(self, store: EntityStore):
        self.store = store

    # ------------------------------------------------------------------ the tags themselves

    def list_tags(self, m: str) -> list[Tag]:
        with self.store.snapshot() as s:
            metalake_id = _metalake_in_use(s, m)
            return [tag_of(r) for r in s.scalars(select(TagRow).where(TagRow.metalake_id == metalake_id)
                                                  .order_by(TagRow.name))]

    def get(self, m: str, name: str) -> Tag:
        with self.store.snapshot() as s:
            return tag_of(_tag_row(s, m, _metalake_in_use(s, m), name))

    def create(self, m: str, tag: Tag, user: str) -> Tag:
        def work(s: Session) -> Tag:
            metalake_id = _metalake_in_use(s, m, lock="share")
            row = TagRow(metalake_id=metalake_id, name=tag.name, comment=tag.comment,
                         properties=dict(tag.properties), version=1)
            row.creator, row.create_time = user, now_iso()  # Gravitino: no lastModifier on a new tag
            s.add(row)
            _flush_unique(s, errors.TagAlreadyExists(f"Tag with name {tag.name} under metalake {m} already exists"))
            return tag_of(row)

        return self.store.write(work)

    def alter(self, m: str, name: str, mutate: Callable[[Tag], Tag], user: str) -> Tag:
        def work(s: Session) -> Tag:
            row = _tag_row(s, m, _metalake_in_use(s, m), name, lock=True)
            after = mutate(copy.deepcopy(tag_of(row)))
            row.name, row.comment, row.properties = after.name, after.comment, dict(after.properties)
            touch(row, user, now_iso())
            _flush_unique(s, errors.TagAlreadyExists(f"Tag with name {after.name} under metalake {m} already exists"))
            return tag_of(row)

        return self.store.write(work)

    def delete(self, m: str, name: str) -> bool:
        """Delete the tag and every association of it; False when there is no such tag."""

        def work(s: Session) -> bool:
            metalake_id = _metalake_in_use(s, m)
            row = s.scalar(_tag_query(metalake_id, name).with_for_update())
            if row is None:
                return False
            s.execute(delete(TagRelationRow).where(TagRelationRow.tag_id == row.id))
            s.execute(delete(TagRow).where(TagRow.id == row.id))
            return True

        return self.store.write(work)

    def objects_of(self, m: str, name: str) -> list[MetadataObject]:
        """The objects the tag is associated with, catalogs first, each kind by full name."""
        with self.store.snapshot() as s:
            metalake_id = _metalake_in_use(s, m)
            tag = _tag_row(s, m, metalake_id, name)
            relations = s.execute(select(TagRelationRow.object_type, TagRelationRow.object_id)
                                  .where(TagRelationRow.tag_id == tag.id)).all()
            found: list[MetadataObject] = []
            for kind in TAGGABLE:
                names = objects.full_names(s, metalake_id, kind, [i for k, i in relations if k == kind])
                found.extend(MetadataObject(kind, tuple(n.split("."))) for n in sorted(names.values()))
            return found

    # ------------------------------------------------------------------ an object's tags

    def tags_of(self, m: str, obj: MetadataObject) -> list[ObjectTag]:
        """The object's own tags (by name), then those of its parents, nearest first; a tag the object
        has itself is not repeated as inherited (Gravitino's Set of TagDTOs)."""
        with self.store.snapshot() as s:
            resolved = objects.resolve(self.store, s, m, obj)
            return _tags_on_chain(s, resolved.chain)

    def associate(self, m: str, obj: MetadataObject, add: list[str], remove: list[str]) -> list[str]:
        """Add and remove tags of the object in one transaction; returns the object's own tags after it
        (names, sorted). Names in both lists are neither added nor removed; names of tags that do not
        exist are ignored; adding a tag the object has already is TagAlreadyAssociated (as in Gravitino)."""
        both = set(add) & set(remove)
        to_add, to_remove = sorted(set(add) - both), sorted(set(remove) - both)
        if obj.type not in TAGGABLE and obj.type not in ("fileset", "topic", "model"):
            raise errors.IllegalArgument(f"Cannot associate tags for unsupported metadata object type {obj.type.upper()}")

        def work(s: Session) -> list[str]:
            lock = None if disabled_for_test("tag_object_lock") else "share"  # TEST-ONLY switch
            resolved = objects.resolve(self.store, s, m, obj, lock=lock)
            failpoints.hit("tags.after_resolve", metalake=m, object=obj.full_name, kind=obj.type)
            if to_add:
                tag_ids = list(s.scalars(select(TagRow.id).where(TagRow.metalake_id == resolved.metalake_id,
                                                                  TagRow.name.in_(to_add))
                                         .order_by(TagRow.id).with_for_update(read=True)))
                s.add_all(TagRelationRow(tag_id=t, object_type=resolved.kind, object_id=resolved.id) for t in tag_ids)
                _flush_associated(s, to_add, obj)
            if to_remove:
                removed = select(TagRow.id).where(TagRow.metalake_id == resolved.metalake_id, TagRow.name.in_(to_remove))
                s.execute(delete(TagRelationRow).where(
                    TagRelationRow.object_type == resolved.kind, TagRelationRow.object_id == resolved.id,
                    TagRelationRow.tag_id.in_(list(s.scalars(removed)))))
            return [tag.name for tag, _ in _tags_on_chain(s, resolved.chain[:1])]

        return self.store.write(work)


# ---------------------------------------------------------------------- helpers


def _metalake_in_use(s: Session, m: str, lock: str | None = None) -> int:
    query = select(MetalakeRow).where(MetalakeRow.name == m)
    row = s.scalar(query.with_for_update(read=True) if lock else query)
    if row is None:
        raise errors.NoSuchMetalake(f"Metalake {m} does not exist")
    if not row.in_use:
        raise errors.MetalakeNotInUse(f"Metalake {m} is not in use; enable it first")
    return row.id


def _tag_query(metalake_id: int, name: str):  # type: ignore[no-untyped-def]
    return select(TagRow).where(TagRow.metalake_id == metalake_id, TagRow.name == name)


def _tag_row(s: Session, m: str, metalake_id: int, name: str, lock: bool = False) -> TagRow:
    query = _tag_query(metalake_id, name)
    row = s.scalar(query.with_for_update() if lock else query)
    if row is None:
        raise errors.NoSuchTag(f"Tag with name {name} under metalake {m} does not exist")
    return row


def _tags_on_chain(s: Session, chain: tuple[tuple[str, int], ...]) -> list[ObjectTag]:
    found: list[ObjectTag] = []
    seen: set[str] = set()
    for depth, (kind, object_id) in enumerate(chain):
        rows = s.scalars(select(TagRow).join(TagRelationRow, TagRelationRow.tag_id == TagRow.id)
                         .where(TagRelationRow.object_type == kind, TagRelationRow.object_id == object_id)
                         .order_by(TagRow.name))
        for row in rows:
            if row.name not in seen:
                seen.add(row.name)
                found.append((tag_of(row), depth > 0))
    return found


def _flush_associated(s: Session, names: list[str], obj: MetadataObject) -> None:
    try:
        s.flush()
    except IntegrityError as exc:
        if _is_unique_violation(exc):
            raise errors.TagAlreadyAssociated(
                f"Failed to associate tags for metadata object due to some tags {names} already associated to the "
                f"metadata object {obj}") from exc
        raise
