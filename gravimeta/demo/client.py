"""A small recording REST client for the race demo and the chaos tests (stdlib only, so the demo
runs in the plain gravimeta image)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import quote, urlsplit

from gravimeta.demo.history import History, Op

COLUMNS = [{"name": "id", "type": "integer", "nullable": True}, {"name": "note", "type": "string", "nullable": True}]


class Replica:
    """One replica's base URL (http://host:port)."""

    def __init__(self, url: str, name: str | None = None, timeout: float = 30.0):
        parts = urlsplit(url)
        self.url, self.host, self.port = url.rstrip("/"), parts.hostname or "127.0.0.1", parts.port or 80
        self.name = name or f"{self.host}:{self.port}"
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """One request on a fresh connection (so a failure is never a stale keep-alive connection, and
        no answer means the request's outcome is really unknown); raises OSError/HTTPException then."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/vnd.gravitino.v1+json",
                   "Connection": "close"}
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {"raw": raw[:200].decode(errors="replace")}
        return response.status, payload if isinstance(payload, dict) else {"value": payload}


def catalog_path(metalake: str, catalog: str) -> str:
    return f"/api/metalakes/{quote(metalake, safe='')}/catalogs/{quote(catalog, safe='')}"


class Recorder:
    """Sends the structural operations and records each in a History."""

    def __init__(self, history: History, metalake: str):
        self.history, self.metalake = history, metalake

    def _send(self, replica: Replica, op: Op, method: str, path: str, body: Any = None) -> Op:
        op.replica = replica.name
        try:
            status, payload = replica.request(method, path, body)
        except (OSError, http.client.HTTPException) as exc:
            return self.history.finish(op, None, None, f"{type(exc).__name__}: {exc}")
        return self.history.finish(op, status, payload)

    def create_schema(self, replica: Replica, catalog: str, schema: str) -> Op:
        op = self.history.begin("create_schema", catalog, schema)
        return self._send(replica, op, "POST", f"{catalog_path(self.metalake, catalog)}/schemas",
                          {"name": schema, "comment": None, "properties": {}})

    def drop_schema(self, replica: Replica, catalog: str, schema: str, cascade: bool = True) -> Op:
        op = self.history.begin("drop_schema", catalog, schema, cascade=cascade)
        suffix = "?cascade=true" if cascade else ""
        return self._send(replica, op, "DELETE", f"{catalog_path(self.metalake, catalog)}/schemas/{quote(schema)}{suffix}")

    def create_table(self, replica: Replica, catalog: str, schema: str, table: str) -> Op:
        op = self.history.begin("create_table", catalog, schema, table=table)
        return self._send(replica, op, "POST", f"{catalog_path(self.metalake, catalog)}/schemas/{quote(schema)}/tables",
                          {"name": table, "comment": None, "columns": COLUMNS, "properties": {}})

    def drop_table(self, replica: Replica, catalog: str, schema: str, table: str) -> Op:
        op = self.history.begin("drop_table", catalog, schema, table=table)
        return self._send(replica, op, "DELETE",
                          f"{catalog_path(self.metalake, catalog)}/schemas/{quote(schema)}/tables/{quote(table)}")

    def rename_table(self, replica: Replica, catalog: str, schema: str, table: str,
                     new_schema: str, new_name: str) -> Op:
        op = self.history.begin("rename_table", catalog, schema, table=table, new_schema=new_schema, new_name=new_name)
        update: dict[str, Any] = {"@type": "rename", "newName": new_name}
        if new_schema != schema:
            update["newSchemaName"] = new_schema
        return self._send(replica, op, "PUT",
                          f"{catalog_path(self.metalake, catalog)}/schemas/{quote(schema)}/tables/{quote(table)}",
                          {"updates": [update]})
