"""The envelope as Gravitino's server writes it (checked against its v1.3.0 source and its own server
tests):

- an error body is {code, type, message}: Gravitino's ObjectMapper leaves out null fields, so a body
  without a stack trace has no `stack` key at all (never `"stack": null`, which a client generated from
  Gravitino's spec refuses, its `stack` being an array of strings);
- every answer is `Content-Type: application/json`, whatever the request's Accept: the resources
  declare `@Produces("application/vnd.gravitino.v1+json")`, but every response is built by its
  `Utils` helpers with an explicit `type(MediaType.APPLICATION_JSON)`, which wins, and Gravitino's own
  server tests (TestCatalogOperations) assert APPLICATION_JSON_TYPE for successes and errors alike;
- boolean query parameters that shape an answer (`details`, `fromInclusive`, `toInclusive`) are read
  as JAX-RS `boolean`s: `true` in any case is true, any other value false, never a 400. The drop flags
  (`force`, `cascade`, `purge`) stay strict, unlike Gravitino: a typo there is a 400 that drops nothing
  (tests/api/test_metalakes.py and the others), rather than another kind of drop.
"""

from __future__ import annotations

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
