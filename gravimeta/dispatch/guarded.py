"""Shared dispatcher helpers: in-use checks. (The store/engine ordering lives in journal.py.)"""

from __future__ import annotations

from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.entities import Catalog, Metalake
from gravimeta.store import EntityStore


def catalog_in_use(store: EntityStore, metalake: str, catalog: str) -> Catalog:
    """Load a catalog for schema/table work: both it and its metalake must be in use."""
    found, loaded = store.get_metalake_and_catalog(metalake, catalog)  # one snapshot, one query
    return require_in_use(metalake, catalog, found, loaded)


def catalog_in_use_in(s: Session, metalake: str, catalog: str) -> Catalog:
    """catalog_in_use inside the caller's transaction."""
    found, loaded = EntityStore.metalake_and_catalog_in(s, metalake, catalog)
    return require_in_use(metalake, catalog, found, loaded)


def require_in_use(metalake: str, catalog: str, found: Metalake, loaded: Catalog | None) -> Catalog:
    """The in-use check on a metalake and its catalog `catalog` (None: there is no such catalog)."""
    check_in_use(metalake, catalog, found.in_use, None if loaded is None else loaded.in_use)
    assert loaded is not None
    return loaded


def check_in_use(metalake: str, catalog: str, metalake_in_use: bool, catalog_in_use: bool | None) -> None:
    """The same check on the flags alone (catalog_in_use None: there is no such catalog)."""
    if not metalake_in_use:
        raise errors.MetalakeNotInUse(f"Metalake {metalake} is not in use; enable it first")
    if catalog_in_use is None:
        raise errors.NoSuchCatalog(f"Catalog {metalake}.{catalog} does not exist")
    if not catalog_in_use:
        raise errors.CatalogNotInUse(f"Catalog {metalake}.{catalog} is not in use; enable it first")
