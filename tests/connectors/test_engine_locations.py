"""Connector.engine_locations: two catalogs on one engine share a location however each names it, so a
dropped catalog's pending retirement reaches the engine before its namesake uses it
(gravimeta/dispatch/retirement.py; on real replicas: tests/engine/test_engine_identity_races.py, the
namesake that spells the metastore otherwise). Engines that are not the same share none."""

from __future__ import annotations

import pytest

from connectors.base import CatalogContext
from connectors.hive import HiveConnector
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector


def hive(uris: str) -> frozenset[str]:
    return HiveConnector(CatalogContext("m", "c", {"metastore.uris": uris})).engine_locations()


def sqlite(path: str) -> frozenset[str]:
    return SQLiteCatalogConnector(CatalogContext("m", "c", {"path": path})).engine_locations()


@pytest.mark.parametrize("other", [
    "http://localhost:9083", "http://LocalHost:9083/", "http://127.1:9083", "http://[::1]:9083",
    "http://127.0.0.1:1,http://localhost:9083",
])
def test_one_metastore_named_otherwise_shares_a_location(other):
    assert hive("http://127.0.0.1:9083") & hive(other), other


@pytest.mark.parametrize("other", ["http://127.0.0.1:9084", "http://192.0.2.1:9083", "http://unresolvable.invalid:9083"])
def test_other_metastores_share_none(other):
    assert not hive("http://127.0.0.1:9083") & hive(other), other


def test_a_sqlite_file_named_otherwise_has_one_location(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    (tmp_path / "alias.db").symlink_to(tmp_path / "d" / "cat.db")
    spellings = ["d/cat.db", "./d/cat.db", "d//cat.db", "d/./cat.db", "link/cat.db", "alias.db"]
    assert {sqlite(path) for path in spellings} == {frozenset({f"sqlite:{tmp_path.resolve() / 'd' / 'cat.db'}"})}
    assert not sqlite("d/cat.db") & sqlite("d/other.db")
