"""The retirement of a dropped catalog in its engine.

A catalog's engine calls are fenced by keys under the catalog's own key ('/c<id>.<create time>',
engine_keys.py), which no other catalog ever carries. So once the catalog is dropped, nothing of gravimeta
would ever again make its engine see a higher token under that key, and a call of an earlier holder still
in flight (a drop held in the metastore past its client's timeout, say) could land at any later time: in
an engine that a catalog re-created under the same name now imports from, where it removes a table the
store has just been given.

So a drop retires the catalog's key first: under the drop's claim (the metalake's, or the root's for a
metalake drop), whose token is above every token granted under the catalog before, the engine is made to
see that token on the catalog's key (engine_door.barrier), and refuses every earlier call below it from
then on. A change of the catalog's properties that moves it to another engine (a hive catalog's
metastore.uris naming one that shares no location with the old: dispatch/catalogs.py) leaves the old
engine alike, its key never seen there again, so it retires the key there the same way, under the same
claim.

An engine that cannot be reached at that moment is not told then, but the drop still goes on (a catalog
whose metastore is gone for good must stay droppable): the retirement is recorded in the store
(gm_server_setting, one row per retired key: provider, properties, engine locations, token) and
delivered before any later catalog on the same engine can change or import anything: the connector cache
delivers the pending retirements of an engine before it hands out a new connector for it, and refuses
(EngineUnreachable, nothing done) while one cannot be delivered. A late call that lands before the
delivery lands before anything of the new catalog has read the engine, so it is seen like any change made
outside gravimeta.

"The same engine" is judged by Connector.engine_locations, never by the properties' text: the later
catalog may name the engine otherwise (a metastore by host name where the dropped one gave its address,
in other letters, among other endpoints; a sqlite file through a symlink), and a pending retirement is
delivered when it shares any location with it: the locations recorded at the drop, and those its
recorded properties give where the delivery is made (another replica may resolve them otherwise).

A place is not always enough: one engine may be reached where the two catalogs share none (a metastore
whose address changed behind DNS or NAT since the drop, one listening on several addresses named
differently, a sqlite file reached by two paths that do not resolve to one). So the engines gravimeta owns
report an identity of their own (Connector.engine_identity: the hive stub's id kept with its storage, the
id kept in a sqlite catalog file), and it counts as a location, 'id:<identity>'. A drop cannot ask an
engine it cannot reach, so the identity is recorded in the store while the engine answers (gm_server_setting,
`engine-id <catalog key>`): at the catalog's create and at a change of its properties (note_identity), and
by the connector cache when it first hands out a connector for a catalog in a process and finds none
recorded (a catalog made before identities, or whose engine did not answer then). A retirement the
engine missed adds the recorded identity to its locations; the record goes once the catalog is dropped
(forget_identities). An engine that keeps no identity (a real Hive metastore: 404) is judged by its
places alone. A new connector whose engine cannot say who it is now is refused (EngineUnreachable) while
a retirement known by an identity is pending that its places do not match: it might be that engine's.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from sqlalchemy import delete, select

from connectors.base import IDENTITY_LOCATION, CatalogContext, Connector, Fence
from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.concurrency.coordinator import current_claim, require_lasting_claim
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_keys import catalog_key
from gravimeta.entities import Catalog
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test, write_session
from gravimeta.store.server_settings import publish, read, server_setting

log = logging.getLogger(__name__)

PREFIX = "retire "
#: gm_server_setting: `engine-id <catalog key>` -> the identity of the catalog's engine
IDENTITY_PREFIX = "engine-id "
#: how long one pending retirement's delivery may wait on its engine
DELIVERY_TIMEOUT_S = 5.0


def retire(store: EntityStore, connectors: ConnectorCache, catalog: Catalog) -> bool:
    """Make the catalog's engine refuse every call made under the catalog so far (call under the drop's
    claim, before the store drop; or the move's, before the store takes the new properties; inside
    Coordinator.run_structural: under a claim without a token it raises NeedsLastingClaim, and the
    operation runs again under the lease, whose token is above every one granted under the catalog,
    before it has changed anything). Whether the engine was told now (False: the provider keeps no state
    outside the process or checks no fences, the lock is off, its properties make no connector here, or
    the engine could not be reached and the retirement was recorded for later delivery)."""
    assert catalog.id is not None, "a stored catalog has an id"
    # a connector of its own, not the cache's: the cache would first deliver other pending retirements
    try:
        connector = connectors.registry.get(catalog.provider)(
            CatalogContext(catalog.metalake, catalog.name, dict(catalog.properties)))
    except errors.GravitinoError as exc:  # e.g. an endpoint the metastore allow-list no longer lets it reach
        log.warning("catalog %s.%s: its engine was not told (its properties make no connector here: %s)",
                    catalog.metalake, catalog.name, exc.message)
        return False
    if connector.process_local or not connector.checks_fences or disabled_for_test("retire"):
        return False  # (TEST-ONLY switch: shows that tests/engine/test_engine_identity_races.py needs it)
    if not disabled_for_test("retire_lasting"):  # TEST-ONLY switch
        require_lasting_claim()  # an advisory claim (AUTO, PG_ADVISORY) has no token to retire the key with
    if not engine_door.can_fence(connector):
        return False
    key = catalog_key(catalog.id, catalog.audit.create_time)
    try:
        engine_door.barrier(connector, key, engine_door.RETIREMENT)
        return True
    except errors.GravitinoError as exc:
        # the places its properties give (a connector of its own has not asked the engine who it is), and
        # the identity recorded while the engine answered
        identity = read(store.engine, IDENTITY_PREFIX + key)
        locations = sorted(connector.engine_locations() | ({IDENTITY_LOCATION + identity} if identity else set()))
        claim = current_claim()
        if not locations or claim is None or claim.fence is None:
            log.warning("catalog %s.%s: its engine was not told of the drop (%s), and its location is unknown: a "
                        "call still in flight there may land later", catalog.metalake, catalog.name, exc.message)
            return False
        publish(store.engine, PREFIX + key, json.dumps({
            "provider": catalog.provider, "properties": catalog.properties, "locations": locations,
            "token": claim.fence, "catalog": f"{catalog.metalake}.{catalog.name}"}))
        log.warning("catalog %s.%s: its engine was not told of the drop (%s); the retirement of %s is recorded and "
                    "will be delivered before another catalog uses %s", catalog.metalake, catalog.name, exc.message,
                    key, ", ".join(locations))
        return False


class PendingRetirements:
    """Delivers recorded retirements (ConnectorCache's hook for every new connector)."""

    def __init__(self, store: EntityStore, registry: ConnectorRegistry):
        self.store, self.registry = store, registry

    def before_use(self, connector: Connector, catalog: Catalog) -> None:
        """ConnectorCache's hook (the one check per connector and process): deliver the engine's pending
        retirements, and record the catalog's engine identity when it is not recorded yet. The engine is
        asked who it is only when needed: for that record, or while a retirement known by an identity
        is pending (the caller may be inside a store transaction: no engine call without need)."""
        if connector.process_local:
            return
        recorded = read(self.store.engine, identity_name(catalog)) if catalog.id is not None else None
        pending = self._pending()
        identity, unasked = None, None
        if recorded is None or any(known_by_identity(data) for _, data in pending):
            try:
                identity = connector.engine_identity()
            except errors.GravitinoError as exc:
                unasked = exc
        self.deliver_for(connector, pending, unasked)
        if identity and catalog.id is not None and recorded != identity:
            # not here: the caller may be inside a store write transaction (the journal's prelude), which a
            # write of its own would wait for on a SQLite store; a catalog made by this version has its
            # record from its create (note_identity) already: this is for the others
            threading.Thread(target=record_identity, args=(self.store, catalog, identity),
                             name="engine-identity", daemon=True).start()

    def deliver_for(self, connector: Connector, pending: list[tuple[str, dict[str, Any]]],
                    unasked: errors.GravitinoError | None = None) -> None:
        """Deliver every `pending` retirement of this connector's engine (by its locations, its identity
        included when engine_identity found it); EngineUnreachable when one cannot be delivered (the
        connector must not be used for changes or imports until it is), or, `unasked` (why the engine
        could not say who it is), when one known by an identity alone may be this engine's."""
        if connector.process_local or disabled_for_test("retire_delivery"):  # TEST-ONLY switch
            return
        locations = connector.engine_locations()
        if not locations:
            return
        where = ", ".join(sorted(locations))
        for name, data in pending:
            try:
                old: Connector | None = self.registry.get(data["provider"])(
                    CatalogContext("", data.get("catalog", ""), data["properties"]))
            except errors.GravitinoError:
                old = None  # its properties no longer make one here (an endpoint the allow-list no longer has)
            try:
                common = recorded_locations(data, old) & locations
                if not common:
                    if unasked is not None and known_by_identity(data):
                        raise errors.EngineUnreachable(
                            f"The engine at {where} cannot say which engine it is ({unasked.message.rstrip('.')}), "
                            f"and catalog {data.get('catalog')} left an engine known by its identity without "
                            "telling it; nothing was done. Retry once it answers")
                    continue
                fence = Fence(name[len(PREFIX):], int(data["token"]), True, time.monotonic() + DELIVERY_TIMEOUT_S)
                # through the new catalog's connector when the old one cannot be made, or when they share
                # the engine's identity alone (the old places may no longer reach it): one engine
                through = connector if old is None or all(x.startswith(IDENTITY_LOCATION) for x in common) else old
                try:
                    engine_door.deliver_retirement(through, fence)
                except errors.StaleFence:
                    pass  # the engine has seen a higher token on that key already: retired all the same
                except errors.GravitinoError as exc:
                    raise errors.EngineUnreachable(
                        f"The engine at {where} has not yet been told that catalog {data.get('catalog')} left it "
                        f"({exc.message.rstrip('.')}); nothing was done. Retry once it answers") from exc
            finally:
                if old is not None:
                    old.close()
            # its record goes on a thread of its own: the caller may be inside a store write transaction (the
            # journal's prelude), which a write of its own would wait for on a SQLite store until its busy
            # timeout, failing the first use every time. A record left (the write failed, or the process
            # stopped first) is delivered again later: the same token on a key no catalog has again
            threading.Thread(target=self._done, args=(name,), name="retirement-delivered", daemon=True).start()
            log.info("delivered the pending retirement of %s to %s", fence.key, where)

    def _pending(self) -> list[tuple[str, dict[str, Any]]]:
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(server_setting.c.name, server_setting.c.value)
                                .where(server_setting.c.name.like(PREFIX + "%"))).all()
        return [(row.name, json.loads(row.value)) for row in rows]

    def _done(self, name: str) -> None:
        try:
            with write_session(self.store.engine) as s:
                s.execute(delete(server_setting).where(server_setting.c.name == name))
        except Exception as exc:  # noqa: BLE001 - a thread of its own: the record stays and is delivered again
            log.warning("the delivered retirement %s is still recorded (%s); it will be delivered again", name, exc)


def known_by_identity(data: dict[str, Any]) -> bool:
    """Whether a pending retirement's recorded locations name its engine's identity."""
    return any(str(x).startswith(IDENTITY_LOCATION) for x in data.get("locations") or ())


def recorded_locations(data: dict[str, Any], old: Connector | None) -> set[str]:
    """Where the engine of a pending retirement is (its recorded `data`, the dropped catalog's connector
    made from its recorded properties here): the locations recorded at the drop (a single `location` text
    in a row recorded before engines had several; its identity among them when it was recorded), and the
    ones `old` gives now. Delivered to a connector sharing any."""
    recorded = {str(x) for x in data.get("locations") or ()}
    if isinstance(data.get("location"), str):
        recorded.add(data["location"])
    if old is not None:
        recorded |= old.engine_locations()
    return recorded


def identity_name(catalog: Catalog) -> str:
    assert catalog.id is not None, "a stored catalog has an id"
    return IDENTITY_PREFIX + catalog_key(catalog.id, catalog.audit.create_time)


def record_identity(store: EntityStore, catalog: Catalog, identity: str) -> None:
    """Record the identity of the catalog's engine (when another, or none, is recorded); best effort: a
    record missing at a drop the engine misses leaves the retirement to the engine's places alone."""
    try:
        if read(store.engine, identity_name(catalog)) != identity:
            publish(store.engine, identity_name(catalog), identity)
    except Exception as exc:  # noqa: BLE001 - a thread of its own, or a create that is done: log, never fail
        log.warning("catalog %s.%s: the identity of its engine was not recorded (%s); another first use will try "
                    "again", catalog.metalake, catalog.name, exc)


def note_identity(store: EntityStore, connector: Connector, catalog: Catalog) -> None:
    """After a catalog's create: ask its engine who it is (within the connector's timeout) and record it.
    An engine that cannot say now is asked again by the connector cache at the catalog's first use."""
    if connector.process_local or catalog.id is None:
        return
    try:
        identity = connector.engine_identity()
    except errors.GravitinoError:
        return
    if identity:
        record_identity(store, catalog, identity)


def forget_identities(store: EntityStore, catalogs: list[Catalog]) -> None:
    """Once the catalogs are dropped: their engine-identity records (any retirement the engines missed
    carries the identity in its own row). A record left by a stop before this names a key no catalog
    has again, and is only a row."""
    names = [identity_name(c) for c in catalogs if c.id is not None]
    if names:
        with write_session(store.engine) as s:
            s.execute(delete(server_setting).where(server_setting.c.name.in_(names)))
