"""Which claim a schema/table operation gets under PG_ADVISORY (docs/ha.md): in a catalog
whose connector is process-local (memory) the operation is ONE store transaction, so advisory locks
cover it; in any other catalog it is journalled (intent, engine, apply) and must run under the lease.

Two apps share one PostgreSQL database. App A last saw catalog `c` as a memory catalog; app B drops it
and creates `c` again as a sqlite catalog. A's next schema create in `c` is first given an advisory
claim (its connector cache still says memory), finds the sqlite connector, refuses to journal under a
claim that ends with each transaction, and runs again under the lease.
Mechanism off: GRAVIMETA_HA_DISABLE=lasting_claim_check makes that refusal a no-op; the create then
records its intent and applies it under the advisory claim alone, and this test fails."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.sqlite import ROOT_ENV
from gravimeta.app import create_app
from gravimeta.concurrency.pg_advisory import AdvisoryClaim
from gravimeta.concurrency.scope_lease import LeaseClaim
from gravimeta.config import Settings
from gravimeta.dispatch import journal
from tests.conftest import require_backend
from tests.ha.conftest import disabled
from tests.support.databases import fresh_database

API = "/api/metalakes"
COLUMNS = [{"name": "id", "type": "integer", "comment": None, "nullable": True, "autoIncrement": False}]


class ClaimLog:
    """What one app's structural requests did: ("advisory" | "lease") per claim taken, "write" per
    store write transaction, "intent" per journal intent recorded."""

    def __init__(self, services: Any):
        self.events: list[str] = []
        claims, store, journal_ = services.coordinator.claims, services.store, services.reconciler.journal
        claim, write, insert_in = claims.claim, store.write, journal_.insert_in

        def logged_claim(scope: Any) -> Any:
            granted = claim(scope)
            assert isinstance(granted, (AdvisoryClaim, LeaseClaim))
            self.events.append("advisory" if isinstance(granted, AdvisoryClaim) else "lease")
            return granted

        def logged_write(work: Any, prelude: Any = None) -> Any:
            self.events.append("write")
            return write(work, prelude)

        def logged_insert(*args: Any) -> Any:
            self.events.append("intent")
            return insert_in(*args)

        claims.claim, store.write, journal_.insert_in = logged_claim, logged_write, logged_insert

    def take(self) -> list[str]:
        events, self.events = self.events, []
        return events


@pytest.fixture
def two_apps(tmp_path, monkeypatch):
    require_backend("postgresql")
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "sqlite-root"))
    (tmp_path / "sqlite-root").mkdir()
    if disabled("lasting_claim_check"):
        monkeypatch.setattr(journal, "require_lasting_claim", lambda: None)
    with fresh_database("postgresql", tmp_path) as url:
        settings = Settings(store_url=url, distributed_lock_enabled=True, distributed_lock_backend="PG_ADVISORY")
        apps = [create_app(settings) for _ in range(2)]
        yield apps
        for app in apps:
            services = app.extensions["gravimeta"]
            services.coordinator.runtime.heartbeat.stop()
            services.store.engine.dispose()


def latest_claim(events: list[str]) -> str | None:
    return next((e for e in reversed(events) if e in ("advisory", "lease")), None)


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def catalog_body(provider: str) -> dict[str, Any]:
    properties = {"path": "c.db"} if provider == "sqlite" else {}
    return {"name": "c", "type": "relational", "provider": provider, "properties": properties}


def test_memory_catalog_operations_are_one_transaction_under_advisory_locks(two_apps):
    a = two_apps[0].test_client()
    log = ClaimLog(two_apps[0].extensions["gravimeta"])
    ok(a.post(API, json={"name": "m", "properties": {}}))
    ok(a.post(f"{API}/m/catalogs", json=catalog_body("memory")))
    log.take()
    ok(a.post(f"{API}/m/catalogs/c/schemas", json={"name": "first"}))
    # A has not used c's connector yet: the backend looked its provider up in the store (a read, no write)
    assert log.take() == ["advisory", "write"]
    tables = f"{API}/m/catalogs/c/schemas/s/tables"
    requests = [
        ("create schema", lambda: a.post(f"{API}/m/catalogs/c/schemas", json={"name": "s"})),
        ("create table", lambda: a.post(tables, json={"name": "t", "columns": COLUMNS})),
        ("rename table", lambda: a.put(f"{tables}/t", json={"updates": [{"@type": "rename", "newName": "u"}]})),
        ("drop table", lambda: a.delete(f"{tables}/u")),
        ("drop schema", lambda: a.delete(f"{API}/m/catalogs/c/schemas/s?cascade=true")),
    ]
    for what, send in requests:
        body = ok(send())
        assert body.get("dropped", True) is True, what
        assert log.take() == ["advisory", "write"], what


def test_a_catalog_recreated_elsewhere_with_an_external_connector_gets_the_lease(two_apps):
    a, b = (app.test_client() for app in two_apps)
    log = ClaimLog(two_apps[0].extensions["gravimeta"])
    ok(a.post(API, json={"name": "m", "properties": {}}))
    ok(a.post(f"{API}/m/catalogs", json=catalog_body("memory")))
    ok(a.post(f"{API}/m/catalogs/c/schemas", json={"name": "warm"}))  # A's cache: c is a memory catalog
    ok(b.delete(f"{API}/m/catalogs/c?force=true"))
    ok(b.post(f"{API}/m/catalogs", json=catalog_body("sqlite")))
    log.take()

    ok(a.post(f"{API}/m/catalogs/c/schemas", json={"name": "s"}))
    events = log.take()
    # the advisory attempt ends in its prelude (no write reaches its guard); the journal runs under the lease
    assert events[0] == "advisory", events
    assert "intent" in events, events
    under = [latest_claim(events[:i]) for i, e in enumerate(events) if e == "intent"]
    assert under == ["lease"], f"intents recorded under {under}: {events}"
    assert sorted(two_apps[1].extensions["gravimeta"].connectors.for_catalog(
        two_apps[1].extensions["gravimeta"].store.get_catalog("m", "c")).list_schemas()) == ["s"]
    assert two_apps[0].extensions["gravimeta"].reconciler.journal.pending() == []

    ok(a.post(f"{API}/m/catalogs/c/schemas/s/tables", json={"name": "t", "columns": COLUMNS}))
    events = log.take()
    assert events[0] == "lease" and "advisory" not in events, events  # A's cache now knows c is sqlite
