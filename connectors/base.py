"""The connector SPI: what a catalog's external system must do for gravimeta.

A connector owns the *engine* side of a catalog (real schemas and tables in some external system);
the EntityStore owns gravimeta's own record of them. Connectors never import the store: the dispatcher
calls both, in the order documented per operation in docs/consistency.md.

Contract for implementers:
- Calls must be idempotent where the name says so (drop of a missing object returns False, create of
  an object that already exists with the same definition may succeed), because a dispatcher may repeat
  a call while repairing an interrupted operation.
- Raise gravimeta.errors exceptions (ConnectionFailed, IllegalArgument, UnsupportedOperation,
  SchemaAlreadyExists, ...) so that the client gets the right Gravitino error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from gravimeta.entities import Schema, Table


@dataclass(frozen=True)
class CatalogContext:
    """What a connector is told about the catalog it serves."""

    metalake: str
    catalog: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PropertySpec:
    """One catalog property a provider understands."""

    name: str
    required: bool = False
    description: str = ""


class Connector(ABC):
    """One instance serves one catalog."""

    #: catalog properties this provider accepts; anything else is rejected with 400.
    property_specs: tuple[PropertySpec, ...] = ()
    #: whether DELETE ...?purge=true is supported.
    supports_purge: bool = False
    #: True when the engine keeps no state outside this worker process (it only mirrors the store, which
    #: is the authority): its schema and table operations then need no journal and run in ONE store
    #: transaction, which also makes PostgreSQL advisory locks sound for them (docs/consistency.md §2.1).
    process_local: bool = False

    def __init__(self, context: CatalogContext):
        self.context = context

    @classmethod
    def validate_properties(cls, properties: dict[str, str]) -> None:
        """Raise IllegalArgument when required properties are missing or unknown ones are given."""
        from gravimeta.errors import IllegalArgument

        known = {spec.name for spec in cls.property_specs}
        unknown = sorted(k for k in properties if k not in known and not _is_generic_property(k))
        if unknown:
            raise IllegalArgument(f"Unknown catalog properties for this provider: {', '.join(unknown)}")
        missing = sorted(s.name for s in cls.property_specs if s.required and not properties.get(s.name))
        if missing:
            raise IllegalArgument(f"Missing required catalog properties: {', '.join(missing)}")

    def test_connection(self) -> None:  # noqa: B027 - an optional hook; doing nothing is the default
        """Raise ConnectionFailed when the external system cannot be reached."""

    # schemas
    @abstractmethod
    def create_schema(self, schema: Schema) -> None: ...

    @abstractmethod
    def drop_schema(self, name: str, cascade: bool) -> bool: ...

    @abstractmethod
    def list_schemas(self) -> list[str]: ...

    # tables
    @abstractmethod
    def create_table(self, schema: str, table: Table) -> None: ...

    @abstractmethod
    def alter_table(self, schema: str, before: Table, after: Table) -> None:
        """Make the engine's table `before` look like `after` (same name; renames go through rename_table)."""

    @abstractmethod
    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str) -> None: ...

    @abstractmethod
    def drop_table(self, schema: str, name: str) -> bool: ...

    def purge_table(self, schema: str, name: str) -> bool:
        from gravimeta.errors import UnsupportedOperation

        raise UnsupportedOperation(f"Provider of catalog {self.context.catalog} does not support purge")

    @abstractmethod
    def list_tables(self, schema: str) -> list[str]: ...

    def close(self) -> None:  # noqa: B027 - an optional hook; doing nothing is the default
        """Release resources; called when the catalog is dropped or the server stops."""


# Properties every catalog may carry whatever its provider (Gravitino's own bookkeeping keys).
GENERIC_PROPERTY_PREFIXES = ("gravitino.", "in-use", "metalake-in-use")


def _is_generic_property(key: str) -> bool:
    return key.startswith(GENERIC_PROPERTY_PREFIXES)
