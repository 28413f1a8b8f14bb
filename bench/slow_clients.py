"""Slow and idle clients: how long a normal request waits while hostile connections are open, on
`gravimeta serve` with the buffering worker and with the mechanism that stops them switched off.

    .venv/bin/python bench/slow_clients.py [--quick] [--rounds 2] [--requests 50] [--readers]

Default: 201 connections (67 idle, 67 stopped inside their headers, 67 inside their body), against the
buffering worker and plain gthread (the TEST-ONLY switch GRAVIMETA_HA_DISABLE=request_buffering).
--readers: 40 connections that ask for an 8 MB metalake and never read, against the buffering worker
("loop writes") and the same worker writing answers from its threads on blocking sockets ("thread
writes", the TEST-ONLY switch GRAVIMETA_HA_DISABLE=response_buffering); and, as the baseline of what
producing 40 such answers costs, 40 clients that ask for it and do read ("40 that read", buffering
worker). The metalake is made first; the normal requests start 1 s after the 40 requests were sent.

Each round starts one server per variant (2 workers x 4 threads, SQLite), measures `requests` sequential
GET /api/version on fresh connections without and then with the hostile connections open, and prints
p50 / max and how many were not answered within 2 s. docs/operations.md ("Slow and idle clients")
quotes runs.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.databases import fresh_database  # noqa: E402
from tests.support.servers import ServerProcess  # noqa: E402

HOSTILE = (b"", b"POST /api/metalakes HTTP/1.1\r\nHost: x\r\n",
           b"POST /api/metalakes HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{")
VARIANTS = {"buffering worker": {}, "plain gthread": {"GRAVIMETA_HA_DISABLE": "request_buffering"}}
READER_VARIANTS = {"loop writes": {}, "thread writes": {"GRAVIMETA_HA_DISABLE": "response_buffering"},
                   "40 that read": {}}
READERS = 40


def timed_get(port: int, timeout: float = 2.0) -> float | None:
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            while sock.recv(65536):
                pass
    except OSError:
        return None
    return time.monotonic() - started


def sample(port: int, count: int) -> tuple[list[float], int]:
    times = [timed_get(port) for _ in range(count)]
    answered = [t for t in times if t is not None]
    return answered, count - len(answered)


def describe(times: list[float], missed: int) -> str:
    if not times:
        return f"none answered ({missed} missed)"
    return f"p50 {statistics.median(times) * 1000:6.1f} ms  max {max(times) * 1000:7.1f} ms  missed {missed}"


def slow_clients(port: int, read: bool = False) -> list[socket.socket]:
    sockets = []
    for sent in HOSTILE:
        for _ in range(67):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sockets.append(sock)
            if sent:
                sock.sendall(sent)
    return sockets


def slow_readers(port: int, read: bool = False) -> list[socket.socket]:
    """40 connections that ask for the large metalake; `read`: threads read their answers to the end."""
    from tests.ops.test_slow_readers import open_stalled_readers

    sockets = open_stalled_readers(port, "/api/metalakes/large", READERS)
    if read:
        for sock in sockets:
            threading.Thread(target=drain, args=(sock,), daemon=True).start()
    time.sleep(1.0)
    return sockets


def drain(sock: socket.socket) -> None:
    try:
        while sock.recv(1 << 20):
            pass
    except OSError:
        pass  # closed by main() when the round ends (the answer is kept alive, never ends by itself)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 20 requests")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--readers", action="store_true", help="40 clients that never read an 8 MB answer")
    args = parser.parse_args(argv)
    rounds, count = (1, 20) if args.quick else (args.rounds, args.requests)
    variants, attack, label = ((READER_VARIANTS, slow_readers, f"with the {READERS} open") if args.readers
                               else (VARIANTS, slow_clients, "with 201 open"))
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(1, rounds + 1):
            for name, env in variants.items():
                with fresh_database("sqlite", Path(tmp)) as url:
                    server = ServerProcess(url, workers=2, env=env).start()
                    try:
                        if args.readers:
                            from tests.ops.test_slow_readers import make_large_metalake

                            make_large_metalake(server.url, "large")
                        quiet = sample(server.port, count)
                        sockets = []
                        try:
                            sockets = attack(server.port, read=True) if name == "40 that read" \
                                else attack(server.port)
                            loaded = sample(server.port, count)
                        finally:
                            for sock in sockets:
                                sock.close()
                    finally:
                        server.stop()
                print(f"round {round_no}  {name:<17} quiet: {describe(*quiet)}   {label}: {describe(*loaded)}",
                      flush=True)


if __name__ == "__main__":
    main()
