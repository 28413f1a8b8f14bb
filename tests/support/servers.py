"""Real `gravimeta serve` processes (gunicorn) for conformance and multi-replica tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerProcess:
    """One gunicorn-served replica; `url` is its base URI (what the official client takes)."""

    store_url: str
    port: int = field(default_factory=free_port)
    workers: int = 2
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self) -> ServerProcess:
        """Start the process without waiting for it to answer (start_all starts several side by side)."""
        env = {**os.environ, **self.env}
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gravimeta", "--store-url", self.store_url, "serve",
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"gravimeta serve exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/version", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"gravimeta serve on port {self.port} not ready after {timeout}s")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the whole process group (a paused one too), without waiting for it."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def discard(self) -> None:
        """Kill the process group and reap it: the end of a test whose database is dropped next, where a
        graceful shutdown would only cost time (up to a second per replica: gunicorn's workers notice
        SIGTERM at their next poll)."""
        self.kill()
        if self.process is not None:
            self.process.wait(15)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_all(*servers: ServerProcess, timeout: float = 30.0) -> None:
    """Start the servers side by side and return once each answers: a replica spends most of its
    start importing, so the starts overlap on a machine with a core to spare."""
    try:
        for server in servers:
            server.launch()
        for server in servers:
            server.wait_ready(timeout)
    except BaseException:
        discard(*servers)
        raise


def discard(*servers: ServerProcess) -> None:
    """Kill every server's process group first, then reap them (ServerProcess.discard)."""
    for server in servers:
        server.kill()
    for server in servers:
        server.discard()
