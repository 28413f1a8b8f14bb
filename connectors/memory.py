"""The in-memory connector (`provider: memory`).

Its "engine" is a dict in the worker process, so it is a managed catalog: the EntityStore is the
authority and this connector only mirrors it for the life of the process. Its calls are lenient
(create of an existing object and drop of a missing one succeed) because with several workers each
process has its own copy.
"""

from __future__ import annotations

import threading

from connectors.base import Connector, PropertySpec
from gravimeta.entities import Schema, Table

_LOCK = threading.Lock()
# (metalake, catalog) -> schema -> table name -> Table
_ENGINES: dict[tuple[str, str], dict[str, dict[str, Table]]] = {}


class MemoryConnector(Connector):
    property_specs = (PropertySpec("comment", description="free text, ignored"),)
    supports_purge = True
    process_local = True

    @property
    def _schemas(self) -> dict[str, dict[str, Table]]:
        return _ENGINES.setdefault((self.context.metalake, self.context.catalog), {})

    def create_schema(self, schema: Schema) -> None:
        with _LOCK:
            self._schemas.setdefault(schema.name, {})

    def drop_schema(self, name: str, cascade: bool) -> bool:
        with _LOCK:
            return self._schemas.pop(name, None) is not None

    def list_schemas(self) -> list[str]:
        with _LOCK:
            return sorted(self._schemas)

    def create_table(self, schema: str, table: Table) -> None:
        with _LOCK:
            self._schemas.setdefault(schema, {})[table.name] = table

    def alter_table(self, schema: str, before: Table, after: Table) -> None:
        with _LOCK:
            self._schemas.setdefault(schema, {})[after.name] = after

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str) -> None:
        with _LOCK:
            table = self._schemas.setdefault(schema, {}).pop(name, None)
            if table is not None:
                self._schemas.setdefault(new_schema, {})[new_name] = table

    def drop_table(self, schema: str, name: str) -> bool:
        with _LOCK:
            return self._schemas.get(schema, {}).pop(name, None) is not None

    def purge_table(self, schema: str, name: str) -> bool:
        return self.drop_table(schema, name)

    def list_tables(self, schema: str) -> list[str]:
        with _LOCK:
            return sorted(self._schemas.get(schema, {}))

    def close(self) -> None:
        with _LOCK:
            _ENGINES.pop((self.context.metalake, self.context.catalog), None)
