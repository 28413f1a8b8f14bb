"""Tag operations. None is structural: the store's row locks and unique keys make them safe across
replicas (gravimeta/store/tags.py), so each takes only the in-process TreeLock Gravitino's TagManager
takes: the tag's identifier under the metalake's reserved `system` level (READ to read, WRITE to
create, alter or delete it), the tag namespace (READ) to list, and the object's identifier (READ) for
an object's tags and its associations (Gravitino nests a WRITE lock of the tag namespace in the
latter; one lock is enough here, the store orders the writes)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.changes import Changes
from gravimeta.entities import NameIdentifier, Tag
from gravimeta.metadata_objects import MetadataObject
from gravimeta.store import EntityStore
from gravimeta.store.tags import ObjectTag, TagStore

#: Gravitino keeps tags under NameIdentifier(metalake, "system", "tag", name)
SYSTEM, TAG = "system", "tag"


def apply_tag_changes(tag: Tag, changes: Changes) -> Tag:
    """Gravitino's TagChange kinds, in order."""
    for change in changes:
        kind = change["@type"]
        if kind == "rename":
            tag.name = change["newName"]
        elif kind == "updateComment":
            tag.comment = change.get("newComment")
        elif kind == "setProperty":
            tag.properties[change["property"]] = change["value"]
        elif kind == "removeProperty":
            tag.properties.pop(change["property"], None)
        else:
            raise errors.IllegalArgument(f"Unsupported tag change: {kind}")
    return tag


class TagDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator):
        self.tags, self.coordinator = TagStore(store), coordinator

    def _tag_lock(self, m: str, name: str | None, lock_type: LockType) -> AbstractContextManager[None]:
        levels = (m, SYSTEM, TAG) + ((name,) if name is not None else ())
        return self.coordinator.local(NameIdentifier(levels), lock_type)

    @staticmethod
    def _object_ident(m: str, obj: MetadataObject) -> NameIdentifier:
        return NameIdentifier.of(m) if obj.type == "metalake" else NameIdentifier((m, *obj.names))

    def list_tags(self, m: str) -> list[Tag]:
        with self._tag_lock(m, None, LockType.READ):
            return self.tags.list_tags(m)

    def get(self, m: str, name: str) -> Tag:
        with self._tag_lock(m, name, LockType.READ):
            return self.tags.get(m, name)

    def create(self, m: str, tag: Tag, user: str) -> Tag:
        with self._tag_lock(m, tag.name, LockType.WRITE):
            return self.tags.create(m, tag, user)

    def alter(self, m: str, name: str, changes: Changes, user: str) -> Tag:
        with self._tag_lock(m, name, LockType.WRITE):
            return self.tags.alter(m, name, lambda tag: apply_tag_changes(tag, changes), user)

    def delete(self, m: str, name: str) -> bool:
        with self._tag_lock(m, name, LockType.WRITE):
            return self.tags.delete(m, name)

    def objects_of(self, m: str, name: str) -> list[MetadataObject]:
        with self._tag_lock(m, name, LockType.READ):
            return self.tags.objects_of(m, name)

    def tags_of(self, m: str, obj: MetadataObject) -> list[ObjectTag]:
        with self.coordinator.local(self._object_ident(m, obj), LockType.READ):
            return self.tags.tags_of(m, obj)

    def tag_of(self, m: str, obj: MetadataObject, name: str) -> ObjectTag:
        """The tag `name` on the object itself, else on its nearest parent that has it (NoSuchTag if none)."""
        for found in self.tags_of(m, obj):
            if found[0].name == name:
                return found
        raise errors.NoSuchTag(f"Tag not found: {name} for object type: {obj.type}, full name: {obj.full_name} "
                               f"under metalake: {m}")

    def associate(self, m: str, obj: MetadataObject, add: list[str], remove: list[str]) -> list[str]:
        with self.coordinator.local(self._object_ident(m, obj), LockType.READ):
            return self.tags.associate(m, obj, add, remove)
