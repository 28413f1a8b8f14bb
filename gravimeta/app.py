"""The application factory and composition root: the one place that wires settings, store,
coordinator, connectors and dispatchers together. Nothing is built at import time; gunicorn calls
create_app() in each worker after fork, so every worker has its own engine and pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Flask

from connectors.registry import ConnectorRegistry
from gravimeta.api import register_api
from gravimeta.concurrency import metrics
from gravimeta.concurrency.bootstrap import start_distributed_lock
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.config import Settings, load_settings
from gravimeta.dispatch import Dispatchers
from gravimeta.dispatch.catalogs import CatalogDispatcher
from gravimeta.dispatch.connector_cache import ConnectorCache, catalog_locality
from gravimeta.dispatch.journal import Reconciler
from gravimeta.dispatch.metalakes import MetalakeDispatcher
from gravimeta.dispatch.schemas import SchemaDispatcher
from gravimeta.dispatch.tables import TableDispatcher
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import check_schema


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


def build_services(settings: Settings, registry: ConnectorRegistry | None = None) -> Services:
    engine = create_store_engine(settings.resolved_store_url())
    check_schema(engine)
    store = EntityStore(engine, on_snapshot=metrics.snapshot_reads.inc)
    connectors = ConnectorCache(registry or ConnectorRegistry())
    distributed = start_distributed_lock(settings, engine, catalog_locality(connectors, store.get_catalog))
    coordinator = Coordinator(TreeLock(), distributed.claims, distributed)
    reconciler = Reconciler(store, coordinator, connectors)
    dispatchers = Dispatchers(
        metalakes=MetalakeDispatcher(store, coordinator, connectors),
        catalogs=CatalogDispatcher(store, coordinator, connectors),
        schemas=SchemaDispatcher(store, coordinator, connectors, reconciler),
        tables=TableDispatcher(store, coordinator, connectors, reconciler),
    )
    return Services(settings, store, coordinator, connectors, dispatchers, reconciler)


def create_app(settings: Settings | None = None, **overrides: Any) -> Flask:
    """Build the Flask app. `settings` defaults to the properties file and environment."""
    settings = settings or load_settings(**overrides)
    app = Flask("gravimeta")
    app.url_map.strict_slashes = False  # never redirect: the official client cannot follow a 308 on POST
    app.config["MAX_CONTENT_LENGTH"] = settings.max_content_length
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["gravimeta"] = build_services(settings)
    register_api(app)
    return app
