"""The engine door's runtime guard (connectors/door_guard.py) is on wherever gravimeta changes engines
outside a request too: the background repair's passes and `gravimeta repair --resolve`, not only
`gravimeta repair` and the requests. A mutating connector call made directly there (a new repair step
that forgot the door, say) must fail with EngineCallOutsideDoor instead of reaching the engine unfenced.

Each case replaces the step the path runs (the repair of one scope, one resolution) by such a direct
call on a hive connector whose metastore refuses connections: with the guard off it would go out and
fail with EngineUnreachable."""

from __future__ import annotations

from collections import Counter

import pytest

from connectors.base import CatalogContext
from connectors.door_guard import EngineCallOutsideDoor
from connectors.hive import HiveConnector
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.dispatch import repair_command
from gravimeta.dispatch.intent_resolution import IntentResolver
from gravimeta.dispatch.repair import Repairer


def direct_drop(seen: list[type[BaseException]]) -> None:
    """What a step that calls its engine outside the door does."""
    connector = HiveConnector(CatalogContext("m", "c", {"metastore.uris": "http://127.0.0.1:1"}))
    try:
        connector.drop_table("s", "t")
    except Exception as exc:  # noqa: BLE001 - which one is the point
        seen.append(type(exc))


@pytest.fixture
def services(tmp_path):
    app = create_app(Settings(store_url=f"sqlite:///{tmp_path / 'store.db'}", journal_repair_interval_ms=0))
    yield app.extensions["gravimeta"]


def test_the_background_repair_runs_with_the_guard_on(services, monkeypatch):
    seen: list[type[BaseException]] = []

    def step(self: Repairer, path: str, settle_ms: int) -> Counter[str]:
        direct_drop(seen)
        return Counter()

    monkeypatch.setattr(Repairer, "_repair_scope", step)
    services.background_repair.repair(["/m/c/s"])  # what one pass of the background repair calls
    assert seen == [EngineCallOutsideDoor]


def test_an_operators_resolution_runs_with_the_guard_on(services, monkeypatch):
    seen: list[type[BaseException]] = []

    def resolve(self: IntentResolver, intent_id: int, outcome: str) -> str:
        direct_drop(seen)
        return "done"

    monkeypatch.setattr(IntentResolver, "resolve", resolve)
    assert repair_command.resolve(services, 1, "not-applied", lambda line: None)
    assert seen == [EngineCallOutsideDoor]
