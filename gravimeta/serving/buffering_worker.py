"""gunicorn's threaded worker (gthread), except that a thread takes a request only once it has arrived
in full: headers and body are read by the worker's event loop, without blocking, into a buffer.

Why: gthread hands every new connection to a thread of its pool (4 per worker by default), and the
thread then reads the request with blocking calls. A client that sends its headers slowly keeps that
thread for as long as it likes; an idle connection keeps one for 5 s before it is put back; 8 slow
clients on a default `serve` (2 workers x 4 threads) left 4 of 5 normal requests unanswered, and 100
idle connections stopped it. gunicorn's documentation asks for a buffering proxy in front for exactly
this reason; this worker is that buffer, inside the worker, so `gravimeta serve` is safe on its own
and the cluster's HAProxy is a second layer, not the only one (docs/operations.md, "Slow clients").

How: `enqueue_req` (every place gthread hands a connection to the pool: accept, a kept-alive
connection that became readable, bytes read ahead of the next request) instead registers the
connection with the event loop; `_on_readable` reads what has arrived; once RequestBuffer says the
request is complete, the connection goes to the pool with those bytes, which `handle` gives back to
gunicorn's own parser before it reads from the socket. So gunicorn still parses and answers every
request; this class only decides *when* a thread starts. Limits, all answered from the event loop
without a thread: a request that has not fully arrived within REQUEST_TIMEOUT_S is closed (with 408
if it had started); headers over MAX_HEAD_BYTES get 431; a body over the app's MAX_CONTENT_LENGTH gets
413 (the same Gravitino error body as the app's own 413). `Expect: 100-continue` is answered here, so
that clients send their body without waiting. Memory is bounded by worker_connections (1000) x
(MAX_HEAD_BYTES + the body limit).

Closing is kept off the event loop's time too. gthread closes a connection that is not kept alive
gracefully, on its event loop: shut down the write side, then wait up to 2 s for the client to close its
side (draining what it sends). A client that sends `GET ... HTTP/1.0` and keeps its socket open held the
loop 2 s each time; 4 such clients a second made 24 of 27 normal requests miss 1 s. Here the shutdown is
immediate and the draining is done by the event loop as bytes arrive (`_linger`): the socket is closed
when the client closes, after LINGER_S, or after MAX_LINGER_DRAIN bytes, whichever comes first, and no
more than MAX_LINGERING sockets wait at once (beyond that they are closed at once).

Answers are written the same way, from the event loop, so that a client that does not read cannot hold a
thread either. gthread's thread writes the answer on a blocking socket: an answer larger than what the
kernel's socket buffers take (a few MB; anyone can make a metalake of 8 MB) waits for the client to read,
for ever; 40 connections that asked for such a metalake and never read left `serve` (2 workers x 4
threads) without an answer for 20 s and more. Here the thread's writes go to an `Outbox`
(`handle_request`): each is sent at once as far as the socket takes it without waiting (MSG_DONTWAIT),
and the rest is kept in memory as it is (the answer was in memory already: gunicorn gets it from the
app as one body). When the thread is done, `finish_request` gives what is left to the event loop, which
writes it as the socket drains (`_on_writable`); only then does the connection go on as gthread's would
(kept alive for the next request, or closed with `_linger`). Small answers never reach the loop: the
kernel takes them whole while the thread writes. Limits: a connection
whose client accepts nothing for SEND_TIMEOUT_S (`gravimeta.server.send-timeout-ms`) is reset (SO_LINGER
0: the kernel drops what it still holds for it too), and when the unsent bytes of one worker exceed
MAX_UNSENT_BYTES (`gravimeta.server.max-unsent-bytes`), the connections that accepted nothing the
longest are reset until they do not (never the one just added: one answer is bounded by the app's
limits). So memory for unsent answers is about that cap plus threads x one answer, and no client can
keep a thread longer than the app takes to produce its answer.

Why not a send timeout on the thread (SO_SNDTIMEO with a deadline for the whole answer): the thread is
still held for that long by each client that does not read, so 40 such clients on 4 threads delay every
other request by about 10 timeouts, and a timeout short enough to keep that under a second would cut off
honest clients on slow links. Non-blocking writes in the thread alone do not help either: a thread that
meets a full socket must wait for it or hand the rest to something that waits. Here the thread never
waits, and the event loop, which already waits on every socket of the worker, does.

Written against gunicorn 27's gthread (pyproject pins gunicorn>=27,<28).
"""

from __future__ import annotations

import errno
import json
import selectors
import socket
import struct
import time
from collections import deque
from functools import partial
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

REQUEST_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 30.0
MAX_UNSENT_BYTES = 64 * 1024 * 1024
LINGER_S = 2.0
MAX_LINGER_DRAIN = 64 * 1024
MAX_LINGERING = 1000
MAX_HEAD_BYTES = 64 * 1024
DEFAULT_MAX_BODY = 1024 * 1024
READ_CHUNK = 64 * 1024


class RequestBuffer:
    """The bytes of one HTTP/1.x request as they arrive; says whether the request is complete."""

    INCOMPLETE, COMPLETE, HEAD_TOO_LARGE, BODY_TOO_LARGE = "incomplete", "complete", "head", "body"

    def __init__(self, initial: bytes, max_body: int):
        self.data = bytearray(initial)
        self.max_body = max_body
        self.head_end = -1
        self.content_length: int | None = None
        self.chunked = False
        self.expects_continue = False
        self.continue_sent = False

    def feed(self, chunk: bytes) -> str:
        self.data += chunk
        return self.state()

    def state(self) -> str:
        if self.head_end < 0:
            end = self.data.find(b"\r\n\r\n")
            if end < 0:
                return self.HEAD_TOO_LARGE if len(self.data) > MAX_HEAD_BYTES else self.INCOMPLETE
            self.head_end = end + 4
            if self.head_end > MAX_HEAD_BYTES:
                return self.HEAD_TOO_LARGE
            self._read_head(bytes(self.data[:end]))
        body = len(self.data) - self.head_end
        if self.chunked:
            return self._chunked_state()
        if self.content_length is None:
            return self.COMPLETE
        if self.content_length > self.max_body:
            return self.BODY_TOO_LARGE
        return self.COMPLETE if body >= self.content_length else self.INCOMPLETE

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        http11 = lines[0].rstrip().endswith(b"HTTP/1.1")
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"transfer-encoding":
                self.chunked = value.split(b",")[-1].strip() == b"chunked"
            elif name == b"content-length" and value.isdigit():
                self.content_length = int(value)
            elif name == b"expect" and value == b"100-continue" and http11:
                self.expects_continue = True
        # gunicorn's parser refuses ambiguous framing (both headers, bad values) once it gets the bytes

    def _chunked_state(self) -> str:
        pos, total = self.head_end, 0
        while True:
            line_end = self.data.find(b"\r\n", pos)
            if line_end < 0:
                return self.INCOMPLETE
            size_text = bytes(self.data[pos:line_end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                return self.COMPLETE  # malformed: gunicorn's parser answers it at once
            if size == 0:  # the last chunk; then trailer lines up to an empty line
                if self.data.startswith(b"\r\n", line_end + 2) or self.data.find(b"\r\n\r\n", line_end) >= 0:
                    return self.COMPLETE
                return self.INCOMPLETE
            total += size
            if total > self.max_body:
                return self.BODY_TOO_LARGE
            pos = line_end + 2 + size + 2
            if pos > len(self.data):
                return self.INCOMPLETE

    def without_expect(self) -> bytes:
        """The bytes with the Expect header removed (its 100 Continue was already sent from here)."""
        head = bytes(self.data[: self.head_end]).split(b"\r\n")
        kept = [line for line in head if line.partition(b":")[0].strip().lower() != b"expect"]
        return b"\r\n".join(kept) + bytes(self.data[self.head_end:])


class Outbox:
    """The socket a thread writes an answer to (gunicorn's Response calls `sendall`): what the socket takes
    at once is sent, the rest is kept, in order, for the event loop. Everything else goes to the socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.unsent: deque[memoryview] = deque()
        self.size = 0  # bytes in `unsent`

    def sendall(self, data: bytes) -> None:
        view = memoryview(bytes(data) if not isinstance(data, bytes) else data)
        if not self.unsent:
            view = self._send_now(view)
        if view:
            self.unsent.append(view)
            self.size += len(view)

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> None:
        """gunicorn's sendfile path (static files): read into the outbox, the socket may not be waited on."""
        file.seek(offset)
        left = count
        while left is None or left > 0:
            chunk = file.read(READ_CHUNK if left is None else min(READ_CHUNK, left))
            if not chunk:
                break
            self.sendall(chunk)
            if left is not None:
                left -= len(chunk)

    def flush(self) -> int:
        """Send what the socket takes now; the number of bytes sent (OSError: the client is gone)."""
        before = self.size
        while self.unsent:
            view = self.unsent[0]
            rest = self._send_now(view)
            self.size -= len(view) - len(rest)
            if rest:
                self.unsent[0] = rest
                break
            self.unsent.popleft()
        return before - self.size

    def _send_now(self, view: memoryview) -> memoryview:
        while view:
            try:
                sent = self.sock.send(view, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            view = view[sent:]
        return view

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class BufferingThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread that reads each request in full before a thread takes it, and writes what the client
    does not take at once from its event loop (module docstring)."""

    request_timeout_s = REQUEST_TIMEOUT_S
    send_timeout_s = SEND_TIMEOUT_S
    max_unsent_bytes = MAX_UNSENT_BYTES

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        from gravimeta.store.database import disabled_for_test

        self.reading: dict[Any, float] = {}  # connection -> deadline, in deadline order
        self.lingering: dict[socket.socket, list[float]] = {}  # closing socket -> [deadline, drained]
        self.writing: dict[Any, float] = {}  # connection -> deadline, in deadline order
        self.unsent_bytes = 0  # of the connections in `writing`
        # TEST-ONLY switch: the thread writes the whole answer on a blocking socket, as gthread does
        # (tests/ops/test_slow_readers.py fails with it)
        self.buffer_answers = not self.cfg.is_ssl and not disabled_for_test("response_buffering")

    # ------------------------------------------------------------------ gthread's hand-over points

    def enqueue_req(self, conn: Any) -> None:
        """Every request goes through the buffer first; a thread gets it in _hand_over."""
        leftover = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        conn.gm_buffer = RequestBuffer(leftover, self._max_body())
        conn.sock.setblocking(False)
        self.reading[conn] = time.monotonic() + self.request_timeout_s
        if leftover and self._settle(conn, conn.gm_buffer.state(), registered=False):
            return
        # Usually the bytes are there already (a kept-alive connection the poller just woke, a client
        # that sent its request with the connect): read them now rather than after one more select.
        if not self._read(conn, registered=False):
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))

    def handle(self, conn: Any) -> Any:
        """Runs in a pool thread: give the parser the bytes the event loop read, then let gthread go on."""
        data = conn.__dict__.pop("gm_request", None)
        conn.data_ready = True  # never wait for more data here: the request is complete
        if data:
            try:
                conn.sock.setblocking(True)
                conn.init()
            except OSError:
                return False
            conn.parser.unreader.unread(data)
        return super().handle(conn)

    def handle_request(self, req: Any, conn: Any) -> Any:
        """Runs in a pool thread: the answer goes to an Outbox, what the socket did not take waits there."""
        if not self.buffer_answers:
            return super().handle_request(req, conn)
        sock = conn.sock
        conn.sock = outbox = Outbox(sock)
        try:
            return super().handle_request(req, conn)
        finally:
            conn.sock = sock
            if outbox.unsent:
                conn.gm_outbox = outbox

    def finish_request(self, conn: Any, fs: Any) -> None:
        """On the event loop, once a thread is done: what its answer left unsent is written first
        (_on_writable); then a connection that is not kept alive is closed without waiting (_linger),
        the rest goes gthread's way."""
        outbox = conn.__dict__.pop("gm_outbox", None)
        if outbox is not None and not fs.cancelled() and fs.exception() is None:
            self._write_later(conn, fs, outbox)
            return
        self._answered(conn, fs)

    def _answered(self, conn: Any, fs: Any) -> None:
        try:
            result = fs.result() if not fs.cancelled() else False
        except Exception:
            result = None  # gthread closes it at once
        if result is False:
            self.nr_conns -= 1
            self._linger(conn.sock)
            return
        super().finish_request(conn, fs)

    def murder_pending(self) -> None:
        """Also close requests that did not arrive in time (and, when stopping, connections that sent nothing)."""
        super().murder_pending()
        now = time.monotonic()
        for conn, deadline in list(self.reading.items()):
            idle_at_stop = not self.alive and not conn.gm_buffer.data
            if deadline > now and not idle_at_stop:
                if self.alive:
                    break  # in deadline order: the rest are later
                continue
            started = bool(conn.gm_buffer.data)
            self._drop(conn, _simple(408, "Request Timeout", "The request did not arrive in time") if started else None)
        for sock, (deadline, _drained) in list(self.lingering.items()):
            if deadline > now and self.alive:
                break  # one LINGER_S for all: insertion order is deadline order
            self._end_linger(sock)
        for conn, deadline in list(self.writing.items()):
            if deadline > now:
                break  # in deadline order (a connection that takes bytes moves to the end)
            self._reset(conn)

    # ------------------------------------------------------------------ writing on the loop

    def _write_later(self, conn: Any, fs: Any, outbox: Outbox) -> None:
        conn.gm_outbox, conn.gm_future = outbox, fs
        self.writing[conn] = time.monotonic() + self.send_timeout_s
        self.unsent_bytes += outbox.size
        try:
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._on_writable, conn))
        except (OSError, ValueError, KeyError):  # closed by the thread (an error after the headers)
            self._reset(conn)
            return
        # too much unsent: reset the connections that took nothing the longest (first in `writing`)
        while self.unsent_bytes > self.max_unsent_bytes and len(self.writing) > 1:
            self._reset(next(iter(self.writing)))

    def _on_writable(self, conn: Any, _sock: Any) -> None:
        outbox: Outbox = conn.gm_outbox
        try:
            sent = outbox.flush()
        except OSError:
            self._reset(conn)
            return
        self.unsent_bytes -= sent
        if outbox.unsent:
            if sent:  # it reads: a new deadline, last in order
                del self.writing[conn]
                self.writing[conn] = time.monotonic() + self.send_timeout_s
            return
        del self.writing[conn]
        self.poller.unregister(conn.sock)
        fs = conn.gm_future
        del conn.gm_outbox, conn.gm_future
        self._answered(conn, fs)

    def _reset(self, conn: Any) -> None:
        """Drop a connection whose answer is not written: reset, so that the kernel drops what it holds too."""
        del self.writing[conn]
        outbox = conn.__dict__.pop("gm_outbox", None)
        conn.__dict__.pop("gm_future", None)
        if outbox is not None:
            self.unsent_bytes -= outbox.size
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.nr_conns -= 1
        conn.close()

    # ------------------------------------------------------------------ closing on the loop

    def _linger(self, sock: socket.socket) -> None:
        """Close like RFC 9112 section 9.6 without waiting on the loop: shut down our side now, drain
        what the client still sends as it arrives, close when it closes or after LINGER_S."""
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self.lingering) >= MAX_LINGERING:
            sock.close()
            return
        try:
            sock.setblocking(False)
            self.poller.register(sock, selectors.EVENT_READ, partial(self._on_linger_readable, sock))
        except (OSError, ValueError, KeyError):
            sock.close()
            return
        self.lingering[sock] = [time.monotonic() + LINGER_S, 0]

    def _on_linger_readable(self, sock: socket.socket, _fileobj: Any) -> None:
        state = self.lingering.get(sock)
        if state is None:
            return
        try:
            while state[1] < MAX_LINGER_DRAIN:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                state[1] += len(chunk)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        self._end_linger(sock)

    def _end_linger(self, sock: socket.socket) -> None:
        self.lingering.pop(sock, None)
        try:
            self.poller.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            sock.close()
        except OSError:
            pass

    # ------------------------------------------------------------------ the event loop's side

    def _on_readable(self, conn: Any, _sock: Any) -> None:
        self._read(conn, registered=True)

    def _read(self, conn: Any, registered: bool) -> bool:
        """Read what has arrived; True when the connection left the event loop (see _settle)."""
        try:
            chunk = conn.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self._drop(conn)
            return True
        if not chunk:  # the client went away before its request was complete
            self._drop(conn)
            return True
        return self._settle(conn, conn.gm_buffer.feed(chunk), registered=registered)

    def _settle(self, conn: Any, state: str, registered: bool) -> bool:
        """Act on the buffer's state: True when the connection left the event loop (handed to a thread,
        or answered and closed), False when more bytes are needed."""
        buffer: RequestBuffer = conn.gm_buffer
        if state == RequestBuffer.INCOMPLETE:
            if buffer.expects_continue and not buffer.continue_sent:
                buffer.continue_sent = True
                _send_quietly(conn.sock, b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        del self.reading[conn]
        if registered:  # before a thread may close the socket
            self.poller.unregister(conn.sock)
        if state == RequestBuffer.COMPLETE:
            conn.gm_request = buffer.without_expect() if buffer.continue_sent else bytes(buffer.data)
            del conn.gm_buffer
            ThreadWorker.enqueue_req(self, conn)
        elif state == RequestBuffer.HEAD_TOO_LARGE:
            self._close(conn, _simple(431, "Request Header Fields Too Large", "The request headers are too large"))
        else:
            self._close(conn, _error_413(self._max_body()))
        return True

    def _drop(self, conn: Any, answer: bytes | None = None) -> None:
        self.reading.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        self._close(conn, answer)

    def _close(self, conn: Any, answer: bytes | None) -> None:
        if answer:
            _send_quietly(conn.sock, answer)
        self.nr_conns -= 1
        conn.close()

    def _max_body(self) -> int:
        config = getattr(self.wsgi, "config", None) or {}
        return int(config.get("MAX_CONTENT_LENGTH") or DEFAULT_MAX_BODY)


def configured(request_timeout_s: float, send_timeout_s: float = SEND_TIMEOUT_S,
               max_unsent_bytes: int = MAX_UNSENT_BYTES) -> type[BufferingThreadWorker]:
    """The worker class with its limits (gunicorn takes a class as worker_class)."""
    return type("BufferingThreadWorker", (BufferingThreadWorker,), {
        "request_timeout_s": request_timeout_s, "send_timeout_s": send_timeout_s,
        "max_unsent_bytes": max_unsent_bytes})


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    """Best effort on a non-blocking socket: a small answer fits the send buffer; a client that does
    not read it loses it."""
    try:
        sock.send(data)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
            raise


def _simple(status: int, reason: str, message: str) -> bytes:
    return _response(status, reason, {"code": 1001, "type": "IllegalArgumentException", "message": message})


def _error_413(limit: int) -> bytes:
    # the same body the app's own 413 handler gives (gravimeta/api/errors.py)
    return _response(413, "Request Entity Too Large", {
        "code": 1001, "type": "IllegalArgumentException",
        "message": f"The request body is larger than the limit of {limit} bytes"})


def _response(status: int, reason: str, body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            f"Connection: close\r\n\r\n").encode() + payload
