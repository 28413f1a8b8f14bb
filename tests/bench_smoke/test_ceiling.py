"""The ceiling instruments (bench/ceiling.py) work end to end, in a few seconds: the wrk scripts drive gravimeta and
the bare-stack ceiling through the same routes and JSON, and the ceiling sends the same SQL as
gravimeta's lock-off path (read on the wire), so that its ratios mean what they say.

The apps are served in this process (werkzeug's threaded server) on fresh PostgreSQL databases; wrk
runs for one second per check. wrk is a Debian package that .ci/run installs: missing under CI is a
failure, elsewhere a skip that says how to install it."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.servers import free_port

BENCH = Path(__file__).resolve().parents[2] / "bench"
pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def bench():
    """bench/'s modules (wrklib, bare_stack, same_sql), importable for this module only."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(BENCH))
        yield {name: importlib.import_module(name) for name in ("wrklib", "bare_stack", "same_sql")}


@pytest.fixture(scope="module")
def wrk(bench):
    if shutil.which("wrk") is None:
        if os.environ.get("CI"):
            pytest.fail(bench["wrklib"].INSTALL_HINT + " (.ci/run installs it)")
        pytest.skip(bench["wrklib"].INSTALL_HINT)
    return bench["wrklib"]


@contextmanager
def serving(app: Any) -> Iterator[str]:
    server = make_server("127.0.0.1", free_port(), app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def make_tree(client: Any, schemas: list[str]) -> None:
    for path, body in [("/api/metalakes", {"name": "m", "properties": {}}),
                       ("/api/metalakes/m/catalogs", {"name": "c", "type": "relational", "provider": "memory",
                                                      "properties": {}})]:
        assert client.post(path, json=body).status_code == 200
    for s in schemas:
        assert client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": s, "properties": {}}).status_code == 200


@pytest.fixture(scope="module", params=["bare stack", "gravimeta"])
def app_url(request, bench, tmp_path_factory):
    """Each app on its own fresh database with m > c > s0, s1, s: its base URL and its table lister."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path_factory.mktemp("ceiling")) as url:
        if request.param == "bare stack":
            app = bench["bare_stack"].create_app(url)
            engine = app.extensions["bare_stack"]
        else:
            from gravimeta.app import create_app
            from gravimeta.config import load_settings

            app = create_app(load_settings(environ={}, store_url=url, distributed_lock_enabled=False))
            engine = app.extensions["gravimeta"].store.engine
        make_tree(app.test_client(), ["s0", "s1", "s"])
        try:
            with serving(app) as base:
                yield base, lambda schema: table_names(engine, schema)
        finally:
            engine.dispose()


def table_names(engine: Any, schema: str) -> list[str]:
    from sqlalchemy import text

    with engine.connect() as conn:
        return sorted(conn.execute(text(
            "SELECT t.name FROM gm_table t JOIN gm_schema s ON s.id = t.schema_id WHERE s.name = :s"), {"s": schema}
        ).scalars())


def test_each_connection_cycles_create_rename_drop_in_its_own_schema(wrk, app_url):
    base, tables_in = app_url
    result = wrk.run(base, wrk.STRUCTURAL, 2, 1, {"schemas": wrk.SCHEMAS, "cycle": "create,rename,drop", "tag": "c"})
    assert result.errors == 0, result.error_samples
    done = {kind: result.statuses[kind][200] for kind in ("create", "rename", "drop")}
    assert done["create"] >= done["rename"] >= done["drop"] >= done["create"] - 2 > 0
    # each connection leaves at most the table it was cycling when wrk stopped (wrk does not count the
    # answers to requests still in flight then, but the server did the work)
    assert len(tables_in("s0")) <= 1 and len(tables_in("s1")) <= 1 and not tables_in("s")
    assert result.p(0.5) > 0 and len(result.kinds["create"]) == done["create"]


def test_the_hot_parent_script_creates_only_in_the_one_shared_schema(wrk, app_url):
    base, tables_in = app_url
    result = wrk.run(base, wrk.STRUCTURAL, 3, 1, {"schemas": wrk.SCHEMAS, "schema": "s", "cycle": "create", "tag": "h"})
    assert result.errors == 0, result.error_samples
    assert result.statuses["create"][200] == result.requests > 0
    assert result.requests <= len(tables_in("s")) <= result.requests + 3  # + the requests in flight at the end


def test_the_get_script_reads_one_path(wrk, app_url):
    base, _ = app_url
    result = wrk.run(base, wrk.GET, 2, 1, {"path": "/api/version", "kind": "version"})
    assert result.errors == 0 and result.statuses == {"version": {200: result.requests}} and result.requests > 0


@pytest.fixture(scope="module")
def bare_wire(bench):
    require_backend("postgresql")
    return bench["same_sql"].fresh_bare_wires()


def test_the_bare_stack_sends_gravimetas_lock_off_sql_statement_for_statement(bench, bare_wire):
    gravimeta = bench["same_sql"].fresh_gravimeta_wires("off", "memory")
    for kind in bench["same_sql"].KINDS:
        assert gravimeta[kind].signatures == bare_wire[kind].signatures, (
            f"{kind}: gravimeta now sends {gravimeta[kind].signatures}, the bare stack {bare_wire[kind].signatures} "
            "(verb, tables, row lock): bench/bare_stack.py must send the same SQL for its ratios to mean anything; "
            "`bench/same_sql.py` shows both in full")
        # byte for byte and round trip for round trip, the open-intents read included
        assert bench["same_sql"].agree(gravimeta[kind], bare_wire[kind]), "`bench/same_sql.py` shows where the texts differ"
        assert gravimeta[kind].statements  # the trace was read: a comparison of nothing proves nothing


def test_the_comparison_sees_what_a_claim_adds(bench, bare_wire):
    gravimeta = bench["same_sql"].fresh_gravimeta_wires("PG_ADVISORY", "memory")
    assert not bench["same_sql"].agree(gravimeta["create"], bare_wire["create"])  # the advisory guard's statement
    assert bench["same_sql"].agree(gravimeta["load"], bare_wire["load"])  # a load never claims


def test_the_profile_runs_and_names_its_layers(tmp_path):
    require_backend("postgresql")
    done = subprocess.run(
        [sys.executable, str(BENCH / "profile_requests.py"), "--requests", "2", "--warm-up", "1", "--modes", "off",
         "--providers", "memory", "--no-bare", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert done.returncode == 0, done.stderr
    assert "sqlalchemy orm" in done.stdout and "| off-memory |" in done.stdout
    assert (tmp_path / "off-memory-create.pstats").exists()
