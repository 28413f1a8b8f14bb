"""Input limits: comment size, property count and sizes (configurable, 400 naming the limit), and the
request size limit (413 with a Gravitino error body, also from a real gunicorn server)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.hardening.conftest import assert_error_body

COLUMNS = [{"name": "id", "type": "integer"}]


@pytest.fixture
def client(make_app):
    client = make_app(max_comment_chars=20, max_properties=3, max_property_key_chars=10,
                      max_property_value_chars=15).test_client()
    assert client.post("/api/metalakes", json={"name": "m"}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs", json={"name": "c", "type": "relational",
                                                          "provider": "memory"}).status_code == 200
    assert client.post("/api/metalakes/m/catalogs/c/schemas", json={"name": "s"}).status_code == 200
    return client


def assert_limit(response, setting: str) -> None:
    assert response.status_code == 400, response.get_json()
    assert_error_body(response.get_json(), 1001)
    assert setting in response.get_json()["message"], response.get_json()["message"]


@pytest.mark.parametrize("path, body", [
    ("/api/metalakes", {"name": "m2"}),
    ("/api/metalakes/m/catalogs", {"name": "c2", "type": "relational", "provider": "memory"}),
    ("/api/metalakes/m/catalogs/c/schemas", {"name": "s2"}),
    ("/api/metalakes/m/catalogs/c/schemas/s/tables", {"name": "t2", "columns": COLUMNS}),
])
def test_every_create_enforces_the_comment_and_property_limits(client, path, body):
    assert_limit(client.post(path, json={**body, "comment": "x" * 21}), "comment-max-chars")
    assert_limit(client.post(path, json={**body, "properties": {f"k{i}": "v" for i in range(4)}}),
                 "properties-max-count")
    assert_limit(client.post(path, json={**body, "properties": {"k" * 11: "v"}}), "property-key-max-chars")
    assert_limit(client.post(path, json={**body, "properties": {"k": "v" * 16}}), "property-value-max-chars")
    ok = client.post(path, json={**body, "comment": "x" * 20, "properties": {"k" * 10: "v" * 15}})
    assert ok.status_code == 200, ok.get_json()


def test_column_comments_and_alters_are_limited_too(client):
    tables = "/api/metalakes/m/catalogs/c/schemas/s/tables"
    assert_limit(client.post(tables, json={"name": "t", "columns": [{**COLUMNS[0], "comment": "x" * 21}]}),
                 "columns[0].comment")
    assert client.post(tables, json={"name": "t", "columns": COLUMNS}).status_code == 200
    updates = [{"@type": "setProperty", "property": f"k{i}", "value": "v"} for i in range(4)]
    assert_limit(client.put(f"{tables}/t", json={"updates": updates}), "properties-max-count")
    assert_limit(client.put(f"{tables}/t", json={"updates": [{"@type": "updateComment", "newComment": "y" * 21}]}),
                 "updates[0].newComment")
    assert_limit(client.put("/api/metalakes/m", json={"updates": [
        {"@type": "setProperty", "property": "k", "value": "v" * 16}]}), "property-value-max-chars")
    assert client.get(f"{tables}/t").get_json()["table"]["properties"] == {}  # nothing half-applied


def test_the_defaults_follow_gravitinos_store_columns(make_app):
    client = make_app().test_client()
    assert client.post("/api/metalakes", json={"name": "a", "comment": "x" * 256}).status_code == 200
    assert_limit(client.post("/api/metalakes", json={"name": "b", "comment": "x" * 257}), "comment-max-chars")


def test_an_oversized_body_is_a_json_413(make_app):
    client = make_app(max_content_length=1000).test_client()
    response = client.post("/api/metalakes", data=json.dumps({"name": "m", "comment": "x" * 2000}),
                           content_type="application/json")
    assert response.status_code == 413
    assert_error_body(response.get_json(), 1001)
    assert "1000 bytes" in response.get_json()["message"]


def test_a_real_server_answers_an_oversized_body_with_a_json_413(start_server):
    server = start_server(env={"GRAVIMETA_MAX_REQUEST_BYTES": "2048"})
    body = json.dumps({"name": "m", "comment": "x" * 5000}).encode()
    request = urllib.request.Request(f"{server.url}/api/metalakes", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)
    assert error.value.code == 413
    assert_error_body(json.loads(error.value.read()), 1001)
