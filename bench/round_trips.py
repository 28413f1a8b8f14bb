"""Round trips to the database per request, in one process through the Flask test client: what every
pool checkout, BEGIN, statement and COMMIT costs a request. PostgreSQL: counted on the wire (libpq's
protocol trace); MariaDB (`--backend mysql`): the commands PyMySQL sends (each one is a round trip).

    .venv/bin/python bench/round_trips.py [--backend postgresql|mysql] [--modes off,LEASE_TABLE,PG_ADVISORY]
                                          [--provider memory|sqlite] [--verbose]

`--provider`: the catalog's connector. `memory` (process-local) runs each structural request in one store
transaction; `sqlite` (a real catalog file in a temporary directory) is journalled: intent, engine, apply.

On PostgreSQL a round trip is one Sync (extended protocol: a parameterized statement) or one Query
(simple protocol: BEGIN, COMMIT, ROLLBACK, SET, DEALLOCATE); a statement is one Bind (one execution of a
parameterized statement, prepared or not). On MariaDB a round trip is one command PyMySQL sends and a
statement one that is not BEGIN, COMMIT, ROLLBACK or SET (a CALL of the claim procedure is one statement,
whatever it runs inside the server). Figures are the mean over MEASURED requests of each kind, after
WARM_UP rounds of all of them, so psycopg's prepared statements are in place as in a running
server. `--verbose` lists the messages of the first measured request.
Also prints the process CPU time per request (single thread, uncontended; a rough guide only): for the
reads, and for structural requests as the mean over create + drop pairs of fresh tables.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.sqlite import ROOT_ENV as SQLITE_ROOT_ENV  # noqa: E402
from gravimeta.app import create_app  # noqa: E402
from gravimeta.config import load_settings  # noqa: E402
from tests.support.databases import fresh_database  # noqa: E402

BASE = "/api/metalakes"
TABLES = f"{BASE}/m/catalogs/c/schemas/s/tables"
WARM_UP, MEASURED = 8, 5


def table_body(name: str, columns: int = 3) -> dict[str, Any]:
    cols = [{"name": f"c{i}", "type": "integer", "comment": "", "nullable": True} for i in range(columns)]
    return {"name": name, "comment": "", "columns": cols, "properties": {}}


def rename_body(new_name: str) -> dict[str, Any]:
    return {"updates": [{"@type": "rename", "newName": new_name}]}


class _MariaDBCommands:
    """Every command PyMySQL sends (one round trip each), as text, inside the `with` block (which
    restores PyMySQL's own method at its end, so a later mode does not count through two wrappers)."""

    def __init__(self) -> None:
        import pymysql.connections

        self.sent: list[str] = []
        self._cls = pymysql.connections.Connection
        self._original = self._cls._execute_command

    def __enter__(self) -> _MariaDBCommands:
        commands, original = self.sent, self._original

        def counted(conn: Any, command: int, sql: Any) -> Any:
            commands.append(sql.decode(errors="replace") if isinstance(sql, bytes) else str(sql))
            return original(conn, command, sql)

        self._cls._execute_command = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *_exc: object) -> None:
        self._cls._execute_command = self._original  # type: ignore[method-assign]

    def statements(self, since: int) -> tuple[int, int]:
        """(round trips, statements) sent since index `since`."""
        sent = self.sent[since:]
        control = ("BEGIN", "COMMIT", "ROLLBACK", "SET AUTOCOMMIT", "START TRANSACTION")
        return len(sent), sum(1 for text in sent if not text.lstrip().upper().startswith(control))


def measure_mode(mode: str, verbose: bool, provider: str = "memory", backend: str = "postgresql") -> None:
    with fresh_database(backend, Path(tempfile.mkdtemp())) as url, \
            tempfile.NamedTemporaryFile("w+", suffix=".trace") as trace, \
            (_MariaDBCommands() if backend == "mysql" else nullcontext()) as mariadb:
        settings = load_settings(environ={}, store_url=url, distributed_lock_enabled=mode != "off",
                                 distributed_lock_backend=None if mode == "off" else mode)
        app = create_app(settings)
        engine = app.extensions["gravimeta"].store.engine

        if mariadb is None:
            @event.listens_for(engine, "connect")
            def _trace(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.pgconn.trace(trace.fileno())

            engine.dispose()  # every pooled connection from now on is traced
        client = app.test_client()

        def ok(method: str, path: str, body: Any = None) -> None:
            response = client.open(path, method=method, json=body)
            assert response.status_code < 300, (method, path, response.status_code, response.get_data(True))

        ok("POST", BASE, {"name": "m", "comment": "", "properties": {}})
        properties = {"path": f"c_{mode}.db"} if provider == "sqlite" else {}  # a fresh file per mode
        ok("POST", f"{BASE}/m/catalogs", {"name": "c", "type": "RELATIONAL", "provider": provider, "comment": "",
                                          "properties": properties})
        ok("POST", f"{BASE}/m/catalogs/c/schemas", {"name": "s", "comment": "", "properties": {}})
        ok("POST", TABLES, table_body("t0", columns=10))
        ok("GET", f"{TABLES}/t0")  # warm-up: connections, statement caches

        requests: list[tuple[str, Callable[[int], None]]] = [
            ("GET /api/version", lambda i: ok("GET", "/api/version")),
            ("load table", lambda i: ok("GET", f"{TABLES}/t0")),
            ("list tables", lambda i: ok("GET", TABLES)),
            ("create table", lambda i: ok("POST", TABLES, table_body(f"x{i}"))),
            ("rename table", lambda i: ok("PUT", f"{TABLES}/x{i}", rename_body(f"y{i}"))),
            ("drop table", lambda i: ok("DELETE", f"{TABLES}/y{i}")),
        ]
        create, drop = requests[3][1], (lambda i: ok("DELETE", f"{TABLES}/x{i}"))
        for i in range(100, 100 + WARM_UP):  # psycopg prepares a statement on its 5th execution
            for _label, request in requests:
                request(i)
        print(f"## {mode} ({provider} catalog, {backend})")
        for label, request in requests:
            if mariadb is not None:
                since = len(mariadb.sent)
                for i in range(MEASURED):
                    request(i)
                trips, statements = mariadb.statements(since)
                first = mariadb.sent[since:since + trips // MEASURED]
                cpu = _cpu_ms(request, label)
                print(f"{label:18s} round trips {trips / MEASURED:5.1f}  statements {statements / MEASURED:5.1f}"
                      + ("" if cpu is None else f"  cpu {cpu:.2f} ms"))
                if label == "drop table":
                    print(f"{'create + drop':18s} cpu per request {_structural_cpu_ms(create, drop):.2f} ms")
                if verbose:
                    for text in first:
                        print("      ", " ".join(text.split())[:150])
                continue
            trace.flush()
            start = os.path.getsize(trace.name)
            for i in range(MEASURED):
                request(i)
            trace.flush()
            with open(trace.name) as f:
                f.seek(start)
                sent = [line.split("\t") for line in f.read().splitlines() if "\tF\t" in line]
            kinds = collections.Counter(parts[3].split(" ")[0] for parts in sent if len(parts) > 3)
            cpu = _cpu_ms(request, label)
            cpu_note = "" if cpu is None else f"  cpu {cpu:.2f} ms"
            print(f"{label:18s} round trips {(kinds['Sync'] + kinds['Query']) / MEASURED:5.1f}  "
                  f"statements {kinds['Bind'] / MEASURED:5.1f}{cpu_note}")
            if label == "drop table":
                print(f"{'create + drop':18s} cpu per request {_structural_cpu_ms(create, drop):.2f} ms")
            if verbose:
                for parts in sent[:len(sent) // MEASURED]:
                    if len(parts) > 4 and parts[3].split(" ")[0] in ("Query", "Parse", "Bind"):
                        print("      ", " ".join(parts[3:])[:150])


def _cpu_ms(request: Callable[[int], None], label: str) -> float | None:
    """Process CPU per request over 30 repetitions of a read (None for the other structural requests:
    each needs its own fresh name, and create/drop is measured as a pair by _structural_cpu_ms)."""
    if label not in ("GET /api/version", "load table", "list tables"):
        return None
    started = time.process_time()
    for i in range(30):
        request(i)
    return (time.process_time() - started) / 30 * 1000


def _structural_cpu_ms(create: Callable[[int], None], drop: Callable[[int], None]) -> float:
    """Process CPU per structural request, over 30 create + drop pairs of fresh tables."""
    started = time.process_time()
    for i in range(1000, 1030):
        create(i)
        drop(i)
    return (time.process_time() - started) / 60 * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql"])
    parser.add_argument("--modes", default=None, help="default: off,LEASE_TABLE,PG_ADVISORY (MariaDB: off,LEASE_TABLE)")
    parser.add_argument("--provider", default="memory", choices=["memory", "sqlite"])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault(SQLITE_ROOT_ENV, tempfile.mkdtemp(prefix="gm-bench-sqlite-"))
    modes = args.modes or ("off,LEASE_TABLE" if args.backend == "mysql" else "off,LEASE_TABLE,PG_ADVISORY")
    for mode in modes.split(","):
        measure_mode(mode, args.verbose, args.provider, args.backend)


if __name__ == "__main__":
    main()
