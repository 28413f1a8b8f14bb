"""Which catalogs of a provider exist, in every metalake, with their properties: what a provider that
owns engine locations (the sqlite provider's files) checks a new catalog's location against
(Connector.location_guard)."""

from __future__ import annotations

from sqlalchemy import select

from gravimeta.store.entity_store import EntityStore
from gravimeta.store.models import CatalogRow, MetalakeRow


def catalogs_of_provider(store: EntityStore, provider: str,
                         exclude: tuple[str, str] | None = None) -> list[tuple[str, dict[str, str]]]:
    """("metalake.catalog", properties) of every catalog with `provider`, except `exclude` (metalake,
    catalog), read in one snapshot that starts now (so it sees every change committed before the call)."""
    query = (select(MetalakeRow.name, CatalogRow.name, CatalogRow.properties)
             .join(MetalakeRow, CatalogRow.metalake_id == MetalakeRow.id)
             .where(CatalogRow.provider == provider))
    with store.snapshot() as s:
        rows = s.execute(query).all()
    return [(f"{m}.{c}", dict(props or {})) for m, c, props in rows if (m, c) != exclude]
