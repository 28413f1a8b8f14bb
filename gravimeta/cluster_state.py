"""The state of a `gravimeta cluster` run directory (state.json): the store it serves, its lock settings
and every process it started. Apart from the cluster command (gravimeta/cluster.py) because the operator
commands read it too, to find the store a running cluster uses (gravimeta/store_target.py)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Proc:
    name: str
    pid: int
    port: int
    log: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class ClusterState:
    store_url: str
    lock: bool
    backend: str
    workers: int
    sqlite_root: str
    replicas: list[Proc] = field(default_factory=list)
    haproxy: Proc | None = None
    haproxy_stats_port: int | None = None
    #: the replicas' gunicorn graceful timeout: how long `stop` must let them finish in-flight requests
    graceful_timeout_s: int = 30

    def save(self, run_dir: Path) -> None:
        (run_dir / "state.json").write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, run_dir: Path) -> ClusterState | None:
        path = run_dir / "state.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        raw["replicas"] = [Proc(**p) for p in raw["replicas"]]
        raw["haproxy"] = Proc(**raw["haproxy"]) if raw.get("haproxy") else None
        return cls(**raw)
