"""Dispatchers: one per entity kind. Each picks the lock scope and type of an operation (Gravitino's
table in gravitino-api.md §2.2), goes through the coordinator, and calls the connector and the store."""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta.dispatch.catalogs import CatalogDispatcher
from gravimeta.dispatch.metalakes import MetalakeDispatcher
from gravimeta.dispatch.partitions import PartitionDispatcher
from gravimeta.dispatch.schemas import SchemaDispatcher
from gravimeta.dispatch.statistics import StatisticDispatcher
from gravimeta.dispatch.tables import TableDispatcher
from gravimeta.dispatch.tags import TagDispatcher
from gravimeta.ownership.dispatcher import OwnershipDispatcher
from gravimeta.roles.dispatcher import RoleDispatcher


@dataclass
class Dispatchers:
    metalakes: MetalakeDispatcher
    catalogs: CatalogDispatcher
    schemas: SchemaDispatcher
    tables: TableDispatcher
    partitions: PartitionDispatcher
    statistics: StatisticDispatcher
    tags: TagDispatcher
    #: owners, users and groups (gravimeta/ownership); None only where a test wires dispatchers by hand
    ownership: OwnershipDispatcher | None = None
    #: roles and privileges (gravimeta/roles); None only where a test wires dispatchers by hand
    roles: RoleDispatcher | None = None
