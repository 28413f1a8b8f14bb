"""Shared dispatcher helpers: in-use checks and the store/engine ordering with compensation."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from gravimeta import errors
from gravimeta.dispatch.catalogs import require_metalake_in_use
from gravimeta.entities import Catalog
from gravimeta.store import EntityStore

T = TypeVar("T")
log = logging.getLogger(__name__)


def catalog_in_use(store: EntityStore, metalake: str, catalog: str) -> Catalog:
    """Load a catalog for schema/table work: both it and its metalake must be in use."""
    require_metalake_in_use(store.get_metalake(metalake))
    loaded = store.get_catalog(metalake, catalog)
    if not loaded.in_use:
        raise errors.CatalogNotInUse(f"Catalog {metalake}.{catalog} is not in use; enable it first")
    return loaded


def store_then_engine(store_step: Callable[[], T], engine_step: Callable[[T], None], undo_store: Callable[[T], object]) -> T:
    """Record the change in the store, then apply it to the engine; if the engine fails, undo the
    store change so that the two agree, and re-raise the engine's error."""
    result = store_step()
    try:
        engine_step(result)
    except Exception:
        try:
            undo_store(result)
        except Exception:  # the original error matters more; the repair is logged for the operator
            log.exception("could not undo the store change after an engine failure")
        raise
    return result
