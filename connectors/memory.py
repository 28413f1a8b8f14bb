"""The in-memory connector (`provider: memory`).

Its "engine" is a dict in the worker process, so it is a managed catalog: the EntityStore is the
authority and this connector only mirrors it for the life of the process. Its calls are lenient
(create of an existing object and drop of a missing one succeed) because with several workers each
process has its own copy. Fences are ignored: nothing outside the process could receive a paused
holder's call later (its operations run in one store transaction, docs/consistency.md §2.1).
"""

from __future__ import annotations

import threading

from connectors.base import NO_FENCE, PARTITIONS_IN_STORE, Connector, Fence
from gravimeta.entities import Schema, Table

_LOCK = threading.Lock()
# (metalake, catalog) -> schema -> table name -> Table
_ENGINES: dict[tuple[str, str], dict[str, dict[str, Table]]] = {}


class MemoryConnector(Connector):
    supports_purge = True
    process_local = True
    # its partitions live in the store, which every worker and replica reads (gravimeta/store/partitions.py);
    # there is no data to purge, so a purge is a drop
    partitions = PARTITIONS_IN_STORE
    supports_partition_purge = True

    @property
    def _schemas(self) -> dict[str, dict[str, Table]]:
        return _ENGINES.setdefault((self.context.metalake, self.context.catalog), {})

    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None:
        with _LOCK:
            self._schemas.setdefault(schema.name, {})

    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool:
        with _LOCK:
            return self._schemas.pop(name, None) is not None

    def list_schemas(self) -> list[str]:
        with _LOCK:
            return sorted(self._schemas)

    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None:
        with _LOCK:
            self._schemas.setdefault(schema, {})[table.name] = table

    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        with _LOCK:
            self._schemas.setdefault(schema, {})[after.name] = after

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None:
        with _LOCK:
            table = self._schemas.setdefault(schema, {}).pop(name, None)
            if table is not None:
                self._schemas.setdefault(new_schema, {})[new_name] = table

    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        with _LOCK:
            return self._schemas.get(schema, {}).pop(name, None) is not None

    def purge_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        return self.drop_table(schema, name)

    def list_tables(self, schema: str) -> list[str]:
        with _LOCK:
            return sorted(self._schemas.get(schema, {}))

    def close(self) -> None:
        with _LOCK:
            _ENGINES.pop((self.context.metalake, self.context.catalog), None)
