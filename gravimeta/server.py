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
        self.cfg.set("worker_exit", _release_worker)

    def load(self) -> Any:
        from gravimeta.app import create_app

        return create_app(self.settings)


def _release_worker(_server: Any, worker: Any) -> None:
    """gunicorn worker_exit hook, run in the worker after its in-flight requests ended (SIGTERM waits up
    to graceful_timeout; each structural operation releases its claim in the coordinator's `finally`):
    stop the journal's background repair and the heartbeat thread, remove this process's gm_node row,
    close the pool."""
    services = getattr(getattr(worker, "wsgi", None), "extensions", {}).get("gravimeta")
    background = getattr(services, "background_repair", None)
    if background is not None:
        background.stop()
    runtime = getattr(getattr(services, "coordinator", None), "runtime", None)
    if services is None or runtime is None:
        return
    runtime.heartbeat.stop()
    try:
        runtime.registry.unregister()
    except Exception:  # the database may be gone; the row then ages out of the live window
        worker.log.exception("could not remove this worker's node row")
    services.store.engine.dispose()


def _forget_worker_metrics(_server: Any, worker: Any) -> None:
    """gunicorn child_exit hook: drop a dead worker's live gauges from the multiprocess metrics."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
