"""Running the app under gunicorn from our own CLI (one process tree, our settings)."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from gravimeta.config import Settings


class GunicornServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with create_app() called in each worker after fork (no preload: no shared pools)."""

    def __init__(self, settings: Settings, options: dict[str, Any]):
        self.settings = settings
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)
        self.cfg.set("child_exit", _forget_worker_metrics)

    def load(self) -> Any:
        from gravimeta.app import create_app

        return create_app(self.settings)


def _forget_worker_metrics(_server: Any, worker: Any) -> None:
    """gunicorn child_exit hook: drop a dead worker's live gauges from the multiprocess metrics."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
