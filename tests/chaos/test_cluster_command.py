"""`gravimeta cluster start|status|stop` for real: two replicas on one SQLite database behind HAProxy,
requests through the load balancer reach both, and stop leaves no process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from gravimeta.cluster import ClusterState, Proc, _alive, _port_free, haproxy_config
from tests.conftest import require_backend
from tests.support.databases import MYSQL_ADMIN_URL

pytestmark = pytest.mark.slow  # tens of seconds each: start them first


def gravimeta(*args: str, env: dict[str, str] | None = None, timeout: float = 90,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gravimeta", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def free_block(size: int) -> int:
    for base in range(24100, 25000, 10):
        if all(_port_free(base + i) for i in range(size)):
            return base
    raise AssertionError("no free block of loopback ports")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (.ci/run installs it)")
def test_cluster_start_serves_through_haproxy_and_stop_leaves_nothing_running(tmp_path):
    run_dir, port = tmp_path / "cluster", free_block(4)
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    started = gravimeta("--store-url", store, "cluster", "start", "--replicas", "2", "--lock", "--port", str(port),
                        "--workers", "1", "--run-dir", str(run_dir))
    state = ClusterState.load(run_dir)
    try:
        assert started.returncode == 0, started.stderr + started.stdout
        assert f"load balancer  http://127.0.0.1:{port}/api" in started.stdout
        assert state is not None and [r.port for r in state.replicas] == [port + 1, port + 2]
        status = gravimeta("cluster", "status", "--json", "--run-dir", str(run_dir))
        assert status.returncode == 0, status.stdout
        assert all(p["healthy"] for p in json.loads(status.stdout)["processes"])
        for name in ("lb_a", "lb_b"):  # roundrobin: one metalake through each replica, one shared store
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/metalakes", method="POST",
                                             data=json.dumps({"name": name, "properties": {}}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
        with urllib.request.urlopen(f"{state.replicas[1].url}/api/metalakes", timeout=10) as response:
            assert {m["name"] for m in json.loads(response.read())["metalakes"]} >= {"lb_a", "lb_b"}
    finally:
        stopped = gravimeta("cluster", "stop", "--run-dir", str(run_dir))
    assert stopped.returncode == 0
    assert state is not None and not any(_alive(p.pid) for p in [*state.replicas, state.haproxy] if p)
    assert not (run_dir / "state.json").exists()


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (.ci/run installs it)")
def test_with_no_replica_ready_haproxy_answers_a_gravitino_503_with_retry_after(tmp_path):
    """While no replica passes its readiness check (the store failing over: docs/ha.md), the load balancer
    answers for them: a JSON 503 RuntimeException with Retry-After, as a replica does, not HAProxy's page."""
    port = free_block(3)
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(haproxy_config(port, [Proc("replica-1", 1, port + 1, "r1.log")], port + 2))  # nothing listens
    proc = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while _port_free(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/metalakes", timeout=10)
        assert answer.value.code == 503
        assert answer.value.headers["Retry-After"] == "1"
        assert answer.value.headers["Content-Type"] == "application/json"
        body = json.loads(answer.value.read())
        assert (body["code"], body["type"]) == (1002, "RuntimeException"), body
        assert "retry later" in body["message"], body
    finally:
        proc.kill()
        proc.wait()


def test_cluster_start_without_haproxy_says_how_to_install_it(tmp_path):
    python_dir = os.path.dirname(sys.executable)
    result = gravimeta("--store-url", f"sqlite:///{tmp_path / 'x.db'}", "cluster", "start", "--run-dir",
                       str(tmp_path / "c"), env={"PATH": python_dir})
    assert result.returncode == 1
    assert "apt-get install -y haproxy" in result.stderr
    assert ClusterState.load(tmp_path / "c") is None


def test_cluster_start_creates_a_missing_mariadb_database_and_locks_after_stop_names_the_empty_run_dir(tmp_path):
    """The help says `start` creates the database: on MariaDB it connected to the database it was about to
    create ("Unknown database", a traceback). After `stop`, `locks --run-dir` fell back to ./var silently."""
    require_backend("mysql")
    name = f"gm_test_{uuid.uuid4().hex[:12]}"
    store = make_url(MYSQL_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    run_dir, port = tmp_path / "cluster", free_block(2)
    admin = create_engine(MYSQL_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        started = gravimeta("--store-url", store, "cluster", "start", "--replicas", "1", "--no-haproxy", "--workers",
                            "1", "--port", str(port), "--run-dir", str(run_dir))
        assert started.returncode == 0, started.stdout + started.stderr
        assert "Traceback" not in started.stderr
        with admin.connect() as conn:
            assert conn.scalar(text("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = :n"),
                               {"n": name}) == 1
        listed = gravimeta("locks", "--run-dir", str(run_dir), cwd=tmp_path)
        assert listed.returncode == 0 and f"(cluster {run_dir})" in listed.stdout, listed.stdout + listed.stderr
    finally:
        gravimeta("cluster", "stop", "--run-dir", str(run_dir))
    try:
        for command in (["locks"], ["repair", "--list"]):
            after = gravimeta(*command, "--run-dir", str(run_dir), cwd=tmp_path)
            assert after.returncode == 1, after.stdout
            assert f"no cluster in {run_dir}" in after.stderr and "Traceback" not in after.stderr, after.stderr
        assert not (tmp_path / "var").exists()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


def node_rows(store: str) -> list[tuple[str, bool]]:
    from gravimeta.concurrency.node_registry import list_nodes
    from gravimeta.store.database import create_store_engine

    engine = create_store_engine(store)
    try:
        return [(str(n["node"]), bool(n["lockEnabled"])) for n in list_nodes(engine)]
    finally:
        engine.dispose()


def test_rows_of_killed_replicas_do_not_count_in_the_next_cluster(tmp_path):
    """A lock-off cluster whose replicas were SIGKILLed (what `stop` did after 20 s) left their node rows;
    the next `start --lock` then reported the lock ON and OFF on the same replicas."""
    run_dir, port = tmp_path / "cluster", free_block(3)
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    common = ["--replicas", "2", "--workers", "1", "--no-haproxy", "--port", str(port), "--run-dir", str(run_dir)]
    try:
        first = gravimeta("--store-url", store, "cluster", "start", "--no-lock", *common)
        assert first.returncode == 0, first.stdout + first.stderr
        state = ClusterState.load(run_dir)
        assert state is not None and len([row for row in node_rows(store) if not row[1]]) == 2
        for replica in state.replicas:  # killed, as SIGKILL leaves them: no worker_exit hook runs
            os.killpg(replica.pid, signal.SIGKILL)
        stopped = gravimeta("cluster", "stop", "--run-dir", str(run_dir))
        assert stopped.returncode == 0, stopped.stderr
        assert node_rows(store) == [], stopped.stdout
        second = gravimeta("--store-url", store, "cluster", "start", "--lock", *common)
        assert second.returncode == 0, second.stdout + second.stderr
        listed = gravimeta("locks", "--json", "--run-dir", str(run_dir))
        assert listed.returncode == 0, listed.stderr
        body = json.loads(listed.stdout)
        assert body["warnings"] == [], body["warnings"]
        assert len(body["nodes"]) == 2 and all(n["lockEnabled"] for n in body["nodes"]), body["nodes"]
    finally:
        gravimeta("cluster", "stop", "--run-dir", str(run_dir))


SLOW_TO_STOP = """
import pathlib, signal, sys, time
def finish(*_):
    time.sleep(21)  # in-flight requests finishing within gunicorn's 30 s graceful timeout
    pathlib.Path(sys.argv[1]).write_text("finished")
    sys.exit(0)
signal.signal(signal.SIGTERM, finish)
pathlib.Path(sys.argv[1] + ".ready").write_text("")
while True:
    time.sleep(1)
"""


def test_stop_waits_longer_than_the_graceful_timeout(tmp_path):
    """A replica that takes 21 s to finish its requests on SIGTERM (gunicorn allows 30 s) ends on its own,
    not by SIGKILL at 20 s."""
    marker = tmp_path / "finished"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_TO_STOP, str(marker)], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "finished.ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        run_dir = tmp_path / "cluster"
        run_dir.mkdir()
        state = ClusterState(f"sqlite:///{tmp_path / 'none.db'}", False, "NONE", 1, str(tmp_path / "roots"))
        state.replicas.append(Proc("replica-1", proc.pid, 1, str(tmp_path / "r.log")))
        state.save(run_dir)
        stopped = gravimeta("cluster", "stop", "--run-dir", str(run_dir), timeout=90)
        assert stopped.returncode == 0, stopped.stderr
        assert proc.wait(timeout=30) == 0 and marker.read_text() == "finished"
        assert not (tmp_path / "none.db").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
