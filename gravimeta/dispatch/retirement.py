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
(gm_retirement, store/retirements.py: one row per catalog key AND engine, so a catalog that leaves two
engines in turn leaves two rows; provider, properties, engine locations, token) and delivered before any
later catalog on the same engine can change or import anything: the connector cache delivers the pending
retirements of an engine before it hands out a new connector for it, and again before it hands out a
cached one that has not seen every pending retirement (ids only grow: the cache compares the highest it
saw with the store's; another catalog on that engine may have left it since), and refuses
(EngineUnreachable, nothing done) while one cannot be delivered. A delivered row is deleted by its id and token together, so
a row raised to a newer token meanwhile stays. A late call that lands before the delivery lands before
anything of the new catalog has read the engine, so it is seen like any change made outside gravimeta.

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
engine it cannot reach, so the identity is recorded in the store while the engine answers
(gm_server_setting, `engine-id <catalog key>`), and only ever for the properties the catalog's row holds
in the same transaction: at the catalog's create and at each change of its properties, in the store
transaction that writes them, under the metalake's claim (the engine asked before that transaction
opens); and at a catalog's first use in a process, which asks the engine every time and corrects a
record that names another engine (in a transaction holding the catalog's row, for the properties the
connector was made from: a record for properties changed since is not written). A retirement the
engine missed adds the recorded identity to its locations; the record goes once the catalog is dropped
(forget_identities). An engine that keeps no identity (a real Hive metastore: 404) is judged by its
places alone. A new connector whose engine cannot say who it is now is refused (EngineUnreachable) while
a retirement known by an identity is pending that its places do not match: it might be that engine's.

No engine call is made inside a store write transaction (on SQLite it would hold every replica's writes):
the connector cache's hook runs before the caller's transaction opens (ConnectorCache.ready), and every
engine call it makes is bounded by what is left of the running claim.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from connectors.base import IDENTITY_LOCATION, CatalogContext, Connector, Fence
from connectors.registry import ConnectorRegistry
from gravimeta import errors, failpoints
from gravimeta.concurrency.coordinator import current_claim, require_lasting_claim
from gravimeta.concurrency.db_clock import db_now
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_keys import catalog_key
from gravimeta.entities import Catalog
from gravimeta.store import EntityStore, retirements
from gravimeta.store.database import disabled_for_test, write_session
from gravimeta.store.models import CatalogRow
from gravimeta.store.retirements import Retirement
from gravimeta.store.server_settings import read, server_setting

log = logging.getLogger(__name__)

#: gm_server_setting: `engine-id <catalog key>` -> the identity of the catalog's engine
IDENTITY_PREFIX = "engine-id "
#: how long one pending retirement's delivery, or one question of an engine's identity, may wait on it
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
        retirements.record(store.engine, key, claim.fence, f"{catalog.metalake}.{catalog.name}", catalog.provider,
                           dict(catalog.properties), locations)
        log.warning("catalog %s.%s: its engine was not told of the drop (%s); the retirement of %s is recorded and "
                    "will be delivered before another catalog uses %s", catalog.metalake, catalog.name, exc.message,
                    key, ", ".join(locations))
        return False


def call_deadline(limit_s: float = DELIVERY_TIMEOUT_S) -> float:
    """time.monotonic() by which an engine call of the connector cache's hook must end: `limit_s` from now,
    and never past what is left of the running claim. StaleFence (nothing asked) with too little left."""
    claim = current_claim()
    left = limit_s if claim is None else min(limit_s, claim.time_left())
    if left < engine_door.MIN_CALL_S:
        raise errors.StaleFence(f"The claim on {claim.path if claim else '?'} ran out before its engine could be "
                                "asked; nothing was done")
    return time.monotonic() + left


def ask_identity(connector: Connector) -> str | None:
    """The engine's identity (Connector.engine_identity), bounded by call_deadline."""
    if disabled_for_test("engine_calls_before_write"):  # TEST-ONLY: bounded by the client's timeout alone, as before
        return connector.engine_identity()
    return connector.engine_identity(call_deadline())


class PendingRetirements:
    """Delivers recorded retirements (ConnectorCache's hook for every new connector)."""

    def __init__(self, store: EntityStore, registry: ConnectorRegistry):
        self.store, self.registry = store, registry

    def before_use(self, connector: Connector, catalog: Catalog) -> int:
        """ConnectorCache's hook (for a new connector, and again for a cached one when retirements were
        recorded since; never inside a store write transaction: ConnectorCache.ready): ask the engine who
        it is (a connector remembers the answer), deliver the engine's pending retirements, and record the
        identity where the record is missing or names another engine. Returns the highest pending
        retirement's id it looked at (ConnectorCache's high water)."""
        if connector.process_local:
            return 0
        recorded = read_identity(self.store, catalog) if catalog.id is not None else None
        pending = retirements.pending(self.store.engine)
        identity, unasked = None, None
        if (recorded is None or any(known_by_identity(r) for r in pending)
                or not disabled_for_test("identity_reverify")):  # TEST-ONLY: asked only without a record, as before
            failpoints.hit("retirement.before_ask", catalog=f"{catalog.metalake}.{catalog.name}")
            try:
                identity = ask_identity(connector)
            except errors.GravitinoError as exc:
                unasked = exc
        self.deliver_for(connector, pending, unasked)
        if identity and catalog.id is not None and recorded != identity:
            if recorded is not None:
                log.warning("catalog %s.%s: its engine says it is %s, the store had %s recorded for it; recorded anew",
                            catalog.metalake, catalog.name, identity, recorded)
            verify_identity(self.store, catalog, identity)
        return max((one.id for one in pending), default=0)

    def high_water(self, session: Session | None) -> int:
        """ConnectorCache's other hook: how far the pending retirements go now (in `session`, else alone)."""
        return retirements.high_water(session if session is not None else self.store.engine)

    def deliver_for(self, connector: Connector, pending: list[Retirement],
                    unasked: errors.GravitinoError | None = None) -> None:
        """Deliver every `pending` retirement of this connector's engine (by its locations, its identity
        included when engine_identity found it), and delete each one's record by its version;
        EngineUnreachable when one cannot be delivered (the connector must not be used for changes or
        imports until it is), or, `unasked` (why the engine could not say who it is), when one known by
        an identity alone may be this engine's."""
        if connector.process_local or disabled_for_test("retire_delivery"):  # TEST-ONLY switch
            return
        locations = connector.engine_locations()
        if not locations:
            return
        where = ", ".join(sorted(locations))
        for one in pending:
            try:
                old: Connector | None = self.registry.get(one.provider)(
                    CatalogContext("", one.catalog, dict(one.properties)))
            except errors.GravitinoError:
                old = None  # its properties no longer make one here (an endpoint the allow-list no longer has)
            try:
                common = recorded_locations(one, old) & locations
                if not common:
                    if unasked is not None and known_by_identity(one):
                        raise errors.EngineUnreachable(
                            f"The engine at {where} cannot say which engine it is ({unasked.message.rstrip('.')}), "
                            f"and catalog {one.catalog} left an engine known by its identity without "
                            "telling it; nothing was done. Retry once it answers")
                    continue
                fence = Fence(one.catalog_key, one.token, True, call_deadline())
                # through the new catalog's connector when the old one cannot be made, or when they share
                # the engine's identity alone (the old places may no longer reach it): one engine
                through = connector if old is None or all(x.startswith(IDENTITY_LOCATION) for x in common) else old
                try:
                    engine_door.deliver_retirement(through, fence)
                except errors.StaleFence:
                    pass  # the engine has seen a higher token on that key already: retired all the same
                except errors.GravitinoError as exc:
                    raise errors.EngineUnreachable(
                        f"The engine at {where} has not yet been told that catalog {one.catalog} left it "
                        f"({exc.message.rstrip('.')}); nothing was done. Retry once it answers") from exc
            finally:
                if old is not None:
                    old.close()
            failpoints.hit("retirement.before_forget", key=one.catalog_key)
            # by its id and token: a record raised to a newer token meanwhile (the catalog left this engine
            # again) stays. A record left (the write failed, or the process stopped first) is delivered
            # again later: the same token on a key no catalog has again
            try:
                retirements.delivered(self.store.engine, one)
            except Exception as exc:  # noqa: BLE001 - the delivery is done; its record goes at the next one
                log.warning("the delivered retirement of %s is still recorded (%s); it will be delivered again",
                            one.catalog_key, exc)
            log.info("delivered the pending retirement of %s to %s", one.catalog_key, where)


def known_by_identity(one: Retirement) -> bool:
    """Whether a pending retirement's recorded locations name its engine's identity."""
    return any(str(x).startswith(IDENTITY_LOCATION) for x in one.locations)


def recorded_locations(one: Retirement, old: Connector | None) -> set[str]:
    """Where the engine of a pending retirement is (`old`: the dropped catalog's connector made from its
    recorded properties here): the locations recorded at the drop (its identity among them when it was
    recorded), and the ones `old` gives now. Delivered to a connector sharing any."""
    recorded = {str(x) for x in one.locations}
    if old is not None:
        recorded |= old.engine_locations()
    return recorded


def identity_name(catalog: Catalog) -> str:
    assert catalog.id is not None, "a stored catalog has an id"
    return IDENTITY_PREFIX + catalog_key(catalog.id, catalog.audit.create_time)


def read_identity(store: EntityStore, catalog: Catalog) -> str | None:
    return read(store.engine, identity_name(catalog))


def write_identity_in(s: Session, catalog: Catalog, identity: str | None) -> None:
    """In the caller's store transaction, which holds the catalog's row and has given it `catalog`'s
    properties: record `identity` as the engine those properties name (None: forget the record, the
    engine could not say; the catalog's first use asks again)."""
    dialect = s.get_bind().dialect.name
    name, now = identity_name(catalog), db_now("mysql" if dialect == "mariadb" else dialect)
    c = server_setting.c
    if identity is None:
        s.execute(delete(server_setting).where(c.name == name))
    elif s.execute(update(server_setting).where(c.name == name).values(value=identity, updated_at=now)).rowcount == 0:  # type: ignore[attr-defined]
        s.execute(insert(server_setting).values(name=name, value=identity, updated_at=now))


def verify_identity(store: EntityStore, catalog: Catalog, identity: str) -> None:
    """A first use found `identity` for the engine `catalog`'s properties name: record it, in a transaction
    that holds the catalog's row (FOR SHARE: a change of its properties, which writes the record with
    them, comes wholly before or after), and only while the row still has those properties. Best effort:
    a record missing at a drop the engine misses leaves the retirement to the engine's places."""
    assert catalog.id is not None, "a stored catalog has an id"
    for _ in range(2):
        try:
            with write_session(store.engine) as s:
                row = s.execute(select(CatalogRow.properties, CatalogRow.create_time)
                                .where(CatalogRow.id == catalog.id).with_for_update(read=True)).first()
                if row is None or row.create_time != catalog.audit.create_time or row.properties != catalog.properties:
                    return  # dropped, or its properties changed since: that change recorded its own
                if read_in(s, identity_name(catalog)) != identity:
                    write_identity_in(s, catalog, identity)
            return
        except IntegrityError:  # two first uses inserted at once
            continue
        except Exception as exc:  # noqa: BLE001 - best effort: the use goes on; the next first use tries again
            log.warning("catalog %s.%s: the identity of its engine was not recorded (%s)", catalog.metalake,
                        catalog.name, exc)
            return


def read_in(s: Session, name: str) -> str | None:
    return s.scalar(select(server_setting.c.value).where(server_setting.c.name == name))


def identity_for(connector: Connector) -> str | None:
    """The identity of a new catalog's engine, or of the engine a property change points the catalog at
    (asked under the claim, before the store transaction that records it with the properties); None
    when the engine cannot say now (its first use asks again) or keeps none."""
    if connector.process_local:
        return None
    failpoints.hit("catalog.before_identity")
    try:
        return ask_identity(connector)
    except errors.GravitinoError:
        return None


def forget_identities(store: EntityStore, catalogs: list[Catalog]) -> None:
    """Once the catalogs are dropped: their engine-identity records (any retirement the engines missed
    carries the identity in its own row). A record left by a stop before this names a key no catalog
    has again, and is only a row."""
    names = [identity_name(c) for c in catalogs if c.id is not None]
    if names:
        with write_session(store.engine) as s:
            s.execute(delete(server_setting).where(server_setting.c.name.in_(names)))
