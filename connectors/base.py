"""The connector SPI: what a catalog's external system must do for gravimeta.

A connector owns the *engine* side of a catalog (real schemas and tables in some external system);
the EntityStore owns gravimeta's own record of them. Connectors never import the store: the dispatcher
calls both, in the order documented per operation in docs/consistency.md.

Contract for implementers:
- Calls must be idempotent where the name says so (drop of a missing object returns False, create of
  an object that already exists with the same definition may succeed), because a dispatcher may repeat
  a call while repairing an interrupted operation.
- Raise gravimeta.errors exceptions (ConnectionFailed, IllegalArgument, UnsupportedOperation,
  SchemaAlreadyExists, ...) so that the client gets the right Gravitino error. A 4xx-class error must
  mean "nothing was changed"; anything else (ConnectionFailed, a 5xx) means "it may have been".
- Cannot find the engine (missing file, wrong root, unknown host): raise ConnectionFailed. Never answer
  an observation (list_schemas, list_tables) as "absent" without having reached the engine itself: the
  repair takes "absent" as evidence and changes the store by it.

The fence contract (connectors/fencing.py, docs/consistency.md §4). Every mutating call (create_*,
drop_*, rename_table, alter_table, purge_table, add/drop_partition) receives `fence=`: the identity key
of the object the cross-node claim covers, the claim's fencing token, and the deadline by which the
call must end on the caller's side. gravimeta makes these calls only through its engine door
(gravimeta/dispatch/engine_door.py); connectors/door_guard.py makes a call outside it fail.
- Every connector bounds the waits of a call by `fence.timeout(...)` (it raises StaleFence once the
  deadline has passed: then nothing may be sent).
- A connector whose engine can keep a little state sets `checks_fences = True` and makes the engine
  check the fence *in the same transaction as the change*, by fencing.highest_conflicting: a call whose
  token is lower than one the engine has seen on its scope (or a related scope, when fence.related) is
  refused with errors.StaleFence and changes nothing; otherwise the engine records the token. It also
  implements `fence_barrier(fence)`, which records a token without changing anything else: the repair
  calls it before it observes the engine, so that no call of an older holder can land after the
  observation. A fence without a token (no claim) is neither checked nor recorded.
- A connector whose engine cannot check fences leaves `checks_fences = False` and says in
  `call_window_s()` how long after it was sent a call may still change the engine. The repair does not
  take "not applied" as final before a holder has been gone that long (the remaining window is
  described in docs/consistency.md §6).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from connectors import door_guard
from connectors.fencing import NO_FENCE, Fence
from connectors.properties import CatalogProperties
from gravimeta.entities import Schema, Table

__all__ = ["NO_FENCE", "CatalogContext", "Connector", "Fence"]

#: Connector.partitions: where a catalog's table partitions live
PARTITIONS_IN_ENGINE, PARTITIONS_IN_STORE = "engine", "store"
#: call_window_s() of a connector that does not say: how long a call may still change its engine
DEFAULT_CALL_WINDOW_S = 30.0

#: how an engine's own identity is spelled among its locations (Connector.engine_locations)
IDENTITY_LOCATION = "id:"


@dataclass(frozen=True)
class CatalogContext:
    """What a connector is told about the catalog it serves."""

    metalake: str
    catalog: str
    properties: dict[str, str] = field(default_factory=dict)


class Connector(ABC):
    """One instance serves one catalog."""

    #: the catalog properties this provider declares (required, immutable, reserved, value checks);
    #: any other key is stored as given (Gravitino's rules: connectors/properties.py)
    catalog_properties: CatalogProperties = CatalogProperties(())
    #: whether DELETE ...?purge=true is supported.
    supports_purge: bool = False
    #: True when the engine keeps no state outside this worker process (it only mirrors the store, which
    #: is the authority): its schema and table operations then need no journal and run in ONE store
    #: transaction, which also makes PostgreSQL advisory locks sound for them (docs/consistency.md §2.1).
    process_local: bool = False
    #: where the catalog's table partitions live (docs/consistency.md §8): PARTITIONS_IN_ENGINE (the
    #: partition calls below ask the engine, which keeps them: hive), PARTITIONS_IN_STORE (gravimeta's
    #: store keeps them: a process-local connector, whose engine only mirrors the store, so that every
    #: worker and replica sees them: memory), or None (no partitions: 405 UnsupportedOperation, as
    #: Gravitino answers for a table that does not support partition operations: sqlite).
    partitions: str | None = None
    #: whether DELETE .../partitions/{p}?purge=true is supported (Gravitino's default: no)
    supports_partition_purge: bool = False
    #: True when the engine checks each mutating call's fence storage-side and implements fence_barrier
    #: (the fence contract in the module docstring)
    checks_fences: bool = False
    #: the engine's identity once engine_identity found it (remember_identity)
    _known_identity: str | None = None

    def __init__(self, context: CatalogContext):
        self.context = context

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every mutating method a connector defines refuses to run outside gravimeta's engine door
        once the server requires the door (connectors/door_guard.py)."""
        super().__init_subclass__(**kwargs)
        for name in door_guard.MUTATORS:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "__door_guarded__", False):
                setattr(cls, name, door_guard.guarded(method))

    @classmethod
    def validate_properties(cls, properties: dict[str, str]) -> None:
        """The checks of a catalog create (IllegalArgument): no reserved key, every required key, valid
        values of declared keys."""
        cls.catalog_properties.validate_create(properties)

    @classmethod
    def validate_property_changes(cls, upserts: dict[str, str], deletes: list[str], after: dict[str, str]) -> None:
        """The checks of a catalog alter: no immutable or reserved key set or removed, valid values of
        the declared keys set, no required key left out of `after` (the properties once altered)."""
        cls.catalog_properties.validate_alter(upserts, deletes, after)

    @classmethod
    @contextmanager
    def location_guard(cls, properties: dict[str, str],
                       in_use: Callable[[], Iterable[tuple[str, dict[str, str]]]]) -> Iterator[None]:
        """Wrap the store write that creates a catalog with `properties` (or changes its properties): a
        provider whose catalogs own engine locations that must not be shared (the sqlite provider's
        files) takes a lock every process shares, checks `in_use()` (label and properties of every other
        catalog of this provider, read from the store under that lock) and raises IllegalArgument on a
        conflict. The default owns nothing exclusively and reads nothing."""
        yield

    def test_connection(self) -> None:  # noqa: B027 - an optional hook; doing nothing is the default
        """Raise ConnectionFailed when the external system cannot be reached."""

    def prepare_engine(self) -> None:  # noqa: B027 - an optional hook; doing nothing is the default
        """Called when the catalog is created: make what the engine needs to be found later (the sqlite
        provider creates its catalog file, so that a missing file afterwards means "unreachable", not
        "empty"). Idempotent; raise ConnectionFailed when it cannot."""

    def fence_barrier(self, fence: Fence) -> None:  # noqa: B027 - a no-op for engines without fences
        """Make the engine see `fence` without changing anything else: afterwards it refuses every call
        with a lower token on the scope (StaleFence if it has seen a higher one already). Engines that
        cannot check fences do nothing (checks_fences = False)."""

    def engine_locations(self) -> frozenset[str]:
        """Where this catalog's engine is: each place it is reached at, spelled one way whatever the
        catalog's properties call it (the hive provider's metastore endpoints by address and port, the
        sqlite provider's resolved catalog file), so that two catalogs on one engine share at least one,
        however each names it, and 'id:<identity>' once this connector knows the engine's identity
        (engine_identity answered; never asked here, so this makes no engine call). Empty when the
        provider cannot say. A dropped catalog's retirement that its engine could not be told at the drop
        is delivered before a later catalog sharing a location with it changes or imports anything
        (gravimeta/dispatch/retirement.py)."""
        return self.identity_locations()

    def engine_identity(self, deadline: float | None = None) -> str | None:
        """The engine's own identity, as the engine itself keeps and reports it (the hive stub's id kept
        with its storage, a sqlite catalog file's id kept in the file): one engine has one, however and
        wherever it is reached, so two catalogs on it share it where they share no place (an address that
        changed behind DNS, another listening address, one file reached by two paths). None when the
        engine keeps none (a real Hive metastore; providers that cannot say); ConnectionFailed when the
        engine cannot be asked now. May ask the engine, within the connector's timeout and before
        `deadline` (time.monotonic(); StaleFence once it has passed); a connector remembers an identity
        once found (engine_locations then names it)."""
        return None

    def identity_locations(self) -> frozenset[str]:
        """{'id:<identity>'} once engine_identity has found one, else empty (no engine call)."""
        return frozenset({IDENTITY_LOCATION + self._known_identity}) if self._known_identity else frozenset()

    def remember_identity(self, identity: str | None) -> str | None:
        """For engine_identity implementations: keep what the engine answered; returns it."""
        self._known_identity = identity
        return identity

    def call_window_s(self) -> float:
        """How long after it was sent one call may still change the engine (also after the caller gave
        up on it). The repair waits this long for an engine that does not check fences."""
        return DEFAULT_CALL_WINDOW_S

    # schemas
    @abstractmethod
    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None: ...

    @abstractmethod
    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool: ...

    @abstractmethod
    def list_schemas(self) -> list[str]: ...

    # describing what the engine has (the import of objects made outside gravimeta, docs/compatibility.md)

    def load_schema(self, name: str) -> Schema:
        """The engine's schema `name` (NoSuchSchema when the engine has none; ConnectionFailed when the
        engine cannot be reached). Only connectors whose engine is not process-local are asked: a
        process-local engine mirrors the store, so it has nothing the store lacks."""
        from gravimeta.errors import UnsupportedOperation

        raise UnsupportedOperation(f"Provider of catalog {self.context.catalog} cannot describe its engine's schemas")

    def load_table(self, schema: str, name: str) -> Table:
        """The engine's table `schema`.`name` with its columns and their types as the engine reports them
        (NoSuchSchema or NoSuchTable when the engine has none)."""
        from gravimeta.errors import UnsupportedOperation

        raise UnsupportedOperation(f"Provider of catalog {self.context.catalog} cannot describe its engine's tables")

    def as_described(self, table: Table) -> Table:
        """`table` as load_table describes it once create_table has made it: each column's type as the
        engine reports the type gravimeta wrote (the repair compares a create's table with the engine's by
        this). The default keeps the types as written, for an engine that keeps Gravitino's types (the
        Hive metastore); an engine that maps them to its own overrides it."""
        return table

    # tables
    def check_table(self, table: Table) -> None:  # noqa: B027 - an optional hook; accepting all is the default
        """Raise IllegalArgument when the engine cannot hold `table` (a create's table, or an alter's or
        rename's result). Called before the intent, the store change and any engine call, so that a
        definition the engine would refuse is a 400 with nothing changed anywhere."""

    @abstractmethod
    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None: ...

    @abstractmethod
    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        """Make the engine's table `before` look like `after` (same name; renames go through rename_table)."""

    @abstractmethod
    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None: ...

    @abstractmethod
    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool: ...

    def purge_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        from gravimeta.errors import UnsupportedOperation

        raise UnsupportedOperation(f"Provider of catalog {self.context.catalog} does not support purge")

    @abstractmethod
    def list_tables(self, schema: str) -> list[str]: ...

    # partitions (PARTITIONS_IN_ENGINE): Gravitino's partition JSON (PartitionDTO) in and out

    def list_partitions(self, schema: str, table: str) -> list[dict[str, Any]]:
        """The table's partitions, by name (NoSuchTable when the engine has no such table)."""
        raise self._no_partitions()

    def get_partition(self, schema: str, table: str, name: str) -> dict[str, Any]:
        """One partition (NoSuchPartition when there is none)."""
        raise self._no_partitions()

    def add_partition(self, schema: str, table: str, partition: dict[str, Any], *,
                      fence: Fence = NO_FENCE) -> dict[str, Any]:
        """Add a partition; returns it as the engine keeps it (PartitionAlreadyExists, IllegalArgument for
        a partition the table's partitioning does not allow). `fence`: as for every mutating call."""
        raise self._no_partitions()

    def drop_partition(self, schema: str, table: str, name: str, purge: bool = False, *,
                       fence: Fence = NO_FENCE) -> bool:
        """Drop a partition; False when there is none. `fence`: as for every mutating call."""
        raise self._no_partitions()

    def _no_partitions(self) -> Exception:
        from gravimeta.errors import UnsupportedOperation

        return UnsupportedOperation(f"Tables of catalog {self.context.catalog} do not support partition operations")

    def close(self) -> None:  # noqa: B027 - an optional hook; doing nothing is the default
        """Release resources; called when the catalog is dropped or the server stops."""

