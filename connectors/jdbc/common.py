"""What the two JDBC providers share: their properties and settings, the pool, each call's time budget,
the engine's locations, and the checks of a table that neither engine can hold.

Every call ends by its deadline: the fence's (what the caller may still trust of its claim) or, for a
call without one (the distributed lock off, or a read), CALL_TIMEOUT_S from its start. The waits of the
call (a free connection, each statement, each lock) are bounded by what is left of it, so a call
cannot change the engine later than CALL_TIMEOUT_S plus the engines' one-second granularity after it
was sent (call_window_s).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from connectors.base import CatalogContext, Connector, Fence
from connectors.jdbc import settings as jdbc_settings
from connectors.jdbc.failures import Phase
from connectors.jdbc.pool import Pool
from connectors.jdbc.sqltext import NameRules
from connectors.properties import CatalogProperties
from gravimeta import errors
from gravimeta.entities import Column, Table
from gravimeta.failpoints import disabled_for_test

#: the longest a call without a deadline may take
CALL_TIMEOUT_S = 30.0
#: how far past its deadline an engine may still end a call's last wait: MySQL counts its lock and
#: session timeouts in whole seconds, and stops a statement half a second after its lock waits
GRANULARITY_S = 1.5


class Deadline:
    """When a call must have ended; `left()` what remains (StaleFence once a claim's deadline passed,
    EngineUnreachable once the budget of a call without a claim did: in both cases nothing is sent)."""

    def __init__(self, fence: Fence):
        self.fence = fence
        self.at = time.monotonic() + fence.timeout(CALL_TIMEOUT_S)

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            if self.fence.deadline is not None:
                self.fence.timeout(0)  # raises StaleFence
            raise errors.EngineUnreachable(f"The engine call ran out of its {CALL_TIMEOUT_S:g}s; nothing more was sent")
        return left

    def left_ms(self) -> int:
        return max(1, int(self.left() * 1000))

    def left_now(self) -> float:
        """`left()` for a statement of a call already under way: each is looked at again, so that a
        holder paused between two statements sends nothing more once its claim has run out."""
        if disabled_for_test("jdbc_statement_deadline"):  # TEST-ONLY: no look after the first
            return max(self.at - time.monotonic(), 0.001)
        return self.left()


class JdbcConnector(Connector):
    """The parts of jdbc-postgresql and jdbc-mysql that do not depend on the engine."""

    kind = ""  # 'postgresql' or 'mysql'
    engine_name = ""  # how messages name the engine
    names: NameRules
    checks_fences = True
    supports_purge = False  # Gravitino: "... does not support purge table in Gravitino, please use drop table"

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.validate_properties(self.context.properties)
        self.settings = jdbc_settings.settings(self.kind, self.context.properties)
        # no reference back to the connector: a connector the cache replaces is freed (its pool closed) at once
        self.pool = Pool(self.settings, functools.partial(type(self).error_of, where=self.settings.where()),
                         self.driver_errors())

    @classmethod
    def driver_errors(cls) -> tuple[type[Exception], ...]:
        raise NotImplementedError

    #: failures.postgresql or failures.mysql: a driver error -> the Gravitino error
    error_of: Callable[..., errors.GravitinoError]

    def translate(self, exc: Exception, phase: Phase, what: str) -> errors.GravitinoError:
        return type(self).error_of(exc, phase, what, self.where)

    def test_connection(self) -> None:
        """List the schemas; a pool made only for this probe is closed afterwards (the pre-create test
        makes a connector of its own, which nothing closes)."""
        with self.pool.probe():
            self.list_schemas()

    @classmethod
    def validate_properties(cls, properties: dict[str, str]) -> None:
        cls.catalog_properties.validate_create(properties)
        jdbc_settings.settings(cls.kind, properties)

    @classmethod
    def validate_property_changes(cls, upserts: dict[str, str], deletes: list[str], after: dict[str, str]) -> None:
        cls.catalog_properties.validate_alter(upserts, deletes, after)
        jdbc_settings.settings(cls.kind, after)

    @property
    def where(self) -> str:
        return self.settings.where()

    def label(self) -> str:
        """The engine as messages name it."""
        return f"{self.engine_name} at {self.where}"

    def engine_locations(self) -> frozenset[str]:
        """Each host by name and by every address it resolves to (loopback as one), with the database for
        PostgreSQL (a MySQL catalog spans the server), and the identity once known."""
        suffix = f"/{self.settings.database}" if self.settings.database else ""
        places = {f"{self.kind}:{place}{suffix}" for host, port in self.settings.target.hosts
                  for place in host_places(host, port)}
        return frozenset(places) | self.identity_locations()

    def call_window_s(self) -> float:
        """A call without a claim ends within CALL_TIMEOUT_S on its side; the engine may end its last wait
        up to GRANULARITY_S later."""
        return CALL_TIMEOUT_S + GRANULARITY_S

    def close(self) -> None:
        self.pool.close()

    def _no_such_schema(self, schema: str) -> errors.NoSuchSchema:
        return errors.NoSuchSchema(f"Schema {schema} does not exist in {self.label()}")

    def _no_such_table(self, schema: str, table: str) -> errors.NoSuchTable:
        return errors.NoSuchTable(f"Table {schema}.{table} does not exist in {self.label()}")

    def check_new_names(self, table: Table, columns: list[str] | None = None) -> None:
        """Gravitino's name rules for a new table (or the new columns of an alter)."""
        if columns is None:
            self.names.check("TABLE", table.name)
            columns = [c.name for c in table.columns]
        for name in columns:
            self.names.check("COLUMN", name)

    def check_layout(self, table: Table) -> None:
        """What neither engine holds: partitioning, a distribution, sort orders (JdbcCatalogOperations and
        the table operations' generateCreateTableSql)."""
        if table.partitioning:
            raise errors.UnsupportedOperation(f"Currently we do not support Partitioning in {self.engine_name.lower()}")
        distribution = table.distribution or {}
        if distribution and (distribution.get("strategy", "none").lower() != "none" or distribution.get("number")
                             or distribution.get("funcArgs")):
            raise errors.IllegalArgument(f"{self.engine_name} does not support distribution")
        if table.sort_orders:
            raise errors.IllegalArgument(f"The current JDBC connector: {self.engine_name} does not support sort orders")


def as_checked(table: Table) -> Table:
    """`table` for Connector.check_table, which also sees an alter's result: a column the engine made may
    have a type only it can name (external) or a default only it can write (unparsed), which no alter
    writes again unless it changes them (and then the alter's own call refuses what it cannot write).
    So those are checked as a plain column would be; a create's call checks everything."""
    def plain(column: Column) -> Column:
        kind = column.type
        if _has_external(kind):
            kind = "long" if column.auto_increment else "string"
        default = None if isinstance(column.default_value, dict) and column.default_value.get("type") == "unparsed" \
            else column.default_value
        return replace(column, type=kind, default_value=default)

    return replace(table, columns=[plain(c) for c in table.columns])


def _has_external(kind: Any) -> bool:
    if isinstance(kind, dict):
        return kind.get("type") == "external" or any(_has_external(v) for v in kind.values() if isinstance(v, dict))
    return False


def catalog_properties(kind: str, *extra: jdbc_settings.PropertyEntry) -> CatalogProperties:
    return CatalogProperties((*jdbc_settings.entries(kind), *extra))


def host_places(host: str, port: int) -> set[str]:
    """'<host>:<port>' with the host in lower case, and '<address>:<port>' for each address it resolves to
    now, every loopback or unspecified address as 'loopback'."""
    name = host.strip("[]").lower()
    places = {f"{name}:{port}"}
    if disabled_for_test("endpoint_addresses"):  # TEST-ONLY: as written
        return places
    try:
        found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return places
    for *_, sockaddr in found:
        try:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        places.add(f"{'loopback' if address.is_loopback or address.is_unspecified else address}:{port}")
    return places

