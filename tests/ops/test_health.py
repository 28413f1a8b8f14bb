"""Health as Gravitino and load balancers expect it, on real gunicorn: Gravitino's paths and bodies,
readiness that names the check that failed (schema revision, a stuck heartbeat), and HAProxy in front
of `gravimeta cluster` routing only to ready replicas."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from alembic import command
from alembic.script import ScriptDirectory

from gravimeta.cluster import ClusterState, _port_free
from gravimeta.store.database import create_store_engine
from gravimeta.store.migrations import alembic_config, head_revision, migration_connection
from tests.ops.conftest import check, get, ready_status, wait_until
from tests.support.databases import downgrade
from tests.support.failpoints import Failpoints

LOCK_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE"}


def test_health_answers_on_gravitinos_paths_with_its_bodies_without_credentials(serve):
    server = serve(workers=1, env={**LOCK_ON, "GRAVIMETA_AUTHENTICATORS": "simple",
                                   "GRAVIMETA_SIMPLE_ALLOW_ANONYMOUS": "false"})
    assert get(f"{server.url}/api/metalakes").status_code == 401  # authentication is on

    live = get(f"{server.url}/api/health/live")
    assert live.status_code == 200
    assert live.json() == {"code": 0, "status": "UP",
                           "checks": [{"name": "httpServer", "status": "UP", "details": {}}]}

    ready = get(f"{server.url}/api/health/ready")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["code"] == 0 and body["status"] == "UP"
    assert [c["name"] for c in body["checks"]] == ["entityStore", "schemaVersion", "heartbeat", "distributedLock"]
    assert all(c["status"] == "UP" for c in body["checks"])
    assert check(body, "schemaVersion")["details"] == {"expected": head_revision()}
    assert check(body, "distributedLock")["details"] == {"enabled": "true", "backend": "LEASE_TABLE"}

    both = get(f"{server.url}/api/health")
    assert both.status_code == 200
    assert [c["name"] for c in both.json()["checks"]] == ["httpServer", *[c["name"] for c in body["checks"]]]
    for alias, same_as in (("/health/live", live), ("/health/ready", ready), ("/health", both), ("/health.html", both)):
        answer = get(f"{server.url}{alias}")
        assert answer.status_code == 200, alias
        assert [c["name"] for c in answer.json()["checks"]] == [c["name"] for c in same_as.json()["checks"]], alias


def test_ready_says_the_schema_is_not_at_this_codes_revision_and_requests_wait_for_it(serve):
    server = serve(workers=1)  # one worker: the one that answers the probe is the one that answers requests
    assert requests.post(f"{server.url}/api/metalakes", json={"name": "before"}, timeout=10).status_code == 200
    engine = create_store_engine(server.store_url)
    config = alembic_config(engine)
    previous = ScriptDirectory.from_config(config).get_revision(head_revision()).down_revision
    try:
        downgrade(engine, str(previous))

        status, body = ready_status(server)
        assert status == 503 and body["status"] == "DOWN"
        assert check(body, "entityStore")["status"] == "UP"
        schema = check(body, "schemaVersion")
        assert schema["status"] == "DOWN"
        assert f"schema revision {previous}, this server needs {head_revision()}" in schema["details"]["reason"]
        refused = get(f"{server.url}/api/metalakes")
        assert refused.status_code == 503 and "gravimeta db upgrade" in refused.json()["message"]
        assert get(f"{server.url}/api/health/live").status_code == 200

        with migration_connection(engine) as conn:  # on SQLite with foreign keys off, as upgrade() does
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
        assert ready_status(server)[0] == 200
        assert get(f"{server.url}/api/metalakes/before").status_code == 200
    finally:
        engine.dispose()


def test_ready_is_down_while_this_workers_heartbeat_is_stuck_and_up_when_it_runs_again(serve, tmp_path):
    fp = Failpoints(tmp_path / "fp")
    server = serve(workers=1, env={**LOCK_ON, "GRAVIMETA_LEASE_TTL_MS": "1000", **fp.env("replica")})
    assert ready_status(server)[0] == 200
    fp.arm("node.before_beat", tag="replica")
    stuck = fp.wait_reached("node.before_beat", tag="replica")
    try:
        body = wait_until("not ready once the heartbeat is older than 2 x TTL + 1 s",
                          lambda: (r := ready_status(server))[0] == 503 and r[1])
        heartbeat = check(body, "heartbeat")
        assert heartbeat["status"] == "DOWN"
        assert "heartbeat is older than 3000 ms" in heartbeat["details"]["reason"]
        assert check(body, "entityStore")["status"] == "UP"
    finally:
        fp.resume(stuck)
    wait_until("ready again once the heartbeat runs", lambda: ready_status(server)[0] == 200)


def haproxy_stats(port: int) -> dict[str, dict[str, str]]:
    """The stats page of the cluster whose frontend is `port` (2 replicas): on its loopback admin port."""
    port += 3
    text = requests.get(f"http://127.0.0.1:{port}/haproxy-stats;csv", timeout=5).text.lstrip("# ")
    return {row["svname"]: row for row in csv.DictReader(io.StringIO(text)) if row["pxname"] == "replicas"}


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])


def free_block(size: int) -> int:
    for base in range(25200, 26000, 10):
        if all(_port_free(base + i) for i in range(size)):
            return base
    raise AssertionError("no free block of loopback ports")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (.ci/run installs it)")
def test_the_clusters_haproxy_routes_only_to_ready_replicas(tmp_path):
    fp = Failpoints(tmp_path / "fp")
    run_dir, port = tmp_path / "cluster", free_block(4)
    env = {**os.environ, **fp.env(), "GRAVIMETA_LEASE_TTL_MS": "1000"}

    def gravimeta(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gravimeta", *args], capture_output=True, text=True,
                              timeout=120, env=env)

    started = gravimeta("--store-url", f"sqlite:///{tmp_path / 'shared.db'}", "cluster", "start", "--replicas", "2",
                        "--lock", "--workers", "1", "--port", str(port), "--run-dir", str(run_dir))
    try:
        assert started.returncode == 0, started.stderr + started.stdout
        assert "health check /api/health/ready" in started.stdout
        state = ClusterState.load(run_dir)
        assert state is not None
        fp.arm("node.before_beat")  # the first worker to beat next gets stuck: its replica is not ready
        stuck = fp.wait_reached("node.before_beat")
        try:
            down = next(r.name for r in state.replicas if r.pid == parent_of(stuck.pid))
            up = next(r.name for r in state.replicas if r.name != down)
            wait_until("HAProxy takes the replica that is not ready out",
                       lambda: haproxy_stats(port)[down]["status"].startswith("DOWN"), timeout=30)
            before = haproxy_stats(port)
            for i in range(10):
                response = requests.post(f"http://127.0.0.1:{port}/api/metalakes", json={"name": f"lb{i}"}, timeout=10)
                assert response.status_code == 200, response.text
            after = haproxy_stats(port)
            assert int(after[down]["stot"]) == int(before[down]["stot"])
            assert int(after[up]["stot"]) == int(before[up]["stot"]) + 10
        finally:
            fp.resume(stuck)
        wait_until("HAProxy routes to it again once it is ready",
                   lambda: haproxy_stats(port)[down]["status"].startswith("UP"), timeout=30)
    finally:
        gravimeta("cluster", "stop", "--run-dir", str(run_dir))
