"""The Hive-like stub as a real subprocess for tests: loopback only, bounded waits, killed on stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class StubProcess:
    data_dir: Path
    port: int = 0
    #: start with fault injection on (`--test-mode`); False: as an operator would run it
    test_mode: bool = True
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> StubProcess:
        """Start (or restart, on the same port and data) and wait until /health answers."""
        ready = self.data_dir / "ready-port"
        ready.unlink(missing_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gravimeta", "hive-stub", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--data", str(self.data_dir), "--ready-file", str(ready)] + (["--test-mode"] if self.test_mode else []),
            stdout=open(self.data_dir / "stub.log", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"hive stub exited with {self.process.returncode}; see {self.data_dir}/stub.log")
            if ready.exists():
                self.port = int(ready.read_text())
                if self.healthy():
                    return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"hive stub not ready after {timeout}s")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_exit(self, timeout: float = 10.0) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def restart(self) -> StubProcess:
        self.stop()
        return self.start()

    # ---------------------------------------------------------------- fault control

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.uri}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def fault(self, kind: str, **body: Any) -> Any:
        return self._request("PUT", f"/_faults/{kind}", body)

    def clear_faults(self) -> Any:
        return self._request("DELETE", "/_faults")

    def release(self) -> Any:
        return self._request("POST", "/_faults/release")

    def fault_state(self) -> Any:
        return self._request("GET", "/_faults")

    def wait_hung(self, count: int = 1, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.fault_state()["hung"] >= count:
                return
            time.sleep(0.02)
        raise TimeoutError(f"no call hung within {timeout}s")

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no metastore call is hung or in flight (a released call has finished its write)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.fault_state()
            if not state["hung"] and not state["in_flight"]:
                return
            time.sleep(0.02)
        raise TimeoutError(f"metastore calls still running after {timeout}s")

    def raw(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """A plain call to the metastore API, for checking what it really holds."""
        try:
            return 200, self._request(method, path, body)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")
