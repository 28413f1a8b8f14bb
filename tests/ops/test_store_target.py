"""`gravimeta locks` and `gravimeta repair` work on the store the operator means: the cluster's (from its
state, like `cluster status` and `demo race`) when no --store-url is given; they refuse a missing or
un-migrated store instead of creating it; a missing database driver is a one-line hint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from gravimeta.cluster import ClusterState
from tests.conftest import require_backend
from tests.ops.conftest import claim_held
from tests.support.databases import fresh_database


def gravimeta(*args: str, cwd: Path, python: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process, in `cwd`, with no store configured by the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("GRAVIMETA_STORE_URL", "GRAVIMETA_CONFIG", "GRAVIMETA_HOME")}
    command = [sys.executable, "-c", python + "from gravimeta.cli import main; main()", *args] if python \
        else [sys.executable, "-m", "gravimeta", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg_store(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        yield url


def test_locks_and_repair_without_store_url_use_the_running_clusters_store(pg_store, tmp_path):
    run_dir = tmp_path / "var" / "cluster"  # what `gravimeta cluster start` leaves for its processes
    run_dir.mkdir(parents=True)
    ClusterState(pg_store, True, "LEASE_TABLE", 2, str(tmp_path / "sqlite-catalogs")).save(run_dir)
    with claim_held(pg_store, "lake", "cat", sqlite_root=str(tmp_path / "sqlite-catalogs")):
        text = gravimeta("locks", cwd=tmp_path)
        assert text.returncode == 0, text.stderr
        assert text.stdout.splitlines()[0].startswith("store postgresql+psycopg://postgres@127.0.0.1:5432/gm_test_")
        assert "(cluster var/cluster)" in text.stdout.splitlines()[0]
        assert "1 claim(s)" in text.stdout and "/lake/cat" in text.stdout
        as_json = json.loads(gravimeta("locks", "--json", cwd=tmp_path).stdout)
        assert [c["path"] for c in as_json["claims"]] == ["/lake/cat"]
    repaired = gravimeta("repair", cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    assert "(cluster var/cluster)" in repaired.stdout and "repair: nothing to do" in repaired.stdout
    assert not (tmp_path / "var" / "gravimeta.db").exists()


def test_a_missing_store_is_refused_and_not_created(tmp_path):
    for command in (["locks"], ["repair", "--list"]):
        result = gravimeta(*command, cwd=tmp_path)
        assert result.returncode == 1, result.stdout
        assert "no gravimeta store at sqlite:///" in result.stderr and "var/gravimeta.db (default)" in result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "var" / "gravimeta.db").exists()


def test_an_unmigrated_store_is_refused_and_left_untouched(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path, migrate=False) as empty:
        for command in (["locks"], ["repair"]):
            result = gravimeta("--store-url", empty, *command, cwd=tmp_path)
            assert result.returncode == 1, result.stdout
            assert "has no gravimeta schema" in result.stderr and "Traceback" not in result.stderr
        engine = create_engine(empty)
        try:
            assert inspect(engine).get_table_names() == []
        finally:
            engine.dispose()


@pytest.mark.parametrize(("url", "hint"), [
    ("postgresql+psycopg://postgres@127.0.0.1:5432/test", "pip install 'gravimeta[postgres]'"),
    ("mysql+pymysql://root@127.0.0.1:3306/test", "pip install 'gravimeta[mysql]'"),
])
def test_a_missing_driver_is_a_one_line_hint_to_install_the_extra(tmp_path, url, hint):
    without_drivers = "import sys; sys.modules['psycopg'] = sys.modules['pymysql'] = None; "
    for command in (["locks"], ["repair"], ["db", "current"], ["serve"],
                    ["cluster", "start", "--replicas", "1", "--run-dir", "cluster"]):
        result = gravimeta("--store-url", url, *command, cwd=tmp_path, python=without_drivers)
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.strip().splitlines() == [f"Error: the {'PostgreSQL' if 'postgres' in hint else 'MariaDB/MySQL'} "
                                                      f"driver ({'psycopg' if 'postgres' in hint else 'pymysql'}) is "
                                                      f"not installed; install it with: {hint}"]
