"""Operator commands are not replicas: `gravimeta repair` (and `repair --list`) take claims like a
replica does, but write no row in the node registry, so `gravimeta locks` never counts the command as a
second lock-off replica ("UNSAFE: 2 live replicas ...") after it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gravimeta.app import build_services
from gravimeta.concurrency.node_registry import NodeRegistry, list_nodes
from gravimeta.concurrency.reclaimer import live_claims
from gravimeta.config import Settings
from gravimeta.entities import NameIdentifier
from gravimeta.errors import ScopeBusy
from gravimeta.store.database import create_store_engine
from tests.ops.test_store_target import gravimeta
from tests.support.databases import fresh_database


@pytest.fixture
def store(tmp_path) -> str:
    with fresh_database("sqlite", tmp_path) as url:
        yield url


def test_repair_does_not_register_as_a_lock_off_replica(store: str, tmp_path: Path):
    engine = create_store_engine(store)
    replica = NodeRegistry(engine, "replica-1", False, "NONE", live_window_ms=90_000)
    try:
        replica.register()  # one lock-off replica on its own store: the documented single-node mode
        for command in (["repair", "--list"], ["repair", "--settle-seconds", "0"]):
            ran = gravimeta("--store-url", store, *command, cwd=tmp_path)
            assert ran.returncode == 0, ran.stdout + ran.stderr
            seen = gravimeta("--store-url", store, "locks", "--json", cwd=tmp_path)
            assert seen.returncode == 0, seen.stderr
            body = json.loads(seen.stdout)
            assert [n["node"].rsplit(":", 1)[0] for n in body["nodes"]] == ["replica-1"], (command, body["nodes"])
            assert body["warnings"] == [], (command, body["warnings"])
    finally:
        engine.dispose()


def test_an_operator_command_still_claims_like_a_replica(store: str):
    settings = Settings(store_url=store, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE",
                        claim_timeout_ms=300)
    operator = build_services(settings, replica=False)
    replica = build_services(settings)
    try:
        assert [n["node"] for n in list_nodes(operator.store.engine)] == [replica.coordinator.runtime.registry.row_id]
        claim = operator.coordinator.claims.claim(NameIdentifier.of("lake", "cat"))
        try:
            [row] = live_claims(operator.store.engine)
            assert row["path"] == "/lake/cat" and row["live"]
            with pytest.raises(ScopeBusy):  # a replica's conflicting claim waits for the operator's
                replica.coordinator.claims.claim(NameIdentifier.of("lake", "cat", "s"))
        finally:
            claim.release()
        replica.coordinator.claims.claim(NameIdentifier.of("lake", "cat", "s")).release()
    finally:
        for services in (operator, replica):
            services.coordinator.runtime.heartbeat.stop()
        replica.coordinator.runtime.registry.unregister()
        operator.store.engine.dispose()
        replica.store.engine.dispose()
