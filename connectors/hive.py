"""The Hive connector (`provider: hive`): a client of the Hive-metastore-like stub service
(connectors/hive_stub, `gravimeta hive-stub serve`), an external system with its own storage.

Calls are idempotent so that a dispatcher repairing an interrupted operation can repeat them:
creating an object that already exists with the same definition succeeds, dropping a missing object
returns False, and repeating a rename that already happened succeeds. A call the metastore never
answered (refused, reset, timed out) raises ConnectionFailed and says that the change may or may not
have been applied.

Fences (connectors/base.py): every request carries the call's fence in headers (connectors/fencing.py);
the stub checks it under its lock, in the same atomic write as the change, and answers 409 StaleFence
for a call whose token it has seen bettered (errors.StaleFence here). Each request's socket timeout is
the client timeout, shortened to what is left of the caller's claim.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
from typing import Any
from urllib.parse import quote, urlsplit

from connectors import metastore_allowlist
from connectors.base import (
    DEFAULT_CALL_WINDOW_S,
    NO_FENCE,
    PARTITIONS_IN_ENGINE,
    CatalogContext,
    Connector,
    Fence,
)
from connectors.hive_replies import NotJson, Reply, describe
from connectors.properties import CatalogProperties, PropertyEntry, java_boolean, java_int, java_long
from gravimeta import errors, failpoints
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
        metastore_allowlist.check(parts.hostname, port)
        endpoints.append((parts.hostname, port))
    return endpoints


def endpoint_places(host: str, port: int) -> set[str]:
    """How one metastore endpoint is named where catalogs are compared (Connector.engine_locations):
    'hive:<host>:<port>' with the host name in lower case, and 'hive:<address>:<port>' for each address
    the name resolves to now (as the connection would: IPv4 in IPv6 as IPv4, an IPv6 address in its short
    form), with every loopback and unspecified address as 'loopback' (a metastore bound to 0.0.0.0 or ::
    answers on all of them). So `localhost`, `LOCALHOST`, `127.0.0.1`, `127.1` and `[::1]` share a place.
    A name that does not resolve has only its own."""
    name = host.strip("[]").lower()
    places = {f"hive:{name}:{port}"}
    if failpoints.disabled_for_test("endpoint_addresses"):  # TEST-ONLY: as written
        return places
    try:
        found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return places
    for *_, sockaddr in found:
        try:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        places.add(f"hive:{'loopback' if address.is_loopback or address.is_unspecified else address}:{port}")
    return places


def _timeout_ms(value: str) -> int:
    timeout = java_int(value)
    if not 0 < timeout <= 600_000:
        raise ValueError("client.timeout-ms must be an integer from 1 to 600000")
    return timeout


class HiveConnector(Connector):
    # Gravitino's HiveCatalogPropertiesMetadata and ClientPropertiesMetadata (the keys gravimeta's stub
    # ignores are checked and stored all the same), and the stub's own client.timeout-ms
    catalog_properties = CatalogProperties((
        PropertyEntry("metastore.uris", "http://host:port[,http://host:port...]", required=True, decode=parse_uris),
        PropertyEntry("client.timeout-ms", f"per-call socket timeout (default {DEFAULT_TIMEOUT_MS})",
                      decode=_timeout_ms),
        PropertyEntry("default.catalog", "the Hive metastore catalog to use", immutable=True),
        PropertyEntry("impersonation-enable", "impersonate the caller", decode=java_boolean),
        PropertyEntry("kerberos.keytab-uri", "the keytab's URI"),
        PropertyEntry("kerberos.principal", "the Kerberos principal"),
        PropertyEntry("kerberos.check-interval-sec", "how often to check the principal", decode=java_int),
        PropertyEntry("kerberos.keytab-fetch-timeout-sec", "timeout to fetch the keytab", decode=java_int),
        PropertyEntry("list-all-tables", "list non-Hive tables too", decode=java_boolean),
        PropertyEntry("client.pool-size", "metastore clients in the pool", decode=java_int),
        PropertyEntry("client.pool-cache.eviction-interval-ms", "client pool eviction interval", decode=java_long),
    ))
    supports_purge = True
    partitions = PARTITIONS_IN_ENGINE  # the metastore keeps them, with Hive's rules (no purge, as in Gravitino)
    checks_fences = True

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.validate_properties(context.properties)
        self.endpoints = parse_uris(context.properties["metastore.uris"])
        self.timeout = int(context.properties.get("client.timeout-ms", DEFAULT_TIMEOUT_MS)) / 1000

    # ---------------------------------------------------------------- transport

    def _call(self, op: str, method: str, path: list[str], body: Any = None, query: str = "",
              fence: Fence = NO_FENCE) -> tuple[int, Reply]:
        """One HTTP call; returns (status, reply) for answers below 500 and raises otherwise (StaleFence
        when the metastore refused the call's fence, ConnectionFailed for a 5xx: the metastore failed)."""
        url = "/" + "/".join(quote(p, safe="") for p in path) + (f"?{query}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", **fence.headers()}
        refused: list[str] = []
        for host, port in self.endpoints:
            where = f"http://{host}:{port}"
            timeout = fence.timeout(self.timeout)
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                conn.request(method, url, body=data, headers=headers)
                response = conn.getresponse()
                status, raw = response.status, response.read()
            except ConnectionRefusedError as exc:
                refused.append(f"{where}: {exc.strerror or exc}")
                continue  # nothing was sent; the next endpoint may be up
            except TimeoutError as exc:
                raise errors.ConnectionFailed(
                    f"Hive metastore at {where} did not answer {op} within {timeout:g}s; "
                    "the change may or may not have been applied"
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                raise errors.ConnectionFailed(
                    f"Hive metastore at {where} dropped the connection during {op} ({exc.__class__.__name__}: "
                    f"{exc}); the change may or may not have been applied"
                ) from exc
            finally:
                conn.close()
            reply = Reply(where, op, _decode(raw))
            if status == 409 and _error_name(reply) == "StaleFence":
                raise errors.StaleFence(f"Hive metastore at {where} refused {op}: {_message(reply)}")
            if status >= 500 or status < 200:
                raise errors.ConnectionFailed(f"Hive metastore at {where} failed {op} with HTTP {status}: {_message(reply)}")
            return status, reply
        raise errors.EngineUnreachable(f"Cannot connect to the Hive metastore ({'; '.join(refused)})")

    def test_connection(self) -> None:
        status, _ = self._call("testConnection", "GET", ["health"])
        if status != 200:
            raise errors.ConnectionFailed(f"Hive metastore health check answered HTTP {status}")

    def engine_locations(self) -> frozenset[str]:
        """Every endpoint by its name and by each address it resolves to (endpoint_places), and the
        metastore's identity once known."""
        return frozenset(place for host, port in self.endpoints for place in endpoint_places(host, port)) \
            | self.identity_locations()

    def engine_identity(self, deadline: float | None = None) -> str | None:
        """`GET /identity` (the hive stub's id, kept with its storage); None when the metastore answers
        404 (one that keeps none: engine_locations alone then say where it is)."""
        if self._known_identity:
            return self._known_identity
        if failpoints.disabled_for_test("engine_identity"):  # TEST-ONLY: none
            return None
        status, reply = self._call("identity", "GET", ["identity"], fence=Fence(deadline=deadline))
        if status == 404:
            return None
        _expect(status, reply)
        identity = reply.obj().get("identity")
        if not isinstance(identity, str) or not identity or len(identity) > 64:
            raise reply.bad(f"an identity must be a non-empty text of at most 64 characters, not {identity!r:.80}")
        return self.remember_identity(identity)

    def fence_barrier(self, fence: Fence) -> None:
        status, reply = self._call("fence", "POST", ["fences"], fence=fence)
        _expect(status, reply)
        reply.obj()

    def call_window_s(self) -> float:
        """A call makes at most three requests, each within the client timeout."""
        return max(DEFAULT_CALL_WINDOW_S, 3 * self.timeout)

    # ---------------------------------------------------------------- schemas

    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None:
        wanted = schema_json(schema)
        status, reply = self._call("create schema", "POST", ["databases"], wanted, fence=fence)
        if status == 409:
            existing = schema_json(self._get("get schema", ["databases", schema.name], fence).schema(schema.name))
            tables = self._get("list tables", ["databases", schema.name, "tables"], fence).names("tables") \
                if existing == wanted else ["?"]
            if existing != wanted or tables:
                raise errors.SchemaAlreadyExists(f"Schema {schema.name} already exists in the Hive metastore")
            return
        _expect(status, reply)
        reply.named(schema.name, "schema")

    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool:
        status, reply = self._call(
            "drop schema", "DELETE", ["databases", name], query=f"cascade={'true' if cascade else 'false'}", fence=fence
        )
        if status == 404 and _error_name(reply) == "NoSuchDatabase":
            return False
        if status == 409 and _error_name(reply) == "DatabaseNotEmpty":
            raise errors.NonEmptySchema(f"Schema {name} is not empty in the Hive metastore: {_message(reply)}")
        _expect(status, reply)
        reply.dropped()
        return True

    def list_schemas(self) -> list[str]:
        return self._get("list schemas", ["databases"]).names("databases")

    def load_schema(self, name: str) -> Schema:
        return self._get("get schema", ["databases", name]).schema(name)

    # ---------------------------------------------------------------- tables

    def list_tables(self, schema: str) -> list[str]:
        return self._get("list tables", ["databases", schema, "tables"]).names("tables")

    def load_table(self, schema: str, name: str) -> Table:
        return self._get("get table", ["databases", schema, "tables", name]).table(name)

    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None:
        wanted = table_json(table)
        status, reply = self._call("create table", "POST", ["databases", schema, "tables"], wanted, fence=fence)
        if status == 409 and _error_name(reply) == "TableAlreadyExists":
            existing = self._get("get table", ["databases", schema, "tables", table.name], fence)
            if table_json(existing.table(table.name)) != wanted:
                raise errors.TableAlreadyExists(f"Table {schema}.{table.name} already exists in the Hive metastore")
            return
        _expect(status, reply)
        reply.named(table.name, "table")

    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        status, reply = self._call(
            "alter table", "PUT", ["databases", schema, "tables", after.name], table_json(after), fence=fence
        )
        _expect(status, reply)
        reply.named(after.name, "table")

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None:
        status, reply = self._call(
            "rename table", "POST", ["databases", schema, "tables", name, "rename"],
            {"database": new_schema, "name": new_name}, fence=fence,
        )
        if status == 404 and _error_name(reply) == "NoSuchTable":
            # already renamed by an earlier attempt whose answer was lost?
            probe, _ = self._call("get table", "GET", ["databases", new_schema, "tables", new_name], fence=fence)
            if probe == 200:
                return
        if status == 409 and _error_name(reply) == "TableAlreadyExists":
            raise errors.TableAlreadyExists(f"Table {new_schema}.{new_name} already exists in the Hive metastore")
        _expect(status, reply)
        reply.named(new_name, "table")

    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        status, reply = self._call("drop table", "DELETE", ["databases", schema, "tables", name], fence=fence)
        if status == 404 and _error_name(reply) in ("NoSuchTable", "NoSuchDatabase"):
            return False
        _expect(status, reply)
        reply.dropped()
        return True

    def purge_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        """The stub keeps no data files, so purge is drop."""
        return self.drop_table(schema, name, fence=fence)

    # ---------------------------------------------------------------- partitions

    def list_partitions(self, schema: str, table: str) -> list[dict[str, Any]]:
        return self._get("list partitions", ["databases", schema, "tables", table, "partitions"]).partitions()

    def get_partition(self, schema: str, table: str, name: str) -> dict[str, Any]:
        return self._get("get partition", ["databases", schema, "tables", table, "partitions", name]).partition()

    def add_partition(self, schema: str, table: str, partition: dict[str, Any], *,
                      fence: Fence = NO_FENCE) -> dict[str, Any]:
        """Not idempotent, as in Gravitino: a retried add whose first attempt landed is
        PartitionAlreadyExists (the partition is in the metastore, which is where partitions live)."""
        status, reply = self._call("add partition", "POST", ["databases", schema, "tables", table, "partitions"],
                                   partition, fence=fence)
        _expect(status, reply)
        return reply.partition()

    def drop_partition(self, schema: str, table: str, name: str, purge: bool = False, *,
                       fence: Fence = NO_FENCE) -> bool:
        status, reply = self._call("drop partition", "DELETE",
                                   ["databases", schema, "tables", table, "partitions", name], fence=fence)
        _expect(status, reply)
        dropped = reply.obj().get("dropped")
        if not isinstance(dropped, int) or isinstance(dropped, bool) or dropped < 0:
            raise reply.bad(f"a partition drop must answer {{\"dropped\": <count>}}, not {dropped!r:.80}")
        return dropped > 0

    def _get(self, op: str, path: list[str], fence: Fence = NO_FENCE) -> Reply:
        status, reply = self._call(op, "GET", path, fence=fence)
        _expect(status, reply)
        return reply


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        return NotJson(raw)


def _error_name(reply: Reply) -> str:
    """The `error` of an error reply ({"error": name, "message": text}), "" for any other shape."""
    error = reply.payload.get("error") if isinstance(reply.payload, dict) else None
    return error if isinstance(error, str) else ""


def _message(reply: Reply) -> str:
    """The `message` of an error reply, or a short description of a reply of another shape."""
    message = reply.payload.get("message") if isinstance(reply.payload, dict) else None
    return message[:500] if isinstance(message, str) else f"(no message; {describe(reply.payload)})"


def _expect(status: int, reply: Reply) -> None:
    """Turn a metastore error answer into the matching gravimeta error; a status the metastore's protocol
    does not use, or an error reply of another shape, is a BadReply (502)."""
    if status in (200, 201):
        return
    error = _error_name(reply)
    message = f"Hive metastore rejected {reply.op}: {_message(reply)}"
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
    if error == "NoSuchPartition":
        raise errors.NoSuchPartition(message)
    if error == "PartitionAlreadyExists":
        raise errors.PartitionAlreadyExists(message)
    if status == 400 and error:
        raise errors.IllegalArgument(message)
    raise reply.bad(f"HTTP {status} {describe(reply.payload) if not error else repr(error)}")
