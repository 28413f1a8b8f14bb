"""Prometheus metrics of the HTTP requests a worker answers: a counter by method, endpoint and status,
and a latency histogram by method and endpoint. Labels use the Flask endpoint name (`tables.load`),
never the path, so that names in URLs cannot grow the label set; a request that matches no route is
`unmatched`. Every label is bounded: HTTP methods outside the standard set (anyone can send `FOO /x`)
count as `other`, and status codes are the ones the app answers. An unbounded label would grow every
worker's multiprocess sample file and each scrape with every new value, without limit."""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from prometheus_client import Counter, Histogram

requests_total = Counter(
    "gravimeta_http_requests_total", "HTTP requests answered.", ["method", "endpoint", "status"]
)
request_seconds = Histogram(
    "gravimeta_http_request_duration_seconds", "Time to answer an HTTP request.", ["method", "endpoint"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


#: the methods that keep their own label value; any other counts as `other`
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


def status_label(status: int) -> str:
    return str(status) if 100 <= status <= 599 else "other"


def register_request_metrics(app: Flask) -> None:
    @app.before_request
    def _start_clock() -> None:
        g.metrics_started = time.perf_counter()

    @app.after_request
    def _count(response: Response) -> Response:
        endpoint = request.endpoint or "unmatched"
        method = method_label(request.method)
        requests_total.labels(method, endpoint, status_label(response.status_code)).inc()
        started = g.get("metrics_started")
        if started is not None:
            request_seconds.labels(method, endpoint).observe(time.perf_counter() - started)
        return response
