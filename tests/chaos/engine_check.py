"""The end of a soak, engine half: every engine's contents against the store's.

The history checker (gravimeta/demo/history.py) compares what the REST API lists with the engines, but
the REST list of a catalog with an external engine is the union of both (a GET imports what only the
engine has), so an object the engine has and the store lost, or the reverse, can hide behind it. Here
the store is read with EntityStore.list_schemas / list_tables (its rows, nothing imported) and the
engine through the catalog's connector (list_schemas / list_tables: the sqlite catalog's files, the hive
stub over HTTP). This must run BEFORE anything reads the tree through the API, because that read may
import the very difference this check looks for.

Open journal intents are settled first (`gravimeta repair --settle-seconds 0`, the operators' command):
an intent left open or stuck after it is a finding of its own, and a divergence that an open intent
explains is not yet a divergence.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from connectors.base import CatalogContext
from connectors.registry import ConnectorRegistry
from connectors.sqlite.paths import ROOT_ENV
from gravimeta import errors
from gravimeta.store.entity_store import EntityStore
from gravimeta.store.journal import OperationJournal


@dataclass(frozen=True)
class EngineCatalog:
    """A catalog of the run whose engine is external: where it is now and how to reach its engine."""

    identity: str
    metalake: str
    name: str
    provider: str
    properties: dict[str, str]


@dataclass
class Settled:
    returncode: int
    output: str
    open: list[str]

    @property
    def problems(self) -> list[str]:
        found = [f"intent still open after repair: {line}" for line in self.open]
        if self.returncode != 0:
            found.append(f"`gravimeta repair` exited {self.returncode} (stuck or failed intents): {self.output}")
        return found


def settle(db_url: str, env: dict[str, str]) -> Settled:
    """Run `gravimeta repair --settle-seconds 0` with the servers' configuration, then list what is
    still open in the journal."""
    done = subprocess.run([sys.executable, "-m", "gravimeta", "--store-url", db_url, "repair", "--settle-seconds", "0"],
                          env=env, capture_output=True, text=True, timeout=180)
    from gravimeta.store.database import create_store_engine

    engine = create_store_engine(db_url)
    try:
        pending = OperationJournal(EntityStore(engine)).pending()
    finally:
        engine.dispose()
    still = [f"#{i.id} {i.operation} {i.scope_path} {i.state} by {i.holder}: {i.detail or ''}" for i in pending]
    return Settled(done.returncode, (done.stdout + done.stderr).strip(), still)


@contextmanager
def sqlite_root(root: Path) -> Iterator[None]:
    """The sqlite connector resolves a catalog's `path` under the root named by the environment, read
    at each call: point it at the run's root while this process uses a connector itself."""
    before = os.environ.get(ROOT_ENV)
    os.environ[ROOT_ENV] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ROOT_ENV, None)
        else:
            os.environ[ROOT_ENV] = before


def store_tree(store: EntityStore, metalake: str, catalog: str) -> dict[str, set[str]]:
    return {s.name: set(store.list_tables(metalake, catalog, s.name)) for s in store.list_schemas(metalake, catalog)}


def engine_tree(registry: ConnectorRegistry, cat: EngineCatalog) -> dict[str, set[str]]:
    connector = registry.get(cat.provider)(CatalogContext(cat.metalake, cat.name, dict(cat.properties)))
    tree: dict[str, set[str]] = {}
    for schema in connector.list_schemas():
        try:
            tree[schema] = set(connector.list_tables(schema))
        except errors.NoSuchSchema:  # listed, then not found: a finding (the load is over)
            tree[schema] = {"<schema listed but not readable>"}
    return tree


@dataclass(frozen=True)
class Difference:
    identity: str
    schema: str
    table: str | None  # None: the schema itself
    only_in: str  # "store" | "engine"
    text: str


def differences(cat: EngineCatalog, store: dict[str, set[str]], engine: dict[str, set[str]]) -> list[Difference]:
    """Each difference, its text naming the catalog by identity and by its current name."""
    where = f"{cat.identity} ({cat.provider}, now {cat.metalake}.{cat.name})"
    found = [Difference(cat.identity, s, None, "store",
                        f"{where}: schema {s} is in the store (tables {sorted(store[s])}) but not in the engine")
             for s in sorted(store.keys() - engine.keys())]
    found += [Difference(cat.identity, s, None, "engine",
                         f"{where}: schema {s} is in the engine (tables {sorted(engine[s])}) but not in the store")
              for s in sorted(engine.keys() - store.keys())]
    for s in sorted(store.keys() & engine.keys()):
        found += [Difference(cat.identity, s, t, "store", f"{where}: table {s}.{t} is in the store but not in the engine")
                  for t in sorted(store[s] - engine[s])]
        found += [Difference(cat.identity, s, t, "engine", f"{where}: table {s}.{t} is in the engine but not in the store")
                  for t in sorted(engine[s] - store[s])]
    return found


def compare(engine: Engine, catalogs: list[EngineCatalog], root: Path) -> list[Difference]:
    """Every difference between each catalog's engine and the store (empty: they agree)."""
    store = EntityStore(engine)
    registry = ConnectorRegistry()
    found: list[Difference] = []
    with sqlite_root(root):
        for cat in catalogs:
            found += differences(cat, store_tree(store, cat.metalake, cat.name), engine_tree(registry, cat))
    return found


@dataclass(frozen=True)
class PoolEngine:
    """An engine catalogs move between (tests/chaos/catalog_moves.py): the catalogs whose property `key`
    is `value` are on it."""

    label: str
    provider: str
    key: str
    value: str


def compare_pool(engine: Engine, metalake: str, pool: list[PoolEngine], root: Path) -> tuple[list[Difference], list[str]]:
    """Every engine of `pool` against each catalog of `metalake` the store points at it (its rows, nothing
    imported), and a catalog of `metalake` on no engine of the pool is a finding too. Returns the
    differences (each Difference.identity the catalog's name: a pool's catalogs come and go) and one line
    per engine saying what it was compared with."""
    store = EntityStore(engine)
    registry = ConnectorRegistry()
    found: list[Difference] = []
    compared: list[str] = []
    catalogs = store.list_catalogs(metalake)
    placed: set[str] = set()
    with sqlite_root(root):
        for where in pool:
            on = [c for c in catalogs if c.provider == where.provider and c.properties.get(where.key) == where.value]
            placed |= {c.name for c in on}
            for c in on:
                cat = EngineCatalog(c.name, metalake, c.name, c.provider, dict(c.properties))
                found += differences(cat, store_tree(store, metalake, c.name), engine_tree(registry, cat))
            compared.append(f"{where.label}: {', '.join(c.name for c in on) or 'no catalog on it now'}")
    for c in catalogs:
        if c.name not in placed:
            found.append(Difference(c.name, "", None, "store",
                                    f"catalog {metalake}.{c.name} points at no engine of the pool: {c.properties}"))
    return found, compared
