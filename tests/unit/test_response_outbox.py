"""Answers a client does not take at once (gravimeta/serving/buffering_worker.py): the thread's writes
never wait (Outbox), the bytes arrive whole and in order once the client reads, and the worker's event
loop drops the connections that take nothing: after the send timeout, and, beyond its cap of unsent
bytes, those that took nothing the longest first. Local socket pairs, no server."""

from __future__ import annotations

import io
import selectors
import socket
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from gravimeta.config import load_settings
from gravimeta.serving.buffering_worker import BufferingThreadWorker, Outbox


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    yield server, client
    server.close()
    client.close()


def read_exactly(sock: socket.socket, size: int, outbox: Outbox) -> bytes:
    """Read `size` bytes, flushing the outbox as the socket drains (what the event loop does)."""
    got = bytearray()
    sock.settimeout(5)
    while len(got) < size:
        outbox.flush()
        got += sock.recv(65536)
    return bytes(got)


def test_writes_do_not_wait_and_arrive_whole_and_in_order(pair):
    server, client = pair  # blocking, as a thread's socket is
    outbox = Outbox(server)
    head, body, tail = b"HTTP/1.1 200 OK\r\n\r\n", bytes(range(256)) * 4096, b"0\r\n\r\n"
    for part in (head, body, tail):
        outbox.sendall(part)  # would block for ever on the socket itself: nobody reads yet
    assert 0 < outbox.size < len(head + body + tail)  # part went out at once, the rest waits
    assert read_exactly(client, len(head + body + tail), outbox) == head + body + tail
    assert outbox.size == 0 and not outbox.unsent


def test_a_file_sent_with_sendfile_goes_through_the_outbox(pair):
    server, client = pair
    outbox = Outbox(server)
    data = b"x" * 300_000
    outbox.sendfile(io.BytesIO(b"skip" + data + b"after"), offset=4, count=len(data))
    assert outbox.unsent
    assert read_exactly(client, len(data), outbox) == data


def test_a_client_that_went_away_fails_the_flush(pair):
    server, client = pair
    outbox = Outbox(server)
    outbox.sendall(b"y" * 1_000_000)
    client.close()
    with pytest.raises(OSError):
        outbox.flush()


class Conn:
    """What the worker keeps of a connection: its socket; close() as gthread's TConn."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def close(self) -> None:
        self.sock.close()


def worker(send_timeout_s: float = 30.0, max_unsent_bytes: int = 10**9) -> Any:
    """The event loop's half of a BufferingThreadWorker, without gunicorn's process around it."""
    w = BufferingThreadWorker.__new__(BufferingThreadWorker)
    w.poller, w.writing, w.unsent_bytes, w.nr_conns = selectors.DefaultSelector(), {}, 0, 0
    w.reading, w.lingering, w.pending_conns, w.alive = {}, {}, [], True
    w.send_timeout_s, w.max_unsent_bytes = send_timeout_s, max_unsent_bytes
    return w


def stalled(w: Any, size: int) -> tuple[Conn, socket.socket]:
    """A connection whose thread left `size` bytes unsent and whose client reads nothing, handed to the loop."""
    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    outbox = Outbox(server)
    outbox.sendall(b"z" * size)
    assert outbox.unsent
    conn, done = Conn(server), Future()
    done.set_result(True)
    w.nr_conns += 1
    w._write_later(conn, done, outbox)
    return conn, client


def dropped(conn: Conn) -> bool:
    return conn.sock.fileno() == -1


def test_beyond_the_cap_the_connections_that_took_nothing_the_longest_are_dropped():
    w = worker(max_unsent_bytes=2_500_000)
    conns = [stalled(w, 1_000_000) for _ in range(4)]
    assert [dropped(c) for c, _ in conns] == [True, True, False, False]
    assert w.unsent_bytes <= 2_500_000 and w.nr_conns == 2
    big, _ = stalled(w, 5_000_000)  # one answer over the cap alone is kept: the others go
    assert [dropped(c) for c, _ in conns] == [True] * 4 and not dropped(big)
    assert list(w.writing) == [big]


def test_a_connection_that_takes_nothing_for_the_send_timeout_is_dropped_and_one_that_reads_is_not():
    w = worker(send_timeout_s=0.0)
    idle, _ = stalled(w, 1_000_000)
    reading, reader = stalled(w, 1_000_000)
    reader.setblocking(False)
    reader.recv(1 << 20)
    w.send_timeout_s = 30.0
    w._on_writable(reading, reading.sock)  # it took bytes: a new deadline, later than idle's
    w.murder_pending()
    assert dropped(idle) and not dropped(reading)
    assert list(w.writing) == [reading] and w.nr_conns == 1


@pytest.mark.parametrize("variable", ["GRAVIMETA_SEND_TIMEOUT_MS", "GRAVIMETA_MAX_UNSENT_BYTES"])
def test_limits_that_are_not_positive_are_refused(variable):
    with pytest.raises(ValueError, match="must be a positive number"):
        load_settings(environ={variable: "0"})
