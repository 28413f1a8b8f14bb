"""The EntityStore: gravimeta's own record of the metadata tree, in a relational database."""

from gravimeta.store.entity_store import EntityStore

__all__ = ["EntityStore"]
