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

    def load(self) -> Any:
        from gravimeta.app import create_app

        return create_app(self.settings)
