"""`gravimeta repair` judges engines only where the servers keep them.

Run without the server's GRAVIMETA_HOME, the repair looked for the sqlite catalog files under
./var/sqlite-catalogs, created empty ones there, "saw" the tables absent and rolled a drop forward: the
table's metadata was deleted while its file still held the table. Now the repair reads the same
configuration as the server (--config, GRAVIMETA_* variables), compares its sqlite catalog root with the
one the servers recorded (gm_server_setting) and refuses to run on a mismatch; and the sqlite connector
answers "unreachable" for a catalog file it cannot find, never "empty", and creates nothing.
"""

from __future__ import annotations

import pytest

from connectors.registry import ConnectorRegistry
from gravimeta import errors
from gravimeta.app import build_services
from gravimeta.config import Settings
from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from tests.connectors.test_failure_matrix import FaultySQLite, ProcessDied
from tests.engine.conftest import FLAG_ON, Api, engine_of, ok, sqlite_properties


def test_repair_refuses_to_run_with_another_catalog_root_than_the_servers(cluster, monkeypatch):
    properties = sqlite_properties()
    api = Api(cluster.replica("a"))
    ok(api.metalake())
    ok(api.catalog("sqlite", properties))
    ok(api.schema())
    ok(api.table("t"))
    cluster.fp.arm("engine.before_call", "exit", tag="a")  # the drop's intent is recorded, then the worker dies
    with pytest.raises(OSError):
        api.drop_table("t")
    [left] = cluster.open_intents()

    elsewhere = cluster.tmp_path / "elsewhere"
    elsewhere.mkdir()
    wrong = {**FLAG_ON, "GRAVIMETA_HOME": str(elsewhere / "home")}  # the server's root is not given
    refused = cluster.repair_command("--settle-seconds", "0", env=wrong, cwd=elsewhere)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"the servers of this database use {cluster.root.resolve()}" in refused.stderr, refused.stderr
    assert [p for p in elsewhere.rglob("*") if p.suffix in (".db", ".sqlite")] == []
    assert [i.id for i in cluster.open_intents()] == [left.id]

    listed = cluster.repair_command("--list", env=wrong, cwd=elsewhere)  # reading the journal is harmless
    assert listed.returncode == 0 and f"open: #{left.id} drop_table /m/c/s" in listed.stdout, listed.stdout

    repaired = cluster.repair_command("--settle-seconds", "0")  # with the servers' configuration
    assert repaired.returncode == 0 and "repair: 1 rolled back" in repaired.stdout, repaired.stdout + repaired.stderr
    engine = engine_of(cluster, "sqlite", properties, monkeypatch)
    assert api.tables() == engine.list_tables("s") == ["t"]
    assert cluster.open_intents() == []


def test_a_repair_that_cannot_find_the_catalog_file_keeps_the_intent_and_creates_nothing(db_url, tmp_path, monkeypatch):
    """No server recorded a root here (nothing to compare with): the connector itself must not take a
    missing file for an empty catalog."""
    right, wrong = tmp_path / "right", tmp_path / "wrong"
    right.mkdir()
    wrong.mkdir()
    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(right))
    FaultySQLite.plan.clear()
    services = build_services(Settings(store_url=db_url, distributed_lock_enabled=True),
                              ConnectorRegistry({"sqlite": FaultySQLite}))
    d = services.dispatchers
    d.metalakes.create(Metalake("m"), "u")
    d.catalogs.create(Catalog("m", "c", "relational", "sqlite", properties={"path": "cat.db"}), "u")
    d.schemas.create("m", "c", Schema("s"), "u")
    d.tables.create("m", "c", "s", Table("t", [Column("id", "long")]), "u")
    FaultySQLite.plan["drop_table"] = "died"
    with pytest.raises(ProcessDied):
        d.tables.drop("m", "c", "s", "t")

    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(wrong))
    assert services.reconciler.repair_pending(settle_s=0) == {"unreachable": 1}
    [kept] = services.reconciler.journal.pending()
    assert "does not exist" in kept.detail and "unreachable" in kept.detail
    assert list(wrong.iterdir()) == []
    assert services.store.list_tables("m", "c", "s") == ["t"]
    with pytest.raises(errors.EngineUnreachable):
        services.connectors.for_catalog(services.store.get_catalog("m", "c")).list_schemas()

    monkeypatch.setenv("GRAVIMETA_SQLITE_CATALOG_ROOT", str(right))
    assert services.reconciler.repair_pending(settle_s=0) == {"rolled back": 1}
    assert services.store.list_tables("m", "c", "s") == ["t"]
    services.store.engine.dispose()
