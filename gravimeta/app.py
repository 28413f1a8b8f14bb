"""The application factory and composition root: the one place that wires settings, store,
coordinator, connectors and dispatchers together. Nothing is built at import time; gunicorn calls
create_app() in each worker after fork, so every worker has its own engine and pool."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from flask import Flask, g

from connectors import door_guard, metastore_allowlist
from connectors.registry import ConnectorRegistry
from connectors.sqlite.paths import ROOT_ENV, catalog_root
from gravimeta import failpoints
from gravimeta.api import register_api
from gravimeta.concurrency import metrics
from gravimeta.concurrency.bootstrap import start_distributed_lock
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.config import Settings, check_authorization, load_settings, service_admins
from gravimeta.dispatch import Dispatchers
from gravimeta.dispatch.background_repair import BackgroundRepair
from gravimeta.dispatch.catalogs import CatalogDispatcher
from gravimeta.dispatch.connector_cache import ConnectorCache, catalog_locality
from gravimeta.dispatch.journal import Reconciler
from gravimeta.dispatch.metalakes import MetalakeDispatcher
from gravimeta.dispatch.partitions import PartitionDispatcher
from gravimeta.dispatch.retirement import PendingRetirements
from gravimeta.dispatch.schemas import SchemaDispatcher
from gravimeta.dispatch.statistics import StatisticDispatcher
from gravimeta.dispatch.tables import TableDispatcher
from gravimeta.dispatch.tags import TagDispatcher
from gravimeta.health import Health
from gravimeta.ownership.authorizer import Authorizer
from gravimeta.ownership.dispatcher import OwnershipDispatcher
from gravimeta.ownership.store import OwnershipStore
from gravimeta.roles.dispatcher import RoleDispatcher
from gravimeta.roles.limits import RoleLimits
from gravimeta.roles.store import RoleStore
from gravimeta.serving import worker_metrics
from gravimeta.store import EntityStore, server_settings
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import check_schema

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything a request may need, built once per worker process."""

    settings: Settings
    store: EntityStore
    coordinator: Coordinator
    connectors: ConnectorCache
    dispatchers: Dispatchers
    #: runs journalled connector operations and repairs the ones left open (`gravimeta repair`)
    reconciler: Reconciler
    #: readiness checks and the request gate of a worker whose store may be away (gravimeta/health.py)
    health: Health
    #: the serving worker's periodic journal repair (None: not serving, e.g. an operator command)
    background_repair: BackgroundRepair | None = None


def build_services(settings: Settings, registry: ConnectorRegistry | None = None,
                   store_may_be_away: bool = False, replica: bool = True) -> Services:
    """`store_may_be_away` (serving): build without the store when it does not answer, and answer 503
    until it does at this code's schema revision (gravimeta/health.py); otherwise the schema is checked
    now and SchemaVersionMismatch raised. `replica` False (an operator command such as `gravimeta
    repair`): this process claims like a replica but is not one, so it never registers in the node
    registry (where it would count as a live replica, and as a lock-off peer with the lock off)."""
    check_authorization(settings)
    if settings.sqlite_catalog_root:  # the sqlite provider reads its root at call time, from the environment
        os.environ[ROOT_ENV] = settings.sqlite_catalog_root
    if settings.hive_allowed_metastores:  # so does the hive provider its allowed metastores
        os.environ[metastore_allowlist.ENV] = settings.hive_allowed_metastores
    engine = create_store_engine(settings.resolved_store_url(),
                                 idle_transaction_timeout_ms=settings.idle_transaction_timeout())
    if not store_may_be_away:
        check_schema(engine)
    store = EntityStore(engine, on_snapshot=metrics.snapshot_reads.inc)
    registry = registry or ConnectorRegistry()
    retirements = PendingRetirements(store, registry)
    connectors = ConnectorCache(registry, retirements.before_use, retirements.high_water)
    distributed = start_distributed_lock(settings, engine, catalog_locality(connectors, store.get_catalog),
                                         register=replica)
    coordinator = Coordinator(TreeLock(), distributed.claims, distributed)
    reconciler = Reconciler(store, coordinator, connectors)
    ownership = OwnershipStore(store)
    authorizer = Authorizer(ownership, settings.authorization_enabled, service_admins(settings))
    dispatchers = Dispatchers(
        metalakes=MetalakeDispatcher(store, coordinator, connectors, authorizer),
        catalogs=CatalogDispatcher(store, coordinator, connectors),
        schemas=SchemaDispatcher(store, coordinator, connectors, reconciler),
        tables=TableDispatcher(store, coordinator, connectors, reconciler),
        partitions=PartitionDispatcher(store, coordinator, connectors),
        statistics=StatisticDispatcher(store, coordinator),
        tags=TagDispatcher(store, coordinator),
        ownership=OwnershipDispatcher(ownership, authorizer, coordinator),
        roles=RoleDispatcher(RoleStore(store, RoleLimits.of(settings)), ownership, settings.authorization_enabled),
    )
    health = Health(engine, settings, distributed.registry)
    if store_may_be_away:
        health.check_at_boot()
    else:
        health.schema_verified = True
    return Services(settings, store, coordinator, connectors, dispatchers, reconciler, health)


def create_app(settings: Settings | None = None, **overrides: Any) -> Flask:
    """Build the Flask app. `settings` defaults to the properties file and environment."""
    settings = settings or load_settings(**overrides)
    failpoints.configure()  # TEST-ONLY switch (GRAVIMETA_FAILPOINTS_DIR); off in service
    app = Flask("gravimeta")
    app.url_map.strict_slashes = False  # never redirect: the official client cannot follow a 308 on POST
    app.config["MAX_CONTENT_LENGTH"] = settings.max_content_length
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # a worker's first metric write (prometheus multiprocess mode) puts every gauge into its sample file
    # at 0; its process figures go first, so that no scrape shows a live worker with 0 bytes resident
    worker_metrics.refresh()
    services = app.extensions["gravimeta"] = build_services(settings, store_may_be_away=True)
    worker_metrics.watch_pool(services.store.engine)
    if services.health.schema_verified:  # a store that is away gets the root from the next server start
        publish_engine_roots(services)
    services.background_repair = start_background_repair(services)
    register_api(app)
    guard_engine_calls(app)
    return app


def guard_engine_calls(app: Flask) -> None:
    """While a request is served, a mutating connector call outside the engine door raises
    (connectors/door_guard.py): every engine change must go through gravimeta/dispatch/engine_door.py."""

    @app.before_request
    def _enter() -> None:
        g.engine_door_guard = door_guard.enter_serving()

    @app.teardown_request
    def _leave(_exc: BaseException | None) -> None:
        door_guard.leave_serving(g.pop("engine_door_guard", None))


def start_background_repair(services: Services) -> BackgroundRepair:
    """The journal's background repair of this worker (gravimeta/dispatch/background_repair.py)."""
    repairer, health = services.reconciler.repairer, services.health
    return BackgroundRepair(services.reconciler.journal, lambda scopes: repairer.repair_pending(scopes=scopes),
                            services.settings.journal_repair_interval_ms,
                            ready=lambda: health.schema_verified).start()


def publish_engine_roots(services: Services) -> None:
    """Record this server's sqlite catalog root for `gravimeta repair` (gravimeta/store/server_settings.py)."""
    root = str(catalog_root().resolve())
    try:
        previous = server_settings.publish(services.store.engine, server_settings.SQLITE_CATALOG_ROOT, root)
    except Exception:  # noqa: BLE001 - serving matters more; `gravimeta repair` then compares with an older value
        log.exception("could not record this server's sqlite catalog root")
        return
    if previous is not None and previous != root:
        log.warning("this server's sqlite catalog root %s differs from the one recorded by another server (%s): "
                    "replicas must share one root, or their sqlite catalogs diverge", root, previous)
