"""A Patroni-managed PostgreSQL cluster for tests: deploy/patroni/cluster.py's PatroniCluster on free loopback
ports in a directory of its own (never the machine's PostgreSQL on 5432), torn down at the end.

Needs Debian's `patroni` and `etcd-server` and PostgreSQL 15's binaries (.ci/run installs them); without
them the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "patroni" / "cluster.py"
_spec = importlib.util.spec_from_file_location("gravimeta_deploy_patroni", _SCRIPT)
assert _spec is not None and _spec.loader is not None
deploy = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = deploy  # dataclasses look their module up by name
_spec.loader.exec_module(deploy)
PatroniCluster = deploy.PatroniCluster
Member = deploy.Member


def missing() -> str | None:
    """What this machine lacks to run the cluster, or None."""
    for tool in ("patroni", "etcd"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install patroni etcd-server)"
    if not os.path.exists(os.path.join(deploy.BIN_DIR, "postgres")):
        return f"no PostgreSQL binaries in {deploy.BIN_DIR}"
    return None


def require_patroni() -> None:
    reason = missing()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the failover tests: {reason}")
    pytest.skip(reason)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_block(size: int, low: int = 20000, high: int = 32000) -> int:
    """The first of `size` consecutive free loopback ports (random start, so parallel tests do not meet)."""
    for _ in range(200):
        base = random.randrange(low, high - size)
        if all(_free(base + i) for i in range(size)):
            return base
    raise RuntimeError(f"no {size} consecutive free ports in {low}-{high}")


@contextmanager
def patroni_cluster(members: int = 2, synchronous: bool = True, strict: bool = False,
                    haproxy: bool = False) -> Iterator[PatroniCluster]:
    """Start the cluster, yield it with a primary and its standbys streaming, stop it and remove its
    directory (kept, with the logs, when the test failed: its path is in the failure's output)."""
    require_patroni()
    base = free_block(2 * members + 3)
    directory = Path(tempfile.mkdtemp(prefix="gm-patroni-"))
    cluster = PatroniCluster.layout(directory, members, pg_port=base, rest_port=base + members,
                                    etcd_port=base + 2 * members, synchronous=synchronous, strict=strict)
    cluster.haproxy_port = base + 2 * members + 2 if haproxy else 0
    cluster.start()
    failed = True
    try:
        yield cluster
        failed = False
    finally:
        cluster.stop(remove=not failed, kill=True)
        if failed:
            print(f"patroni cluster logs kept in {directory}")
