"""The Hive connector (`provider: hive`): a client of the Hive-metastore-like stub service
(connectors/hive_stub, `gravimeta hive-stub serve`), an external system with its own storage.

Calls are idempotent so that a dispatcher repairing an interrupted operation can repeat them:
creating an object that already exists with the same definition succeeds, dropping a missing object
returns False, and repeating a rename that already happened succeeds. A call the metastore never
answered (refused, reset, timed out) raises ConnectionFailed and says that the change may or may not
have been applied.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import quote, urlsplit

from connectors.base import CatalogContext, Connector, PropertySpec
from gravimeta import errors
from gravimeta.entities import Schema, Table

DEFAULT_TIMEOUT_MS = 10_000


def table_json(table: Table) -> dict[str, Any]:
    """The definition the metastore keeps: everything but gravimeta's audit and version."""
    return {
        "name": table.name,
        "comment": table.comment,
        "columns": [
            {"name": c.name, "type": c.type, "comment": c.comment, "nullable": c.nullable,
             "autoIncrement": c.auto_increment, "defaultValue": c.default_value}
            for c in table.columns
        ],
        "properties": dict(table.properties),
        "partitioning": table.partitioning,
        "distribution": table.distribution,
        "sortOrders": table.sort_orders,
        "indexes": table.indexes,
    }


def schema_json(schema: Schema) -> dict[str, Any]:
    return {"name": schema.name, "comment": schema.comment, "properties": dict(schema.properties)}


def parse_uris(value: str) -> list[tuple[str, int]]:
    """`metastore.uris`: comma-separated http://host:port endpoints, tried in order."""
    endpoints = []
    for raw in (v.strip() for v in value.split(",")):
        parts = urlsplit(raw)
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
            raise errors.IllegalArgument(
                f"metastore.uris entry {raw!r} must look like http://host:port (the hive provider talks to "
                "the gravimeta hive-stub metastore over HTTP)"
            )
        try:
            port = parts.port or 80
        except ValueError:
            raise errors.IllegalArgument(f"metastore.uris entry {raw!r} has a bad port") from None
        endpoints.append((parts.hostname, port))
    return endpoints


class HiveConnector(Connector):
    property_specs = (
        PropertySpec("metastore.uris", required=True, description="http://host:port[,http://host:port...]"),
        PropertySpec("client.timeout-ms", description=f"per-call socket timeout (default {DEFAULT_TIMEOUT_MS})"),
    )
    supports_purge = True

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.validate_properties(context.properties)
        self.endpoints = parse_uris(context.properties["metastore.uris"])
        self.timeout = int(context.properties.get("client.timeout-ms", DEFAULT_TIMEOUT_MS)) / 1000

    @classmethod
    def validate_properties(cls, properties: dict[str, str]) -> None:
        super().validate_properties(properties)
        parse_uris(properties["metastore.uris"])
        timeout = properties.get("client.timeout-ms")
        if timeout is not None and (not timeout.isdigit() or not 0 < int(timeout) <= 600_000):
            raise errors.IllegalArgument("Catalog property 'client.timeout-ms' must be an integer from 1 to 600000")

    # ---------------------------------------------------------------- transport

    def _call(self, op: str, method: str, path: list[str], body: Any = None, query: str = "") -> tuple[int, Any]:
        """One HTTP call; returns (status, JSON) for answers below 500 and raises otherwise."""
        url = "/" + "/".join(quote(p, safe="") for p in path) + (f"?{query}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        refused: list[str] = []
        for host, port in self.endpoints:
            where = f"http://{host}:{port}"
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
            try:
                conn.request(method, url, body=data, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                status, raw = response.status, response.read()
            except ConnectionRefusedError as exc:
                refused.append(f"{where}: {exc.strerror or exc}")
                continue  # nothing was sent; the next endpoint may be up
            except TimeoutError as exc:
                raise errors.ConnectionFailed(
                    f"Hive metastore at {where} did not answer {op} within {self.timeout:g}s; "
                    "the change may or may not have been applied"
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                raise errors.ConnectionFailed(
                    f"Hive metastore at {where} dropped the connection during {op} ({exc.__class__.__name__}: "
                    f"{exc}); the change may or may not have been applied"
                ) from exc
            finally:
                conn.close()
            payload = _decode(raw)
            if status >= 500:
                message = payload.get("message", "") if isinstance(payload, dict) else ""
                raise errors.GravitinoError(f"Hive metastore at {where} failed {op} with HTTP {status}: {message}")
            return status, payload
        raise errors.ConnectionFailed(f"Cannot connect to the Hive metastore ({'; '.join(refused)})")

    def test_connection(self) -> None:
        status, _ = self._call("testConnection", "GET", ["health"])
        if status != 200:
            raise errors.ConnectionFailed(f"Hive metastore health check answered HTTP {status}")

    # ---------------------------------------------------------------- schemas

    def create_schema(self, schema: Schema) -> None:
        wanted = schema_json(schema)
        status, payload = self._call("create schema", "POST", ["databases"], wanted)
        if status == 409:
            existing = self._get("get schema", ["databases", schema.name])
            tables = self.list_tables(schema.name) if existing == wanted else ["?"]
            if existing != wanted or tables:
                raise errors.SchemaAlreadyExists(f"Schema {schema.name} already exists in the Hive metastore")
            return
        _expect(status, payload, "create schema")

    def drop_schema(self, name: str, cascade: bool) -> bool:
        status, payload = self._call(
            "drop schema", "DELETE", ["databases", name], query=f"cascade={'true' if cascade else 'false'}"
        )
        if status == 404:
            return False
        if status == 409:
            raise errors.NonEmptySchema(f"Schema {name} is not empty in the Hive metastore: {payload.get('message')}")
        _expect(status, payload, "drop schema")
        return True

    def list_schemas(self) -> list[str]:
        return list(self._get("list schemas", ["databases"])["databases"])

    # ---------------------------------------------------------------- tables

    def list_tables(self, schema: str) -> list[str]:
        return list(self._get("list tables", ["databases", schema, "tables"])["tables"])

    def create_table(self, schema: str, table: Table) -> None:
        wanted = table_json(table)
        status, payload = self._call("create table", "POST", ["databases", schema, "tables"], wanted)
        if status == 409:
            if self._get("get table", ["databases", schema, "tables", table.name]) != wanted:
                raise errors.TableAlreadyExists(f"Table {schema}.{table.name} already exists in the Hive metastore")
            return
        _expect(status, payload, "create table")

    def alter_table(self, schema: str, before: Table, after: Table) -> None:
        status, payload = self._call(
            "alter table", "PUT", ["databases", schema, "tables", after.name], table_json(after)
        )
        _expect(status, payload, "alter table")

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str) -> None:
        status, payload = self._call(
            "rename table", "POST", ["databases", schema, "tables", name, "rename"],
            {"database": new_schema, "name": new_name},
        )
        if status == 404 and payload.get("error") == "NoSuchTable":
            # already renamed by an earlier attempt whose answer was lost?
            probe, _ = self._call("get table", "GET", ["databases", new_schema, "tables", new_name])
            if probe == 200:
                return
        if status == 409:
            raise errors.TableAlreadyExists(f"Table {new_schema}.{new_name} already exists in the Hive metastore")
        _expect(status, payload, "rename table")

    def drop_table(self, schema: str, name: str) -> bool:
        status, payload = self._call("drop table", "DELETE", ["databases", schema, "tables", name])
        if status == 404:
            return False
        _expect(status, payload, "drop table")
        return True

    def purge_table(self, schema: str, name: str) -> bool:
        """The stub keeps no data files, so purge is drop."""
        return self.drop_table(schema, name)

    def _get(self, op: str, path: list[str]) -> Any:
        status, payload = self._call(op, "GET", path)
        _expect(status, payload, op)
        return payload


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {"message": raw[:200].decode("utf-8", "replace")}


def _expect(status: int, payload: Any, op: str) -> None:
    """Turn a metastore error answer into the matching gravimeta error."""
    if 200 <= status < 300:
        return
    error = payload.get("error", "") if isinstance(payload, dict) else ""
    message = f"Hive metastore rejected {op}: {payload.get('message', '') if isinstance(payload, dict) else payload}"
    if error == "NoSuchDatabase":
        raise errors.NoSuchSchema(message)
    if error == "NoSuchTable":
        raise errors.NoSuchTable(message)
    if error == "DatabaseAlreadyExists":
        raise errors.SchemaAlreadyExists(message)
    if error == "TableAlreadyExists":
        raise errors.TableAlreadyExists(message)
    if error == "DatabaseNotEmpty":
        raise errors.NonEmptySchema(message)
    if status == 400:
        raise errors.IllegalArgument(message)
    raise errors.GravitinoError(f"{message} (HTTP {status})")
