"""The test side of gravimeta/failpoints.py: arm a named point in other processes, wait until one of
them reaches it, let it go on.

    fp = Failpoints(tmp_path / "fp")            # give fp.env() to the processes you start
    fp.arm("renew.before_commit", tag="h")      # pause the process tagged "h" there
    hit = fp.wait_reached("renew.before_commit", tag="h")
    ...                                         # drive the other process through its steps
    fp.resume(hit)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gravimeta.failpoints import ENV_DIR, ENV_TAG, FAILPOINTS


@dataclass(frozen=True)
class Reached:
    """A process paused at a failpoint: its pid and the context the hit reported."""

    name: str
    tag: str
    pid: int
    context: dict[str, str]


class Failpoints:
    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def env(self, tag: str = "") -> dict[str, str]:
        """Environment variables that switch failpoints on in a process (tagged `tag`)."""
        return {ENV_DIR: str(self.dir), ENV_TAG: tag}

    def arm(self, name: str, action: str = "pause", tag: str = "", once: bool = True, scope: str = "") -> None:
        """Arm `name` for processes tagged `tag` (every process when empty). `once`: only the first hit acts.
        `scope`: only hits whose context's scope path starts with it act (and take a `once` arming)."""
        if name not in FAILPOINTS:
            raise KeyError(f"unknown failpoint {name!r}")
        if any(c.isspace() for c in scope):
            raise ValueError(f"a scope prefix has no whitespace: {scope!r}")
        target = self.dir / (f"{name}@{tag}" if tag else name)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(action + ("\nonce" if once else "") + (f"\nscope={scope}" if scope else "") + "\n")
        tmp.replace(target)

    def disarm(self, name: str, tag: str = "") -> None:
        """Remove the arming (and release every process paused on it without `once`)."""
        (self.dir / (f"{name}@{tag}" if tag else name)).unlink(missing_ok=True)

    def wait_reached(self, name: str, tag: str = "", timeout: float = 30.0) -> Reached:
        """Block until a process tagged `tag` (any process when empty) pauses at `name`; AssertionError
        after `timeout`."""
        pattern = f"{name}@{tag}.*.reached" if tag else f"{name}@*.reached"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for path in sorted(self.dir.glob(pattern)):
                try:
                    context = json.loads(path.read_text())
                except (FileNotFoundError, json.JSONDecodeError):
                    continue
                pid, found_tag = int(context.pop("pid")), context.pop("tag")
                return Reached(name, found_tag, pid, context)
            time.sleep(0.005)
        raise AssertionError(f"no process reached failpoint {name} (tag {tag!r}) within {timeout}s")

    def notes(self, name: str, tag: str) -> list[dict[str, Any]]:
        """What the processes tagged `tag` noted at `name` (armed with action `note`), oldest first: each
        hit's context, with its pid and monotonic time ("at")."""
        path = self.dir / f"{name}@{tag}.notes"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def is_paused(self, reached: Reached) -> bool:
        return (self.dir / f"{reached.name}@{reached.tag}.{reached.pid}.reached").exists()

    def resume(self, reached: Reached) -> None:
        """Let a paused process go on."""
        (self.dir / f"{reached.name}@{reached.tag}.{reached.pid}.resume").touch()

    def clear(self) -> None:
        """Disarm everything and release every paused process (end of a test)."""
        for path in self.dir.iterdir():
            if not path.name.endswith((".reached", ".notes")):
                path.unlink(missing_ok=True)
        for path in self.dir.glob("*.reached"):
            path.with_suffix(".resume").touch()
