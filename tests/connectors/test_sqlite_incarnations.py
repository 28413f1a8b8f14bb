"""A `sqlite` schema's file belongs to one incarnation of the schema: a drop that pauses or dies between
its steps, or a table create attached before a drop, can only ever touch the file of the incarnation it
saw, never the file of the schema re-created since under the same name.

Before, a schema's file was named by a hash of its name alone and a drop unlinked it after its fenced
registry commit, unfenced: a drop paused between the two (its lease then stolen) deleted the file of the
schema another replica had re-created and filled meanwhile, and an acknowledged table vanished. The
calls that pause run in processes of their own (sqlite_child.py), stopped at failpoints.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from connectors.base import CatalogContext, Fence
from connectors.sqlite import SQLiteCatalogConnector, schema_file, schema_file_name
from gravimeta.entities import Column, Schema, Table
from tests.support.failpoints import Failpoints

REPO = Path(__file__).resolve().parents[2]
KEY = "/lake/sq/s"


def table(name: str) -> Table:
    return Table(name, [Column("id", "long", nullable=False)])


@pytest.fixture
def fp(tmp_path):
    failpoints = Failpoints(tmp_path / "fp")
    yield failpoints
    failpoints.clear()


@pytest.fixture
def catalog_file(sqlite_root) -> Path:
    return sqlite_root / "catalogs" / "sq.db"


def call_in_child(sqlite_root: Path, fp: Failpoints, tag: str, **cfg: Any) -> subprocess.Popen[str]:
    """Start one connector call in a process of its own (failpoints on for `tag`)."""
    config = {"root": str(sqlite_root), "path": "catalogs/sq.db", "fp_dir": str(fp.dir), "tag": tag, **cfg}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAVIMETA_")}
    return subprocess.Popen([sys.executable, "-m", "tests.connectors.sqlite_child", json.dumps(config)], cwd=REPO,
                            env={**env, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)


def outcome(child: subprocess.Popen[str]) -> str:
    out, _ = child.communicate(timeout=60)
    return out.strip()


def fill(path: Path, table_name: str, rows: int) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executemany(f'INSERT INTO "{table_name}" (id) VALUES (?)', [(i,) for i in range(rows)])
        conn.commit()
    finally:
        conn.close()


def count(path: Path, table_name: str) -> int:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(f'SELECT count(*) FROM "{table_name}"').fetchone()[0]
    finally:
        conn.close()


def test_a_drop_paused_after_its_commit_never_deletes_the_schema_re_created_since(
        sqlite_connector, sqlite_root, catalog_file, fp):
    """The issue's interleaving: worker A's drop commits (fenced) and pauses before removing the file; its
    lease is stolen, and B re-creates the schema under the same name and fills a table; A goes on."""
    sqlite_connector.create_schema(Schema("s"), fence=Fence(KEY, 5))
    sqlite_connector.create_table("s", table("old"), fence=Fence(KEY, 5))
    fp.arm("sqlite.schema_unregistered", tag="a")
    a = call_in_child(sqlite_root, fp, "a", call="drop_schema", schema="s", key=KEY, token=5)
    paused = fp.wait_reached("sqlite.schema_unregistered", tag="a")
    assert "s" not in sqlite_connector.list_schemas()  # A's drop committed

    sqlite_connector.create_schema(Schema("s"), fence=Fence(KEY, 6))  # B, under the stolen lease
    sqlite_connector.create_table("s", table("t"), fence=Fence(KEY, 6))
    live = schema_file(catalog_file, "s")
    assert live is not None
    fill(live, "t", 3)
    fp.resume(paused)
    assert outcome(a) == "OK True"

    assert sqlite_connector.list_schemas() == ["s"] and sqlite_connector.list_tables("s") == ["t"]
    assert schema_file(catalog_file, "s") == live and count(live, "t") == 3


def test_a_table_create_attached_before_a_drop_lands_in_the_schema_that_is_registered(
        sqlite_connector, sqlite_root, catalog_file, fp):
    """A writer attaches the schema's file before its transaction begins; if the schema is dropped and
    re-created in between, its table must land in the live schema (or be refused), never in a dead file."""
    sqlite_connector.create_schema(Schema("s"))
    fp.arm("sqlite.before_begin", tag="w")
    writer = call_in_child(sqlite_root, fp, "w", call="create_table", schema="s", table="t")
    paused = fp.wait_reached("sqlite.before_begin", tag="w")
    assert sqlite_connector.drop_schema("s", cascade=True)
    sqlite_connector.create_schema(Schema("s"))
    fp.resume(paused)
    assert outcome(writer) == "OK None"
    assert sqlite_connector.list_tables("s") == ["t"]


def test_a_drop_killed_after_its_commit_leaves_a_tombstone_that_the_next_create_sweeps(
        sqlite_connector, sqlite_root, catalog_file, fp):
    sqlite_connector.create_schema(Schema("s"))
    sqlite_connector.create_table("s", table("t"))
    dead = schema_file(catalog_file, "s")
    assert dead is not None
    fp.arm("sqlite.schema_unregistered", action="exit", tag="a")
    a = call_in_child(sqlite_root, fp, "a", call="drop_schema", schema="s")
    assert outcome(a) == "" and a.returncode == 70  # died on the spot
    assert "s" not in sqlite_connector.list_schemas() and dead.exists()
    assert pending(catalog_file) == [(dead.name, "dropped")]

    sqlite_connector.create_schema(Schema("s"))  # the same name: a new incarnation, and a sweep
    assert not dead.exists() and pending(catalog_file) == []
    assert schema_file(catalog_file, "s") != dead and sqlite_connector.list_tables("s") == []


def test_a_create_killed_before_its_registry_commit_leaves_a_file_that_is_swept_once_stale(
        sqlite_connector, sqlite_root, catalog_file, fp):
    fp.arm("sqlite.schema_file_made", action="exit", tag="c")
    c = call_in_child(sqlite_root, fp, "c", call="create_schema", schema="s")
    assert outcome(c) == "" and c.returncode == 70
    [(name, state)] = pending(catalog_file)
    orphan = sqlite_connector._schema_dir() / name
    assert state == "creating" and orphan.exists() and sqlite_connector.list_schemas() == []
    sqlite_connector.create_schema(Schema("other"))  # a create may still be on its way: left alone
    assert orphan.exists() and len(pending(catalog_file)) == 1
    age_pending(catalog_file)
    sqlite_connector.create_schema(Schema("third"))
    assert not orphan.exists() and pending(catalog_file) == []


def test_a_create_whose_file_was_reclaimed_while_it_paused_registers_nothing(
        sqlite_connector, sqlite_root, catalog_file, fp):
    fp.arm("sqlite.schema_file_made", tag="c")
    c = call_in_child(sqlite_root, fp, "c", call="create_schema", schema="s")
    paused = fp.wait_reached("sqlite.schema_file_made", tag="c")
    age_pending(catalog_file)
    sqlite_connector.create_schema(Schema("other"))  # sweeps the stale file
    fp.resume(paused)
    answer = outcome(c)
    # refused before its transaction committed: an EngineUnreachable (a ConnectionFailed) saying so
    assert answer.startswith("ERROR EngineUnreachable") and "its new file was reclaimed" in answer, answer
    assert "nothing was changed" in answer, answer
    assert sqlite_connector.list_schemas() == ["other"]
    sqlite_connector.create_schema(Schema("s"))  # and the name is free for a create that works
    assert sqlite_connector.list_tables("s") == []


def test_every_incarnation_of_a_name_gets_a_file_of_its_own(sqlite_connector, catalog_file):
    files = []
    for _ in range(3):
        sqlite_connector.create_schema(Schema("s"))
        sqlite_connector.create_table("s", table("t"))
        files.append(schema_file(catalog_file, "s"))
        assert sqlite_connector.drop_schema("s", cascade=True)
    assert len(set(files)) == 3 and not any(f.exists() for f in files if f)
    assert [f.name for f in files if f] == [schema_file_name("s", n) for n in incarnations(files)]
    assert incarnations(files) == sorted(incarnations(files))
    assert list(sqlite_connector._schema_dir().iterdir()) == []


def test_a_repeated_create_keeps_the_schema_file(sqlite_connector, catalog_file):
    sqlite_connector.create_schema(Schema("s"))
    first = schema_file(catalog_file, "s")
    sqlite_connector.create_schema(Schema("s"))
    assert schema_file(catalog_file, "s") == first
    assert list(sqlite_connector._schema_dir().iterdir()) == [first]


def test_a_catalog_written_before_incarnations_still_opens_and_drops(sqlite_root, catalog_file):
    """Files of the first layout (named by the hash of the schema name alone) keep their names: the
    registry names every schema's file, so they open as they are; a drop tombstones them like any other."""
    old_file = write_old_layout_catalog(catalog_file, "sales", "orders")
    connector = SQLiteCatalogConnector(CatalogContext("lake", "sq", {"path": "catalogs/sq.db"}))
    assert connector.list_schemas() == ["sales"] and connector.list_tables("sales") == ["orders"]
    connector.create_table("sales", table("more"))
    assert connector.list_tables("sales") == ["more", "orders"] and count(old_file, "orders") == 2
    assert connector.drop_schema("sales", cascade=True)
    assert not old_file.exists() and pending(catalog_file) == []
    connector.create_schema(Schema("sales"))
    new_file = schema_file(catalog_file, "sales")
    assert new_file is not None and new_file.name != old_file.name and connector.list_tables("sales") == []


def test_a_sweep_never_deletes_a_file_that_is_registered(sqlite_connector, catalog_file):
    """A tombstone names a file nothing registers; should one be registered again (a replica still on
    the first layout re-created the schema), the sweep, which holds the catalog's write lock, keeps it."""
    sqlite_connector.create_schema(Schema("s"))
    live = schema_file(catalog_file, "s")
    assert live is not None
    conn = sqlite3.connect(catalog_file)
    with conn:
        conn.execute("INSERT INTO gravimeta_schema_files (file, state, since) VALUES (?, 'dropped', 0)", (live.name,))
    conn.close()
    sqlite_connector.create_schema(Schema("other"))
    assert live.exists() and pending(catalog_file) == [] and sqlite_connector.list_tables("s") == []


# ------------------------------------------------------------------ helpers reading the catalog file


def pending(catalog_file: Path) -> list[tuple[str, str]]:
    """Files that are not (or no longer) registered: (file name, 'creating' or 'dropped')."""
    conn = sqlite3.connect(catalog_file)
    try:
        return conn.execute("SELECT file, state FROM gravimeta_schema_files ORDER BY incarnation").fetchall()
    finally:
        conn.close()


def age_pending(catalog_file: Path) -> None:
    """As if the pending creates had begun long ago (longer than any create may take)."""
    conn = sqlite3.connect(catalog_file)
    with conn:
        conn.execute("UPDATE gravimeta_schema_files SET since = since - 86400")
    conn.close()


def incarnations(files: list[Path | None]) -> list[int]:
    return [int(f.name.split(".")[-2]) for f in files if f]


def write_old_layout_catalog(catalog_file: Path, schema: str, table_name: str) -> Path:
    """A catalog file and one schema file as gravimeta wrote them before incarnations (two rows)."""
    schema_dir = catalog_file.with_name(catalog_file.name + ".schemas")
    schema_dir.mkdir(parents=True)
    old_file = schema_dir / schema_file_name(schema)
    conn = sqlite3.connect(catalog_file)
    with conn:
        conn.execute("CREATE TABLE gravimeta_schemas (name TEXT PRIMARY KEY, file TEXT NOT NULL UNIQUE)")
        conn.execute("CREATE TABLE gravimeta_fences (scope TEXT PRIMARY KEY, fence INTEGER NOT NULL)")
        conn.execute("INSERT INTO gravimeta_schemas VALUES (?, ?)", (schema, old_file.name))
    conn.close()
    conn = sqlite3.connect(old_file)
    with conn:
        conn.execute("PRAGMA application_id = 1196576083")
        conn.execute(f'CREATE TABLE "{table_name}" (id INTEGER NOT NULL)')
        conn.executemany(f'INSERT INTO "{table_name}" VALUES (?)', [(1,), (2,)])
    conn.close()
    return old_file
