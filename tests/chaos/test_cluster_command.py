"""`gravimeta cluster start|status|stop` for real: two replicas on one SQLite database behind HAProxy,
requests through the load balancer reach both, and stop leaves no process behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from gravimeta.cluster import ClusterState, _alive, _port_free


def gravimeta(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gravimeta", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def free_block(size: int) -> int:
    for base in range(24100, 25000, 10):
        if all(_port_free(base + i) for i in range(size)):
            return base
    raise AssertionError("no free block of loopback ports")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (.ci/run installs it)")
def test_cluster_start_serves_through_haproxy_and_stop_leaves_nothing_running(tmp_path):
    run_dir, port = tmp_path / "cluster", free_block(3)
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


def test_cluster_start_without_haproxy_says_how_to_install_it(tmp_path):
    python_dir = os.path.dirname(sys.executable)
    result = gravimeta("--store-url", f"sqlite:///{tmp_path / 'x.db'}", "cluster", "start", "--run-dir",
                       str(tmp_path / "c"), env={"PATH": python_dir})
    assert result.returncode == 1
    assert "apt-get install -y haproxy" in result.stderr
    assert ClusterState.load(tmp_path / "c") is None
