"""Helpers for the API tests: an `Api` wrapper over the Flask test client that creates entities with
unique names, and assertions for Gravitino's success and error envelopes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

ERROR_KEYS = {"code", "type", "message"}  # no "stack": Gravitino leaves out null fields
NO_DISTRIBUTION = {"strategy": "none", "number": 0, "funcArgs": []}
# what the official Python client sends on every request, even with no body
CLIENT_HEADERS = {"Accept": "application/vnd.gravitino.v1+json", "X-Client-Version": "1.3.1"}


def fresh(prefix: str) -> str:
    """A name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class Ref:
    """Where an entity lives: its path levels (metalake, catalog, schema, table)."""

    levels: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.levels[-1]

    @property
    def namespace(self) -> list[str]:
        return list(self.levels[:-1])

    @property
    def path(self) -> str:
        kinds = ("metalakes", "catalogs", "schemas", "tables")
        return "/api/" + "/".join(f"{kinds[i]}/{level}" for i, level in enumerate(self.levels))

    @property
    def parent(self) -> Ref:
        return Ref(self.levels[:-1])

    def child(self, name: str) -> Ref:
        return Ref(self.levels + (name,))

    def sibling(self, name: str) -> Ref:
        return Ref(self.levels[:-1] + (name,))

    def children(self) -> str:
        """The collection path of this entity's children."""
        kinds = ("catalogs", "schemas", "tables")
        return f"{self.path}/{kinds[len(self.levels) - 1]}"


def ok(response: TestResponse) -> dict[str, Any]:
    """Assert a Gravitino success envelope and return its body."""
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.is_json, response.get_data(as_text=True)
    body = response.get_json()
    assert body["code"] == 0, body
    return body


def error(response: TestResponse, status: int, code: int, type_name: str, *, in_message: str = "") -> str:
    """Assert a Gravitino error envelope {code, type, message, stack}; return the message."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.is_json, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == ERROR_KEYS, body
    assert (body["code"], body["type"]) == (code, type_name), body
    assert isinstance(body["message"], str) and body["message"].strip()
    assert in_message in body["message"], body["message"]
    return body["message"]


def bad_request(response: TestResponse, in_message: str = "") -> str:
    return error(response, 400, 1001, "IllegalArgumentException", in_message=in_message)


def column(name: str, type_: Any = "integer", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "comment": None, "nullable": True, "autoIncrement": False, **extra}


class Api:
    """Thin helpers over the test client: create entities, load them, send updates."""

    def __init__(self, client: FlaskClient):
        self.client = client

    # --------------------------------------------------------------- raw requests

    def get(self, path: str, **kw: Any) -> TestResponse:
        return self.client.get(path, headers=CLIENT_HEADERS, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> TestResponse:
        return self.client.post(path, json=body, headers=CLIENT_HEADERS, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> TestResponse:
        return self.client.put(path, json=body, headers=CLIENT_HEADERS, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> TestResponse:
        return self.client.patch(path, json=body, headers=CLIENT_HEADERS, **kw)

    def delete(self, path: str, **kw: Any) -> TestResponse:
        # the Python client sends Content-Type: application/json even on a DELETE without a body
        return self.client.delete(path, headers={**CLIENT_HEADERS, "Content-Type": "application/json"}, **kw)

    def raw(self, method: str, path: str, data: bytes | str, content_type: str = "application/json") -> Any:
        """Send `data` verbatim (for malformed bodies)."""
        headers = {**CLIENT_HEADERS, "Content-Type": content_type}
        return self.client.open(path, method=method, data=data, headers=headers)

    # --------------------------------------------------------------- creating

    def create_metalake(self, name: str | None = None, **body: Any) -> Ref:
        ref = Ref((name or fresh("lake"),))
        ok(self.post("/api/metalakes", {"name": ref.name, **body}))
        return ref

    def create_catalog(self, metalake: Ref, name: str | None = None, **body: Any) -> Ref:
        ref = metalake.child(name or fresh("cat"))
        payload = {"name": ref.name, "type": "relational", "provider": "memory", "comment": None, **body}
        ok(self.post(metalake.children(), payload))
        return ref

    def create_schema(self, catalog: Ref, name: str | None = None, **body: Any) -> Ref:
        ref = catalog.child(name or fresh("sch"))
        ok(self.post(catalog.children(), {"name": ref.name, **body}))
        return ref

    def create_table(self, schema: Ref, name: str | None = None, **body: Any) -> Ref:
        ref = schema.child(name or fresh("tbl"))
        payload = {"name": ref.name, "columns": [column("id"), column("name", "varchar(32)")], **body}
        ok(self.post(schema.children(), payload))
        return ref

    # --------------------------------------------------------------- reading and changing

    def load(self, ref: Ref) -> dict[str, Any]:
        """The entity object (metalake/catalog/schema/table) as the server returns it."""
        key = ("metalake", "catalog", "schema", "table")[len(ref.levels) - 1]
        return ok(self.get(ref.path))[key]

    def alter(self, ref: Ref, *updates: dict[str, Any]) -> TestResponse:
        return self.put(ref.path, {"updates": list(updates)})

    def altered(self, ref: Ref, *updates: dict[str, Any]) -> dict[str, Any]:
        """Alter, assert success, return the entity from the response."""
        key = ("metalake", "catalog", "schema", "table")[len(ref.levels) - 1]
        return ok(self.alter(ref, *updates))[key]

    def names(self, collection: str) -> list[str]:
        return [i["name"] for i in ok(self.get(collection))["identifiers"]]

    def set_in_use(self, ref: Ref, in_use: bool) -> None:
        ok(self.patch(ref.path, {"inUse": in_use}))
