"""One connector instance per catalog definition, created on first use and replaced when the
catalog's provider or properties change (each worker process has its own cache)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from connectors.base import CatalogContext, Connector
from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.concurrency.coordinator import require_lasting_claim
from gravimeta.entities import Catalog
from gravimeta.store.database import disabled_for_test, in_write_transaction


class ConnectorNotReady(Exception):  # noqa: N818 - a signal to the caller, not an error anyone is answered
    """ConnectorCache.ready: the catalog's connector must first be made (for_catalog) outside the store
    write transaction the caller is in; it then runs that transaction again."""

    def __init__(self, catalog: Catalog):
        super().__init__(f"the connector of catalog {catalog.metalake}.{catalog.name} is not made yet")
        self.catalog = catalog


class ConnectorCache:
    """`before_use(connector, catalog)` runs once for every connector it creates, before anyone gets it;
    if it raises, the connector is not kept and the error is the caller's (the delivery of a dropped
    catalog's pending retirement to the same engine, and the record of the catalog's engine identity:
    gravimeta/dispatch/retirement.py). It asks the engine and writes to the store, so it never runs inside
    a store write transaction: there a caller uses `ready`, which makes no new connector whose engine keeps
    state outside the process (for_catalog refuses to, as a bug), and makes it once the transaction is
    over. On SQLite, where one write transaction holds every replica's writes, an engine that did not
    answer there held up every other write for the engine's client timeout.

    `before_use` returns how far it looked (the highest pending retirement's id it saw), and
    `high_water(session)` says how far the store's pending retirements go now (in the caller's transaction,
    or one of its own with None): a cached connector that has not looked as far runs `before_use` again
    before it is handed out, so a retirement recorded after the connector was made is delivered to its
    engine too (another catalog on that engine was dropped or moved off it meanwhile)."""

    def __init__(self, registry: ConnectorRegistry,
                 before_use: Callable[[Connector, Catalog], int | None] | None = None,
                 high_water: Callable[[Session | None], int] | None = None):
        self.registry, self.before_use, self.high_water = registry, before_use, high_water
        self._lock = threading.Lock()
        self._instances: dict[tuple[str, str], tuple[tuple[object, ...], Connector, int]] = {}

    def for_catalog(self, catalog: Catalog, reading: bool = False) -> Connector:
        """The catalog's connector (made, and checked by `before_use`, on first use). `reading`: the caller
        only reads through it (a list), which no pending retirement concerns: a cached one is handed out
        without looking for retirements recorded since (one store query fewer); a change or an import
        through it later looks."""
        key = (catalog.metalake, catalog.name)
        signature = _signature(catalog)
        with self._lock:
            cached = self._instances.get(key)
        if cached is not None and cached[0] == signature:
            if reading or self._current(cached, None):
                return cached[1]
            seen = self._check(cached[1], catalog)  # outside the lock: it may wait on the store and an engine
            with self._lock:
                if self._instances.get(key) is cached:
                    self._instances[key] = (signature, cached[1], seen)
            return cached[1]
        connector = self.registry.get(catalog.provider)(
            CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties))
        )
        try:
            seen = self._check(connector, catalog)
        except BaseException:
            connector.close()
            raise
        with self._lock:
            cached = self._instances.get(key)
            if cached is not None and cached[0] == signature:  # another thread made one meanwhile
                connector.close()
                return cached[1]
            self._instances[key] = (signature, connector, seen)
            return connector

    def _check(self, connector: Connector, catalog: Catalog) -> int:
        """`before_use` (never inside a store write transaction); how far it looked."""
        if self.before_use is None:
            return 0
        if (not connector.process_local and in_write_transaction()
                and not disabled_for_test("engine_calls_before_write")):
            raise AssertionError(f"the connector of catalog {catalog.metalake}.{catalog.name} would ask its engine "
                                 "inside a store write transaction (use ConnectorCache.ready there)")
        return self.before_use(connector, catalog) or 0

    def _current(self, cached: tuple[tuple[object, ...], Connector, int], session: Session | None) -> bool:
        """Whether a cached connector has looked at every pending retirement recorded so far."""
        if cached[1].process_local or self.high_water is None or self.before_use is None \
                or disabled_for_test("retirement_watermark"):  # TEST-ONLY: checked once, when made
            return True
        return self.high_water(session) <= cached[2]

    def ready(self, catalog: Catalog, session: Session | None = None) -> Connector:
        """The catalog's connector for a caller inside a store write transaction (`session`): the cached
        one for this definition of the catalog, if it has looked at every pending retirement, or a new
        process-local one (whose hook asks no engine); else ConnectorNotReady: the caller ends the
        transaction (it wrote nothing yet), calls for_catalog with the catalog, and runs it again."""
        if disabled_for_test("engine_calls_before_write"):  # TEST-ONLY: made inside the transaction, as before
            return self.for_catalog(catalog)
        with self._lock:
            cached = self._instances.get((catalog.metalake, catalog.name))
        if cached is not None and cached[0] == _signature(catalog) and self._current(cached, session):
            return cached[1]
        if self.is_local(catalog):
            return self.for_catalog(catalog)
        # a one-transaction claim (PostgreSQL advisory) joins this transaction to its own, which must not be
        # ended here: the operation runs again under the lease (NeedsLastingClaim), once per catalog and process
        require_lasting_claim()
        raise ConnectorNotReady(catalog)

    @contextmanager
    def for_reading(self, catalog: Catalog) -> Iterator[Connector]:
        """A connector for reads only (the repair's dry run): the cached one, else a new one that is
        closed afterwards and never cached, made WITHOUT `before_use`, which may change engines and the
        store (a pending retirement's delivery)."""
        signature = _signature(catalog)
        with self._lock:
            cached = self._instances.get((catalog.metalake, catalog.name))
        if cached is not None and cached[0] == signature:
            yield cached[1]
            return
        connector = self.registry.get(catalog.provider)(
            CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties)))
        try:
            yield connector
        finally:
            connector.close()

    def is_local(self, catalog: Catalog) -> bool:
        """Whether the catalog's provider is process-local (Connector.process_local), without creating
        a connector for it; an unknown provider counts as external."""
        try:
            return self.registry.get(catalog.provider).process_local
        except errors.GravitinoError:
            return False

    def known_local(self, metalake: str, catalog: str) -> bool | None:
        """Whether this process last saw the catalog with a process-local connector; None when it has
        not used the catalog yet. A claim backend may choose by it; the operation checks the connector
        it really gets (coordinator.require_lasting_claim), so a stale answer costs a retry, never safety."""
        with self._lock:
            cached = self._instances.get((metalake, catalog))
        return None if cached is None else cached[1].process_local

    def forget(self, metalake: str, catalog: str | None = None) -> list[Connector]:
        """Remove cached connectors of a catalog (or of a whole metalake) after it was dropped or
        renamed, and return them so the caller can close them if the catalog is gone."""
        with self._lock:
            keys = [k for k in self._instances if k[0] == metalake and catalog in (None, k[1])]
            return [self._instances.pop(k)[1] for k in keys]


def _signature(catalog: Catalog) -> tuple[object, ...]:
    """What a cached connector was made from: a change of any of it makes a new connector. The catalog
    by its identity, id and create time (engine_keys.py): a store may give a dropped catalog's id to the
    next one (SQLite did before alembic 0019: it reused the highest rowid), and a catalog re-created under the same name must not get
    the dropped one's connector, made before the drop, without the delivery of its pending retirements."""
    created = None if disabled_for_test("connector_identity") else catalog.audit.create_time  # TEST-ONLY when off
    return catalog.id, created, catalog.provider, tuple(sorted(catalog.properties.items()))


def catalog_locality(connectors: ConnectorCache, load: Callable[[str, str], Catalog]) -> Callable[[str, str], bool]:
    """For AutoBackend: whether a catalog's schema/table operations run in one store transaction. From
    the connector cache; a catalog this process has not used yet is looked up once with `load` (a
    snapshot read: cheaper than a lease taken for want of knowing). A missing catalog counts as local:
    the operation fails on it anyway, with nothing outside the store to protect."""

    def is_local(metalake: str, catalog: str) -> bool:
        known = connectors.known_local(metalake, catalog)
        if known is not None:
            return known
        try:
            return connectors.is_local(load(metalake, catalog))
        except errors.NotFound:
            return True

    return is_local
