"""Clients that ask for a large answer and never read it cannot hold `gravimeta serve`'s threads (the
buffering worker, gravimeta/serving/buffering_worker.py), on its own, without HAProxy.

Anyone may make a metalake of about 8 MB (a few property updates of 1 MB each). 40 connections ask for
it and never read; the answer is larger than what the kernel's socket buffers take, so a thread writing
it on a blocking socket waited for ever, and with 2 workers x 4 threads nothing else was answered. The
answer must be written by the worker's event loop as the client drains it, and a client that accepts
nothing for `gravimeta.server.send-timeout-ms` must be disconnected.

The timeouts are failure detection, not speed claims: every normal request must be answered (client
timeout 15 s) while the 40 connections are open, and the 40 must be closed by the server after the
send timeout (2 s here): reset, not answered.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests

from gravimeta.console import STATIC_DIR
from tests.ops.conftest import wait_until

pytestmark = pytest.mark.slow

VALUE = "v" * 65000  # under the property value limit (65536 characters)
PER_UPDATE = 15  # 15 x 65 KB: under the 1 MB request body limit


def make_large_metalake(url: str, name: str, updates: int = 8) -> int:
    """A metalake of about `updates` MB (what any client may create; 8 is about the most the store holds); returns the size of its GET answer."""
    assert requests.post(f"{url}/api/metalakes", json={"name": name}, timeout=30).status_code == 200
    for round_no in range(updates):
        body = {"updates": [{"@type": "setProperty", "property": f"p{round_no}_{i}", "value": VALUE}
                            for i in range(PER_UPDATE)]}
        response = requests.put(f"{url}/api/metalakes/{name}", json=body, timeout=60)
        assert response.status_code == 200, response.text[:300]
    return len(requests.get(f"{url}/api/metalakes/{name}", timeout=60).content)


def open_stalled_readers(port: int, path: str, count: int) -> list[socket.socket]:
    """`count` connections that send `GET path` (keep-alive) and never read; a small receive buffer,
    as a client on a slow link would advertise. The caller closes them."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(10)
            sock.connect(("127.0.0.1", port))
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: gravimeta\r\n\r\n".encode())
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


@contextmanager
def stalled_readers(port: int, path: str, count: int) -> Iterator[list[socket.socket]]:
    sockets = open_stalled_readers(port, path, count)
    try:
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def tcp_state(sock: socket.socket) -> int:
    """The kernel's TCP state of a socket (Linux TCP_INFO's first byte): 1 established, 7 closed, 8 close-wait."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)[0]


TCP_CLOSE = 7  # what a reset leaves


def test_clients_that_never_read_a_large_answer_do_not_hold_the_threads(serve):
    server = serve(env={"GRAVIMETA_SEND_TIMEOUT_MS": "2000"})  # the defaults otherwise: 2 workers x 4 threads
    size = make_large_metalake(server.url, "large")
    assert size > 7_500_000  # the store holds at most 8 MiB of properties
    with stalled_readers(server.port, "/api/metalakes/large", 40) as stalled:
        time.sleep(1.0)  # let the threads take the 40 requests
        for i in range(5):
            assert requests.get(f"{server.url}/api/version", timeout=15).status_code == 200
            created = requests.post(f"{server.url}/api/metalakes", json={"name": f"while_stalled_{i}"}, timeout=15)
            assert created.status_code == 200, created.text
        # the stalled connections are reset once they have accepted nothing for the send timeout (checked
        # without reading: reading would take bytes); an answered connection would be closed with a FIN
        wait_until("the server resets the 40 stalled connections",
                   lambda: all(tcp_state(sock) == TCP_CLOSE for sock in stalled), timeout=25)  # < the default 30 s
    # a client that reads gets the whole answer, written by the event loop, and the connection then goes on
    # as it would have: kept alive for the next request, or closed after an answer with `Connection: close`
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        for request in ("GET /api/metalakes/large HTTP/1.1", "GET /api/version HTTP/1.1"):
            sock.sendall(f"{request}\r\nHost: gravimeta\r\n\r\n".encode())
            status, body, rest = read_answer(sock)
            assert status == 200 and rest == b""
        assert len(body) < size  # the second answer, on the same connection
        sock.sendall(b"GET /api/metalakes/large HTTP/1.1\r\nHost: gravimeta\r\nConnection: close\r\n\r\n")
        status, body, rest = read_answer(sock)
        assert status == 200 and len(body) == size and rest == b""
        assert sock.recv(1) == b""  # closed by the server
    # static files go through gunicorn's sendfile, which writes to the same outbox
    assert requests.get(f"{server.url}/console/console.js", timeout=15).content == (STATIC_DIR / "console.js").read_bytes()


def read_answer(sock: socket.socket) -> tuple[int, bytes, bytes]:
    """One HTTP/1.1 answer framed by Content-Length: (status, body, bytes read beyond it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, data = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(data) < length:
        chunk = sock.recv(1 << 20)
        assert chunk, "closed before the whole answer"
        data += chunk
    return int(head.split()[1]), data[:length], data[length:]
