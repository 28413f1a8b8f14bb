"""A worker's process gauges are written before anything else it does: under gunicorn (prometheus
multiprocess mode) its first metric write puts every gauge into its sample file at 0, so a scrape made
while it was still starting showed a live worker with 0 bytes resident."""

from __future__ import annotations

import threading

import gravimeta.app as app_module
from gravimeta.config import Settings
from gravimeta.serving import worker_metrics


def test_the_process_figures_are_set_before_the_services_start(monkeypatch, sqlite_url):
    seen: dict[str, float] = {}
    build = app_module.build_services

    def build_and_look(*args, **kwargs):  # the services write the first other metrics (node registry, claims)
        seen["resident"] = worker_metrics.resident_bytes._value.get()
        seen["fds"] = worker_metrics.open_fds._value.get()
        return build(*args, **kwargs)

    monkeypatch.setattr(app_module, "build_services", build_and_look)
    monkeypatch.setattr(worker_metrics, "_refresher", (0, threading.Thread()))  # no refresh thread of its own
    monkeypatch.setattr(threading.Thread, "start", lambda self: None)  # nor any other background thread
    worker_metrics.resident_bytes.set(0)
    worker_metrics.open_fds.set(0)
    app_module.create_app(Settings(store_url=sqlite_url))
    assert seen["resident"] > 1024 * 1024, seen
    assert seen["fds"] >= 3, seen
