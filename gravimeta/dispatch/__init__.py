"""Dispatchers: one per entity kind. Each picks the lock scope and type of an operation (Gravitino's
table in gravitino-api.md §2.2), goes through the coordinator, and calls the connector and the store."""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta.dispatch.catalogs import CatalogDispatcher
from gravimeta.dispatch.metalakes import MetalakeDispatcher
from gravimeta.dispatch.schemas import SchemaDispatcher
from gravimeta.dispatch.tables import TableDispatcher


@dataclass
class Dispatchers:
    metalakes: MetalakeDispatcher
    catalogs: CatalogDispatcher
    schemas: SchemaDispatcher
    tables: TableDispatcher
