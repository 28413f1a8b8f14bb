"""Slow and idle clients cannot take a server's threads: with 200 connections open that send nothing,
half their headers, or half their body, a normal request is still answered within 1 s, on a default
`gravimeta serve` (2 workers x 4 threads) and through the cluster's HAProxy. Loopback only; every
connection is closed at the end; the requests that must be answered have a 1 s client timeout.

Also: what the buffering worker (gravimeta/serving/buffering_worker.py) must not break (100-continue,
chunked bodies, pipelined requests, an oversized body) and how it ends a request that never arrives."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests

from gravimeta.cluster import ClusterState, _port_free

ANSWER_WITHIN_S = 1.0
PARTIAL_HEAD = b"POST /api/metalakes HTTP/1.1\r\nHost: gravimeta\r\nContent-Type: application/json\r\n"
PARTIAL_BODY = b"POST /api/metalakes HTTP/1.1\r\nHost: gravimeta\r\nContent-Length: 40\r\n\r\n{\"name\": "


@contextmanager
def hostile_clients(port: int, each: int = 67) -> Iterator[list[socket.socket]]:
    """`each` idle connections, `each` that stop in their headers and `each` that stop in their body."""
    sockets: list[socket.socket] = []
    try:
        for sent in (b"", PARTIAL_HEAD, PARTIAL_BODY):
            for _ in range(each):
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                sockets.append(sock)
                if sent:
                    sock.sendall(sent)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def assert_answered_in_time(url: str, name: str) -> None:
    for _ in range(5):
        started = time.monotonic()
        response = requests.get(f"{url}/api/version", timeout=ANSWER_WITHIN_S)
        assert response.status_code == 200
        assert time.monotonic() - started < ANSWER_WITHIN_S
    started = time.monotonic()
    created = requests.post(f"{url}/api/metalakes", json={"name": name}, timeout=ANSWER_WITHIN_S)
    assert created.status_code == 200, created.text
    assert time.monotonic() - started < ANSWER_WITHIN_S


def still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def test_two_hundred_slow_or_idle_connections_do_not_delay_a_normal_request(serve):
    server = serve()  # the defaults: 2 workers x 4 threads
    with hostile_clients(server.port) as hostile:
        assert len(hostile) >= 200
        assert_answered_in_time(server.url, "despite_slow_clients")
        assert all(still_open(s) for s in hostile[::10])  # they were waited for, not refused


def free_block(size: int) -> int:
    for base in range(26100, 27000, 10):
        if all(_port_free(base + i) for i in range(size)):
            return base
    raise AssertionError("no free block of loopback ports")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (.ci/run installs it)")
def test_two_hundred_slow_or_idle_connections_to_the_clusters_haproxy_do_not_delay_a_normal_request(tmp_path):
    run_dir, port = tmp_path / "cluster", free_block(4)

    def gravimeta(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gravimeta", *args], capture_output=True, text=True, timeout=120)

    started = gravimeta("--store-url", f"sqlite:///{tmp_path / 'shared.db'}", "cluster", "start", "--replicas", "2",
                        "--no-lock", "--port", str(port), "--run-dir", str(run_dir))
    try:
        assert started.returncode == 0, started.stderr + started.stdout
        assert ClusterState.load(run_dir) is not None
        with hostile_clients(port):
            assert_answered_in_time(f"http://127.0.0.1:{port}", "through_haproxy")
    finally:
        gravimeta("cluster", "stop", "--run-dir", str(run_dir))


def exchange(port: int, *parts: bytes, pause_after_first: float = 0.0) -> bytes:
    """Send the parts on one connection, then read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for i, part in enumerate(parts):
            sock.sendall(part)
            if i == 0 and pause_after_first:
                time.sleep(pause_after_first)  # a client that is slow on purpose, not a synchronisation
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_the_buffering_worker_keeps_http_working(serve):
    server = serve(workers=1)
    body = json.dumps({"name": "continued"}).encode()
    head = (f"POST /api/metalakes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the body was sent
        sock.sendall(body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]

    chunked = exchange(server.port, b"POST /api/metalakes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n9\r\n{\"name\": \r\n",
                       b"a\r\n\"chunked\"}\r\n0\r\n\r\n",
                       pause_after_first=0.2)
    assert chunked.startswith(b"HTTP/1.1 200 "), chunked[:300]

    pipelined = exchange(server.port, b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"GET /api/metalakes/continued HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert pipelined.count(b"HTTP/1.1 200 ") == 2 and b'"name":"continued"' in pipelined

    too_large = exchange(server.port, b"POST /api/metalakes HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n{")
    assert too_large.startswith(b"HTTP/1.1 413 ")
    assert json.loads(too_large.split(b"\r\n\r\n", 1)[1])["code"] == 1001
    assert requests.get(f"{server.url}/api/metalakes/chunked", timeout=5).status_code == 200


def test_a_request_that_does_not_arrive_in_time_is_closed_with_408(serve):
    server = serve(workers=1, env={"GRAVIMETA_REQUEST_TIMEOUT_MS": "1500"})
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as idle:
        started = time.monotonic()
        answer = exchange(server.port, PARTIAL_HEAD)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert idle.recv(100) == b""  # an idle connection is closed without an answer
        assert time.monotonic() - started < 10
