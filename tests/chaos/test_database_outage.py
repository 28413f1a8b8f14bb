"""The database goes away under running replicas. (c) an outage under load on every replica, twice: through
a TCP proxy that the test cuts and restores (tests/support/tcp_proxy.py), and as a real restart of the
PostgreSQL/MariaDB server, which runs only when GRAVIMETA_CHAOS_RESTART_DB=1 (CI sets it; on a developer
machine other work shares those servers); (d) one replica cut off while it holds a claim."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest
from sqlalchemy.engine import make_url

from tests.chaos.conftest import (
    CATALOG,
    HEARTBEAT_S,
    SCHEMA,
    TTL_MS,
    catalog_table_locked,
    in_background,
    wait_until,
)
from tests.support.tcp_proxy import TcpProxy

ANSWER_WITHIN_S = 15.0  # a replica without its database must answer, not hang
RESTART_ENV = "GRAVIMETA_CHAOS_RESTART_DB"


def through(proxy: TcpProxy, db_url: str) -> str:
    return make_url(db_url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


def start_proxy(db_url: str) -> TcpProxy:
    url = make_url(db_url)
    return TcpProxy(url.host or "127.0.0.1", url.port or (5432 if url.get_backend_name() == "postgresql" else 3306)).start()


def assert_clear_error(op) -> None:
    """A Gravitino error body with a 5xx status: the store or the claim layer is unavailable."""
    assert op.status is not None, f"no answer: {op.describe()}"
    assert op.status in (500, 502, 503), op.describe()
    assert {"code", "type", "message"} <= set(op.body or {}), op.body
    assert op.end - op.start < ANSWER_WITHIN_S, op.describe()


def answers_ok(replica) -> bool:
    try:
        return replica.request("GET", f"/api/metalakes/m/catalogs/{CATALOG}/schemas")[0] == 200
    except OSError:
        return False


def test_a_replica_cut_off_from_the_database_fails_clearly_its_claims_expire_and_it_recovers(cluster):
    proxy = start_proxy(cluster.db_url)
    try:
        server_a, a = cluster.replica("chaos-a", store_url=through(proxy, cluster.db_url))
        _, b = cluster.replica("chaos-b")
        cluster.setup_tree(b)
        with catalog_table_locked(cluster.db_url) as release:
            thread, held = in_background(lambda: cluster.recorder.create_table(a, CATALOG, SCHEMA, "by_a"))
            wait_until("replica A claims the schema", lambda: cluster.claims_of("chaos-a"))
            proxy.cut()
            cut_at = time.monotonic()
            thread.join(ANSWER_WITHIN_S + 5)
            release()
        assert held, "replica A never answered the request it was holding a claim for"
        assert_clear_error(held[0])
        # A could not release its claim (no database); it expires and B proceeds on the same scope
        op = cluster.recorder.create_table(b, CATALOG, SCHEMA, "by_b")
        assert op.outcome == "ok", op.describe()
        assert time.monotonic() - cut_at <= TTL_MS / 1000 + HEARTBEAT_S + 2.0 + ANSWER_WITHIN_S
        # while cut off, every kind of request to A answers quickly with a Gravitino error body
        assert_clear_error(cluster.recorder.create_table(a, CATALOG, SCHEMA, "while_cut"))
        status, body = a.request("GET", f"/api/metalakes/m/catalogs/{CATALOG}/schemas")
        assert status in (500, 502, 503) and "code" in body, (status, body)
        # restored: the same process recovers by itself
        proxy.restore()
        wait_until("replica A answers again", lambda: answers_ok(a), timeout=20)
        assert server_a.process.poll() is None
        assert cluster.recorder.create_table(a, CATALOG, SCHEMA, "after").outcome == "ok"
        report, state = cluster.final_check(b)
        assert report.ok, report.render()
        assert {"by_b", "after"} <= set(state.api[SCHEMA])
    finally:
        proxy.stop()


def test_replicas_ride_out_a_database_outage_under_load_and_lose_no_acknowledged_write(cluster):
    proxy = start_proxy(cluster.db_url)

    def outage() -> None:
        proxy.cut()
        time.sleep(2.0)  # the outage itself: this is the event being tested, not a synchronisation
        proxy.restore()

    try:
        replicas = [cluster.replica(f"chaos-{n}", store_url=through(proxy, cluster.db_url)) for n in ("a", "b")]
        ride_out_under_load(cluster, replicas, outage)
    finally:
        proxy.stop()


@pytest.mark.serial
@pytest.mark.skipif(not os.environ.get(RESTART_ENV), reason=f"restarts the shared database server: set {RESTART_ENV}=1 (.ci/run does)")
def test_replicas_ride_out_a_real_database_server_restart_and_lose_no_acknowledged_write(cluster):
    backend = make_url(cluster.db_url).get_backend_name()
    replicas = [cluster.replica(f"chaos-{n}") for n in ("a", "b")]
    ride_out_under_load(cluster, replicas, lambda: restart_database_server(backend))


def restart_database_server(backend: str) -> None:
    """Restart the machine's PostgreSQL or MariaDB server (the commands the env notes give) and wait for it."""
    if backend == "postgresql":
        version = sorted(os.listdir("/etc/postgresql"))[-1]
        subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart", "-m", "fast"],
                       check=True, timeout=60)
        wait_until("PostgreSQL is back", lambda: _ok(["pg_isready", "-q", "-h", "127.0.0.1"]), timeout=60)
        return
    subprocess.run(["mysqladmin", "-h127.0.0.1", "-uroot", "shutdown"], check=True, timeout=60)
    # the process outlives its socket while InnoDB shuts down; start-stop-daemon --oknodo would then do nothing
    wait_until("MariaDB has exited", lambda: not _ok(["pgrep", "-x", "mariadbd"]), timeout=60)
    os.makedirs("/run/mysqld", exist_ok=True)
    shutil.chown("/run/mysqld", "mysql", "mysql")
    subprocess.run(["start-stop-daemon", "--start", "--oknodo", "--background", "--exec", "/usr/sbin/mariadbd"],
                   check=True, timeout=60)
    wait_until("MariaDB is back", lambda: _ok(["mysqladmin", "-h127.0.0.1", "-uroot", "ping"]), timeout=60)


def _ok(command: list[str]) -> bool:
    return subprocess.run(command, capture_output=True, timeout=10).returncode == 0


def ride_out_under_load(cluster, replicas, interrupt, check_history: bool = True):
    """Four clients create tables through `replicas` while `interrupt()` takes the database away and
    brings it back; afterwards every replica answers again without a restart, every failure was a clear
    Gravitino error, and (unless not `check_history`) every acknowledged write is present. Returns the
    history checker's report and the state it read."""
    servers, clients = zip(*replicas, strict=True)
    cluster.setup_tree(clients[0])
    stop = threading.Event()
    deadline = time.monotonic() + 40

    def load(worker: int) -> None:
        for i in range(200):  # bounded in count and time
            if stop.is_set() or time.monotonic() > deadline:
                return
            op = cluster.recorder.create_table(clients[(worker + i) % 2], CATALOG, SCHEMA, f"w{worker}_{i}")
            if op.outcome != "ok":
                time.sleep(0.1)  # a client's backoff after an error, so the outage does not use up the count

    threads = [threading.Thread(target=load, args=(w,), daemon=True) for w in range(4)]
    for t in threads:
        t.start()
    wait_until("some writes acknowledged before the outage", lambda: cluster.history.outcomes().get("ok", 0) >= 12)
    interrupt()
    stop_at = time.monotonic() + 4
    wait_until("writes acknowledged after the outage", lambda: time.monotonic() > stop_at, timeout=10)
    stop.set()
    for t in threads:
        t.join(40)
    ops = [op for op in cluster.history.ops if op.table and op.table.startswith("w")]
    failed = [op for op in ops if op.outcome != "ok"]
    assert failed, "the outage was not noticed by any request"
    for op in failed:
        assert_clear_error(op)
    assert any(op.outcome == "ok" and op.start > stop_at - 4 for op in ops), "no write succeeded after the outage"
    for server, client in zip(servers, clients, strict=True):
        assert server.process.poll() is None  # recovered without a restart
        wait_until(f"{client.name} answers", lambda c=client: answers_ok(c), timeout=20)
    report, state = cluster.final_check(clients[0])
    if check_history:
        assert report.ok, report.render()
        acknowledged = {op.table for op in ops if op.outcome == "ok"}
        assert acknowledged <= set(state.api[SCHEMA])
    return report, state
