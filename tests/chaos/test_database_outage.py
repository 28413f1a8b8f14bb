"""The database goes away under running replicas: through a TCP proxy that the test cuts and restores
(tests/support/tcp_proxy.py), so the shared PostgreSQL/MariaDB servers other tests use are never
restarted. (c) an outage under load on every replica; (d) one replica cut off while it holds a claim."""

from __future__ import annotations

import threading
import time

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
    try:
        servers, replicas = zip(*(cluster.replica(f"chaos-{n}", store_url=through(proxy, cluster.db_url))
                                  for n in ("a", "b")), strict=True)
        cluster.setup_tree(replicas[0])
        stop = threading.Event()
        deadline = time.monotonic() + 25

        def load(worker: int) -> None:
            for i in range(150):  # bounded in count and time
                if stop.is_set() or time.monotonic() > deadline:
                    return
                op = cluster.recorder.create_table(replicas[(worker + i) % 2], CATALOG, SCHEMA, f"w{worker}_{i}")
                if op.outcome != "ok":
                    time.sleep(0.1)  # a client's backoff after an error, so the outage does not use up the count

        threads = [threading.Thread(target=load, args=(w,), daemon=True) for w in range(4)]
        for t in threads:
            t.start()
        wait_until("some writes acknowledged before the outage", lambda: cluster.history.outcomes().get("ok", 0) >= 12)
        proxy.cut()
        time.sleep(2.0)  # the outage itself: this is the event being tested, not a synchronisation
        proxy.restore()
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
        for server, replica in zip(servers, replicas, strict=True):
            assert server.process.poll() is None  # recovered without a restart
            wait_until(f"{replica.name} answers", lambda r=replica: answers_ok(r), timeout=20)
        report, state = cluster.final_check(replicas[0])
        assert report.ok, report.render()
        acknowledged = {op.table for op in ops if op.outcome == "ok"}
        assert acknowledged <= set(state.api[SCHEMA])
    finally:
        proxy.stop()
