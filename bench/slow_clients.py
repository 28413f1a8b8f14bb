"""Slow and idle clients: how long a normal request waits while 201 hostile connections are open
(67 idle, 67 stopped inside their headers, 67 inside their body), on `gravimeta serve` with the
buffering worker and with plain gthread (the TEST-ONLY switch GRAVIMETA_HA_DISABLE=request_buffering).

    .venv/bin/python bench/slow_clients.py [--quick] [--rounds 2] [--requests 50]

Each round starts one server per variant (2 workers x 4 threads, SQLite), measures `requests` sequential
GET /api/version on fresh connections without and then with the hostile connections open, and prints
p50 / max and how many were not answered within 2 s. docs/operations.md ("Slow and idle clients")
quotes a run.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 20 requests")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args(argv)
    rounds, count = (1, 20) if args.quick else (args.rounds, args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(1, rounds + 1):
            for name, env in VARIANTS.items():
                with fresh_database("sqlite", Path(tmp)) as url:
                    server = ServerProcess(url, workers=2, env=env).start()
                    try:
                        quiet = sample(server.port, count)
                        sockets = []
                        try:
                            for sent in HOSTILE:
                                for _ in range(67):
                                    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                                    sockets.append(sock)
                                    if sent:
                                        sock.sendall(sent)
                            loaded = sample(server.port, count)
                        finally:
                            for sock in sockets:
                                sock.close()
                    finally:
                        server.stop()
                print(f"round {round_no}  {name:<17} quiet: {describe(*quiet)}   with 201 open: {describe(*loaded)}",
                      flush=True)


if __name__ == "__main__":
    main()
