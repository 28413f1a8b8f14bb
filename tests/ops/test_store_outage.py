"""A store that refuses connections does not kill the server: `gravimeta serve` (gunicorn, 2 workers,
lock on) starts and keeps its workers while PostgreSQL refuses, answers 503 (ready DOWN, live UP),
survives a kill -9 of a worker meanwhile (gunicorn used to exit with "Worker failed to boot"), and
recovers by itself once the store answers. Two ways to refuse: a role at its CONNECTION LIMIT, and a
database reached through a TCP proxy that is not running. The shared database servers are never
stopped; the role and the databases are unique and dropped afterwards."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
import requests
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.conftest import require_backend
from tests.ops.conftest import check, get, ready_status, wait_until, worker_pids
from tests.support.databases import PG_ADMIN_URL, _migrate, fresh_database
from tests.support.servers import ServerProcess, free_port
from tests.support.tcp_proxy import TcpProxy

TTL_MS = 3000  # the node row is refreshed every TTL: readiness returns within one TTL of the store
LOCK_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": str(TTL_MS)}
ROLE_LIMIT = 10


@contextmanager
def role_with_connection_limit() -> Iterator[tuple[str, list[psycopg.Connection]]]:
    """A fresh database owned by a fresh role with CONNECTION LIMIT; yields its URL and a list the test
    fills with connections that use up the limit. Everything is dropped at the end."""
    suffix = uuid.uuid4().hex[:10]
    role, database = f"gm_ops_role_{suffix}", f"gm_test_{suffix}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN CONNECTION LIMIT {ROLE_LIMIT}'))
        conn.execute(text(f'CREATE DATABASE "{database}" OWNER "{role}"'))
    url = make_url(PG_ADMIN_URL).set(username=role, database=database).render_as_string(hide_password=False)
    held: list[psycopg.Connection] = []
    try:
        _migrate(url)
        yield url, held
    finally:
        for conn in held:
            conn.close()
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :r"), {"r": role})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}"'))
            conn.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


def libpq(url: str) -> str:
    u = make_url(url)
    return f"host={u.host} port={u.port or 5432} user={u.username} dbname={u.database}"


def assert_refusing_but_alive(server: ServerProcess) -> None:
    """Live UP, ready DOWN naming the store, and API requests answered 503 with an error body."""
    live = get(f"{server.url}/api/health/live")
    assert live.status_code == 200 and live.json()["status"] == "UP"
    status, body = ready_status(server)
    assert status == 503 and body["status"] == "DOWN", body
    assert check(body, "entityStore")["status"] == "DOWN"
    assert "does not answer" in check(body, "entityStore")["details"]["reason"]
    response = get(f"{server.url}/api/metalakes")
    assert response.status_code == 503, response.text
    assert response.json()["code"] == 1002 and response.json()["type"] == "RuntimeException"


def kill_a_worker_and_wait_for_its_replacement(server: ServerProcess) -> None:
    assert server.process is not None
    workers = wait_until("two workers booted", lambda: (w := worker_pids(server.process.pid)) and len(w) == 2 and w)
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    wait_until("gunicorn replaces the killed worker",
               lambda: len(worker_pids(server.process.pid) - {victim}) == 2, timeout=30)
    assert server.process.poll() is None, "the gunicorn master exited"


def assert_recovers(server: ServerProcess, name: str, workers: int = 2) -> None:
    """Ready again, and a create succeeds. Readiness is one worker's answer: another worker's pool may
    still hold connections the outage cut, and its first request then answers 503 "retry later" while
    the pool is replaced (database.py: no pre-ping). So each worker may refuse once, cleanly; no more."""
    wait_until("ready again once the store answers", lambda: ready_status(server)[0] == 200, timeout=3 * TTL_MS / 1000 + 20)
    for _ in range(workers + 1):
        created = requests.post(f"{server.url}/api/metalakes", json={"name": name}, timeout=15)
        if created.status_code != 503:
            break
        assert "retry later" in created.json()["message"], created.text
    assert created.status_code == 200, created.text
    assert server.process is not None and server.process.poll() is None


def test_a_role_at_its_connection_limit_does_not_kill_the_server_and_it_recovers_by_itself(serve):
    require_backend("postgresql")
    with role_with_connection_limit() as (url, held):
        held.extend(psycopg.connect(libpq(url)) for _ in range(ROLE_LIMIT))
        with pytest.raises(psycopg.OperationalError, match="too many connections"):
            psycopg.connect(libpq(url))
        server = serve(url, workers=2, env=LOCK_ON)
        try:
            assert_refusing_but_alive(server)
            kill_a_worker_and_wait_for_its_replacement(server)
            assert_refusing_but_alive(server)
            for conn in held:
                conn.close()
            held.clear()
            assert_recovers(server, "after_the_limit")
        finally:
            server.discard()


def test_a_database_that_is_down_does_not_kill_the_server_and_it_recovers_by_itself(serve, tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as real_url:
        real = make_url(real_url)
        port = free_port()  # the proxy between server and database, not started yet: nothing listens here
        through_proxy = real.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
        server = serve(through_proxy, workers=2, env=LOCK_ON)
        proxy = TcpProxy(real.host or "127.0.0.1", real.port or 5432, port=port)
        try:
            assert_refusing_but_alive(server)
            kill_a_worker_and_wait_for_its_replacement(server)
            proxy.start()
            assert_recovers(server, "after_the_start")

            proxy.stop()  # the database goes away under the running server, then comes back
            wait_until("not ready while the database is down", lambda: ready_status(server)[0] == 503)
            assert_refusing_but_alive(server)
            proxy = TcpProxy(real.host or "127.0.0.1", real.port or 5432, port=port).start()
            assert_recovers(server, "after_the_outage")
        finally:
            server.discard()
            proxy.stop()
