"""The stub's HTTP JSON API (stdlib ThreadingHTTPServer; names are percent-encoded path segments).

    GET    /health
    GET    /identity                           -> {"identity": id} (the storage's own, made once: storage.py)
    GET    /databases                          -> {"databases": [names]}
    POST   /databases                          {"name", "comment", "properties"} -> 201
    GET    /databases/<db>
    DELETE /databases/<db>[?cascade=true]
    GET    /databases/<db>/tables              -> {"tables": [names]}
    POST   /databases/<db>/tables              {table JSON with "name"} -> 201
    GET    /databases/<db>/tables/<t>
    PUT    /databases/<db>/tables/<t>          full replace (alter)
    POST   /databases/<db>/tables/<t>/rename   {"database", "name"}
    DELETE /databases/<db>/tables/<t>
    GET    /databases/<db>/tables/<t>/partitions          -> {"partitions": [Gravitino partition JSON]}
    POST   /databases/<db>/tables/<t>/partitions          {identity partition} -> 201 the partition as kept
    GET    /databases/<db>/tables/<t>/partitions/<p>
    DELETE /databases/<db>/tables/<t>/partitions/<p>      -> {"dropped": n} (p may be a partial spec)
    POST   /fences                             record the request's fence only (the repair's barrier)

Mutating requests may carry a fence in headers (connectors/fencing.py: X-Gravimeta-Fence-Scope,
X-Gravimeta-Fence, X-Gravimeta-Fence-Related); a stale one is answered 409 {"error": "StaleFence"}.

    GET /_faults, DELETE /_faults (clear all, release hangs), POST /_faults/release,
    PUT /_faults/<latency|fail|hang|crash> (see faults.py). Fault endpoints are never faulted, and they
    exist only in test mode (`--test-mode` or GRAVIMETA_HIVE_STUB_TEST_MODE=1, set by the test harness):
    otherwise they answer 403, so nobody who can reach the stub can crash or hang it.

The stub is a test double, not a metastore for production (no authentication, one JSON file): it says
so at start (stderr), in the `X-Gravimeta-Hive-Stub` header of every reply and on `GET /`.
A fence token must lie in 0..2^53 (connectors/fencing.py MAX_TOKEN); `POST /fences` stays open because
gravimeta's own repair barrier uses it.

Errors are {"error": name, "message": text} with 400, 404 (NoSuch*), 409 (*AlreadyExists,
DatabaseNotEmpty, PartitionAlreadyExists, StaleFence) or 500 (InjectedFailure). Partitions follow Hive's
rules (partitions.py).
"""

from __future__ import annotations

import json
import socket
import struct
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from connectors.fencing import Fence
from connectors.hive_stub.faults import Faults, InjectedFailure, parse_fault
from connectors.hive_stub.storage import Metastore, StubError

Route = tuple[str, Callable[[], Any]]

TEST_MODE_ENV = "GRAVIMETA_HIVE_STUB_TEST_MODE"
NOT_FOR_PRODUCTION = ("gravimeta hive-stub: a test double for the hive provider, NOT a production Hive metastore "
                      "(no authentication, no access control, one JSON file)")


class StubServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], metastore: Metastore, test_mode: bool = False):
        super().__init__(address, Handler)
        self.metastore = metastore
        self.faults = Faults()
        #: fault administration (/_faults) is on only for tests
        self.test_mode = test_mode


class Handler(BaseHTTPRequestHandler):
    server: StubServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # ---------------------------------------------------------------- dispatch

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            body = self._body()
            if parts and parts[0] == "_faults":
                if not self.server.test_mode:
                    raise StubError(403, "Forbidden", "fault injection is off: this stub was not started with "
                                                      f"--test-mode ({TEST_MODE_ENV}=1)")
                self._reply(200, self._faults(method, parts[1:], body))
                return
            if method == "GET" and not parts:
                self._reply(200, {"service": NOT_FOR_PRODUCTION, "testMode": self.server.test_mode})
                return
            if parts == ["health"]:
                self._reply(200, {"status": "ok"})
                return
            if method == "GET" and parts == ["identity"]:
                self._reply(200, {"identity": self.server.metastore.identity})
                return
            op, work = self._route(method, parts, query, body)
            faults = self.server.faults
            with faults.tracking():
                faults.before(op)
                status, result = 200, work()
                if method == "POST" and op.startswith("create"):
                    status = 201
                faults.after(op)
                self._reply(status, result)
        except InjectedFailure as exc:
            if exc.mode == "reset":
                self._reset()
            else:
                self._reply(500, {"error": "InjectedFailure", "message": str(exc)})
        except StubError as exc:
            self._reply(exc.status, {"error": exc.error, "message": exc.message})

    def _route(self, method: str, parts: list[str], query: dict[str, str], body: Any) -> Route:
        ms = self.server.metastore
        try:
            fence = Fence.from_headers(self.headers.get)
        except ValueError as exc:
            raise StubError(400, "BadRequest", f"a malformed fence header: {exc}") from None
        match method, parts:
            case "POST", ["fences"]:
                return "fence", lambda: ms.fence(fence)
            case "GET", ["databases"]:
                return "list_databases", lambda: {"databases": ms.list_databases()}
            case "POST", ["databases"]:
                return "create_database", lambda: ms.create_database(_object(body), fence)
            case "GET", ["databases", db]:
                return "get_database", lambda: ms.get_database(db)
            case "DELETE", ["databases", db]:
                cascade = query.get("cascade", "false").lower() == "true"
                return "drop_database", lambda: ms.drop_database(db, cascade, fence)
            case "GET", ["databases", db, "tables"]:
                return "list_tables", lambda: {"tables": ms.list_tables(db)}
            case "POST", ["databases", db, "tables"]:
                return "create_table", lambda: ms.create_table(db, _object(body), fence)
            case "GET", ["databases", db, "tables", t]:
                return "get_table", lambda: ms.get_table(db, t)
            case "PUT", ["databases", db, "tables", t]:
                return "alter_table", lambda: ms.replace_table(db, t, _object(body), fence)
            case "POST", ["databases", db, "tables", t, "rename"]:
                target = _object(body)
                return "rename_table", lambda: ms.rename_table(
                    db, t, str(target.get("database") or db), str(target.get("name") or t), fence
                )
            case "DELETE", ["databases", db, "tables", t]:
                return "drop_table", lambda: ms.drop_table(db, t, fence)
            case "GET", ["databases", db, "tables", t, "partitions"]:
                return "list_partitions", lambda: {"partitions": ms.list_partitions(db, t)}
            case "POST", ["databases", db, "tables", t, "partitions"]:
                return "create_partition", lambda: ms.add_partition(db, t, _object(body), fence)
            case "GET", ["databases", db, "tables", t, "partitions", p]:
                return "get_partition", lambda: ms.get_partition(db, t, p)
            case "DELETE", ["databases", db, "tables", t, "partitions", p]:
                return "drop_partition", lambda: ms.drop_partitions(db, t, p, fence)
        raise StubError(404, "NotFound", f"no route {method} /{'/'.join(parts)}")

    def _faults(self, method: str, parts: list[str], body: Any) -> Any:
        faults = self.server.faults
        if method == "GET" and not parts:
            return faults.state()
        if method == "DELETE" and not parts:
            faults.clear()
            return faults.state()
        if method == "POST" and parts == ["release"]:
            faults.release()
            return faults.state()
        if method == "PUT" and len(parts) == 1:
            try:
                faults.add(parse_fault(parts[0], _object(body)))
            except (ValueError, TypeError) as exc:
                raise StubError(400, "BadRequest", str(exc)) from None
            return faults.state()
        raise StubError(404, "NotFound", f"no fault route {method} /_faults/{'/'.join(parts)}")

    # ---------------------------------------------------------------- I/O

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        try:
            return json.loads(self.rfile.read(length))
        except ValueError:
            raise StubError(400, "BadRequest", "the body is not JSON") from None

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Gravimeta-Hive-Stub", "test double; not a production metastore")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the client sees a connection reset, not an HTTP answer."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise StubError(400, "BadRequest", "the body must be a JSON object")
    return body


def serve(host: str, port: int, data_dir: Path, ready_file: Path | None = None, test_mode: bool = False) -> None:
    """Run the stub until killed; `ready_file` receives the bound port once it accepts connections."""
    server = StubServer((host, port), Metastore(data_dir), test_mode)
    print(f"WARNING: {NOT_FOR_PRODUCTION}", file=sys.stderr, flush=True)
    if test_mode:
        print("hive-stub test mode: fault injection (/_faults) is ON; anyone who reaches this port can crash it",
              flush=True)
    bound = server.server_address[1]
    if ready_file is not None:
        temporary = ready_file.with_name(ready_file.name + ".tmp")
        temporary.write_text(str(bound))
        temporary.replace(ready_file)
    print(f"hive-stub listening on http://{host}:{bound} with data in {data_dir}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()
