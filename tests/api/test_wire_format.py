"""The envelope as Gravitino's server writes it (checked against its v1.3.0 source and its own server
tests):

- an error body is {code, type, message}: Gravitino's ObjectMapper leaves out null fields, so a body
  without a stack trace has no `stack` key at all (never `"stack": null`, which a client generated from
  Gravitino's spec refuses, its `stack` being an array of strings);
- every answer is `Content-Type: application/json`, whatever the request's Accept: the resources
  declare `@Produces("application/vnd.gravitino.v1+json")`, but every response is built by its
  `Utils` helpers with an explicit `type(MediaType.APPLICATION_JSON)`, which wins, and Gravitino's own
  server tests (TestCatalogOperations) assert APPLICATION_JSON_TYPE for successes and errors alike;
- a request body must be `application/json` or `application/vnd.gravitino.v1+json` (any case, no charset
  or UTF-8): as Gravitino's `@Consumes(application/json)` resources, anything else is a 415, here with a
  Gravitino error body of code 1000 RESTException (what Gravitino's clients make of Jersey's bare 415);
  an Accept naming `application/vnd.gravitino.v2+json` is a 406, as Gravitino's VersioningFilter;
- every answer carries the browser headers of gravimeta/api/browsers.py (CSP, no framing, nosniff, no
  referrer);
- boolean query parameters that shape an answer (`details`, `fromInclusive`, `toInclusive`) are read
  as JAX-RS `boolean`s: `true` in any case is true, any other value false, never a 400. The drop flags
  (`force`, `cascade`, `purge`) stay strict, unlike Gravitino: a typo there is a 400 that drops nothing
  (tests/api/test_metalakes.py and the others), rather than another kind of drop.
"""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import CLIENT_HEADERS, fresh, ok


def test_error_bodies_carry_no_stack_key(api, client, metalake):
    responses = [
        api.get("/api/metalakes/" + fresh("ghost")),  # a domain error
        api.get("/api/nowhere"),  # Flask's 404
        client.patch("/api/version", headers=CLIENT_HEADERS),  # Flask's 405
        api.raw("POST", "/api/metalakes", "{not json"),  # a 400 before any schema
        api.post("/api/metalakes", {"name": metalake.name}),  # 409
    ]
    for response in responses:
        assert response.status_code >= 400
        assert set(response.get_json()) == {"code", "type", "message"}, response.get_json()


def test_a_failed_connection_test_answers_200_with_an_error_body_without_stack(api, metalake):
    response = api.post(f"{metalake.path}/catalogs/testConnection",
                        {"name": "c", "type": "relational", "provider": "no-such-provider"})
    body = response.get_json()
    assert response.status_code == 200 and body["code"] != 0, body
    assert set(body) == {"code", "type", "message"}, body


@pytest.mark.parametrize("accept", ["application/vnd.gravitino.v1+json", "application/json", "*/*"])
def test_every_answer_is_application_json_whatever_the_accept_header(client, metalake, accept):
    for path in (metalake.path, "/api/metalakes/" + fresh("ghost"), "/api/version"):
        response = client.get(path, headers={"Accept": accept})
        assert response.mimetype == "application/json", (path, response.headers)


@pytest.mark.parametrize("value", ["yes", "1", "on", "nonsense", "TRUE ", "t"])
def test_details_other_than_true_is_false_not_an_error(api, metalake, value):
    api.create_catalog(metalake)
    listed = ok(api.get(f"{metalake.path}/catalogs", query_string={"details": value}))
    assert "identifiers" in listed and "catalogs" not in listed  # details=false: names only
    assert "names" in ok(api.get(f"{metalake.path}/tags", query_string={"details": value}))


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "tRuE"])
def test_true_in_any_case_is_true(api, metalake, value):
    api.create_catalog(metalake)
    assert "catalogs" in ok(api.get(f"{metalake.path}/catalogs", query_string={"details": value}))


def test_an_empty_boolean_parameter_takes_its_default(api, metalake):
    assert "identifiers" in ok(api.get(f"{metalake.path}/catalogs?details="))


REFUSED_TYPES = ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=b", "application/xml", "application/jsonx", "text/json",
                 "application/json; charset=iso-8859-1", ""]
READ_TYPES = ["application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8",
              "application/vnd.gravitino.v1+json", "application/vnd.gravitino.v1+json; charset=utf8"]


@pytest.mark.parametrize("content_type", REFUSED_TYPES)
def test_a_body_that_does_not_say_json_is_415_and_changes_nothing(client, metalake, content_type):
    name = fresh("lake")
    headers = {**CLIENT_HEADERS, **({"Content-Type": content_type} if content_type else {})}
    for method, path, body in (("POST", "/api/metalakes", {"name": name}),
                               ("PUT", metalake.path, {"updates": [{"@type": "setProperty", "property": "k",
                                                                    "value": name}]}),
                               ("PATCH", metalake.path, {"inUse": False})):
        response = client.open(path, method=method, data=json.dumps(body), headers=headers)
        assert response.status_code == 415, (method, content_type, response.get_json())
        assert response.get_json() == {"code": 1000, "type": "RESTException",
                                       "message": response.get_json()["message"]}
        assert "application/json" in response.get_json()["message"]
    assert client.get(f"/api/metalakes/{name}").status_code == 404
    loaded = client.get(metalake.path).get_json()["metalake"]
    assert "k" not in loaded["properties"] and loaded["properties"]["in-use"] == "true", loaded


@pytest.mark.parametrize("content_type", READ_TYPES)
def test_json_bodies_are_read_under_json_and_gravitinos_vendor_type(client, content_type):
    name = fresh("lake")
    response = client.post("/api/metalakes", data=json.dumps({"name": name}),
                           headers={**CLIENT_HEADERS, "Content-Type": content_type})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["metalake"]["name"] == name


def test_a_request_without_a_body_may_say_any_content_type(client, metalake):
    """The official client sends Content-Type: application/json on every request; others send none or
    another: without a body there is nothing to refuse."""
    for content_type in ("text/plain", "application/json", None):
        headers = {**CLIENT_HEADERS, **({"Content-Type": content_type} if content_type else {})}
        assert client.get(metalake.path, headers=headers).status_code == 200
    empty = client.post("/api/metalakes", data=b"", headers={**CLIENT_HEADERS, "Content-Type": "text/plain"})
    assert empty.status_code == 400 and "Request body cannot be null" in empty.get_json()["message"]


def test_an_accept_naming_another_api_version_is_406(client, metalake):
    refused = client.get(metalake.path, headers={"Accept": "application/vnd.gravitino.v2+json"})
    assert refused.status_code == 406, refused.get_json()
    assert refused.get_json()["type"] == "RESTException" and "v2" in refused.get_json()["message"]
    for accept in ("application/vnd.gravitino.v1+json", "application/vnd.gravitino.v1+json, */*", "text/html", ""):
        assert client.get(metalake.path, headers={"Accept": accept}).status_code == 200, accept


@pytest.mark.parametrize("path", ["/", "/console/console.js", "/api/version", "/api/metalakes/nowhere_x",
                                  "/api/nowhere"])
def test_every_answer_carries_the_browser_headers(client, path):
    response = client.get(path)
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    policy = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy and "default-src 'none'" in policy
    refused = client.post("/api/metalakes", data="{}", content_type="text/plain")
    assert refused.status_code == 415 and refused.headers["X-Frame-Options"] == "DENY"
