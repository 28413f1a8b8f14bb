"""/metrics stays small whatever clients send: every label of the request metrics is bounded. Made-up
HTTP methods count as `other`, paths that match no route as `unmatched`, a matched path by its route
rule's endpoint, never the path itself. Before the labels were bounded, 3,000 requests with made-up
methods took /metrics from a few KB to megabytes."""

from __future__ import annotations

import uuid

from prometheus_client.parser import text_string_to_metric_families

REQUEST_METRICS = ("gravimeta_http_requests_total", "gravimeta_http_request_duration_seconds")


def request_label_values(text: str) -> dict[str, set[str]]:
    values: dict[str, set[str]] = {"method": set(), "endpoint": set()}
    for family in text_string_to_metric_families(text):
        if family.name.startswith(REQUEST_METRICS):
            for sample in family.samples:
                for label in values:
                    if label in sample.labels:
                        values[label].add(sample.labels[label])
    return values


def test_made_up_methods_and_paths_do_not_grow_metrics(make_app):
    client = make_app().test_client()
    client.get("/api/version")
    before = client.get("/metrics")
    assert before.status_code == 200
    for i in range(300):
        made_up = f"X{uuid.uuid4().hex[:12].upper()}"
        client.open("/api/version", method=made_up)
        client.open(f"/api/metalakes/m{i}/nothing/{uuid.uuid4().hex}", method=made_up)
        client.get(f"/no/such/route/{uuid.uuid4().hex}")
    after = client.get("/metrics")
    labels = request_label_values(after.get_data(as_text=True))
    assert labels["method"] <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}, labels["method"]
    assert "other" in labels["method"]
    assert "unmatched" in labels["endpoint"]
    assert not any("/" in e for e in labels["endpoint"]), labels["endpoint"]
    # 900 requests with 300 distinct methods and 600 distinct paths: a few new series, not thousands
    assert len(after.data) < len(before.data) + 20_000, (len(before.data), len(after.data))
