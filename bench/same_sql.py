"""What SQL gravimeta really sends for a lock-off table create, load, rename and drop on PostgreSQL, read
on the wire (libpq's protocol trace), next to what the bare-stack ceiling (bench/bare_stack.py) sends.

    .venv/bin/python bench/same_sql.py [--mode off|LEASE_TABLE|PG_ADVISORY] [--provider memory|sqlite]

Both apps run in this process (Flask test client) on fresh PostgreSQL databases migrated alike. For
each request it prints the statements in order: simple-protocol queries (BEGIN, COMMIT) and the text
of each parsed statement (psycopg's automatic prepare is turned off here so that every execution
carries its text; it does not change the number of round trips), the round trips (one per Sync or
Query) and whether the two apps agree. Exit status 1 when they do not: the ceiling must do the same
database work as gravimeta's lock-off path, or its ratios mean nothing.

"Agree" means the same statements character for character, in the same order, and the same round
trips. A statement that differs is marked `~` when its signature still matches (its verb, the gm_*
tables it names, its row lock: FOR SHARE / FOR UPDATE), `!` when not. With `--mode` other than off, gravimeta's extra claim statements show up as differences:
that is what a claim adds to the ceiling's SQL.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bare_stack  # noqa: E402

from connectors.sqlite import ROOT_ENV as SQLITE_ROOT_ENV  # noqa: E402
from tests.support.databases import fresh_database  # noqa: E402

BASE = "/api/metalakes"
TABLES = f"{BASE}/m/catalogs/c/schemas/s/tables"
KINDS = ("create", "load", "rename", "drop")
_PARSE = re.compile(r'^Parse\s+"[^"]*"\s+"(?P<sql>.*)"\s+\d+(\s+\d+)*\s*$', re.DOTALL)
_QUERY = re.compile(r'^Query\s+"(?P<sql>.*)"$', re.DOTALL)
_RECORD = re.compile(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\t[FB]\t)")


@dataclass(frozen=True)
class Statement:
    sql: str

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str]:
        """(verb, gm_* tables named, row lock): what must be the same in both apps."""
        verb = self.sql.split(None, 1)[0].upper() if self.sql else ""
        tables = tuple(sorted(set(re.findall(r"\bgm_\w+", self.sql))))
        lock = "FOR SHARE" if re.search(r"FOR SHARE\s*$", self.sql) else (
            "FOR UPDATE" if re.search(r"FOR UPDATE\s*$", self.sql) else "")
        return verb, tables, lock


@dataclass
class Wire:
    """What one request sent: its statements and round trips."""

    statements: list[Statement]
    round_trips: int

    @property
    def signatures(self) -> list[tuple[str, tuple[str, ...], str]]:
        return [s.signature for s in self.statements]


def parse_trace(text: str) -> Wire:
    """Frontend messages of a libpq trace -> statements and round trips."""
    statements, round_trips = [], 0
    for record in _RECORD.split(text):  # a statement's text may span lines
        parts = record.split("\t")
        if len(parts) < 4 or parts[1] != "F":
            continue
        message = "\t".join(parts[3:])
        kind = message.split(None, 1)[0] if message else ""
        if kind in ("Sync", "Query"):
            round_trips += 1
        match = _PARSE.match(message) or _QUERY.match(message)
        if match and kind in ("Parse", "Query"):
            statements.append(Statement(" ".join(match.group("sql").split())))
    return Wire(statements, round_trips)


def table_body(name: str, columns: int = 3) -> dict[str, Any]:
    return {"name": name, "comment": "", "properties": {},
            "columns": [{"name": f"c{i}", "type": "integer", "comment": "", "nullable": True} for i in range(columns)]}


@contextmanager
def traced(engine: Engine, trace_path: str) -> Iterator[None]:
    """Every connection the engine opens from now on writes its protocol trace to `trace_path`, with
    psycopg's automatic prepare off (each execution then sends its statement's text)."""
    trace = open(trace_path, "w")  # noqa: SIM115 - closed below, after the pool is gone

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.prepare_threshold = None
        dbapi_connection.pgconn.trace(trace.fileno())

    event.listen(engine, "connect", on_connect)
    engine.dispose()
    try:
        yield
    finally:
        engine.dispose()
        event.remove(engine, "connect", on_connect)
        trace.close()


def requests_of(app: Any, provider: str, properties: dict[str, str], trace_path: str) -> dict[str, Wire]:
    """Set up m > c > s, then one request of each kind; the wire of each."""
    client = app.test_client()

    def ok(method: str, path: str, body: Any = None) -> None:
        response = client.open(path, method=method, json=body)
        assert response.status_code == 200, (method, path, response.status_code, response.get_data(True))

    ok("POST", BASE, {"name": "m", "comment": "", "properties": {}})
    ok("POST", f"{BASE}/m/catalogs", {"name": "c", "type": "relational", "provider": provider, "comment": "",
                                      "properties": properties})
    ok("POST", f"{BASE}/m/catalogs/c/schemas", {"name": "s", "comment": "", "properties": {}})
    steps: dict[str, Callable[[], None]] = {
        "create": lambda: ok("POST", TABLES, table_body("t")),
        "load": lambda: ok("GET", f"{TABLES}/t"),
        "rename": lambda: ok("PUT", f"{TABLES}/t", {"updates": [{"@type": "rename", "newName": "t2"}]}),
        "drop": lambda: ok("DELETE", f"{TABLES}/t2"),
    }
    wires = {}
    for kind, step in steps.items():
        start = os.path.getsize(trace_path)
        step()
        with open(trace_path) as f:
            f.seek(start)
            wires[kind] = parse_trace(f.read())
    return wires


def gravimeta_wires(url: str, mode: str, provider: str, trace_path: str) -> dict[str, Wire]:
    from gravimeta.app import create_app
    from gravimeta.config import load_settings

    settings = load_settings(environ={}, store_url=url, distributed_lock_enabled=mode != "off",
                             distributed_lock_backend=None if mode == "off" else mode)
    app = create_app(settings)
    services = app.extensions["gravimeta"]
    try:
        with traced(services.store.engine, trace_path):
            properties = {"path": f"same-sql-{os.getpid()}.db"} if provider == "sqlite" else {}
            return requests_of(app, provider, properties, trace_path)
    finally:
        heartbeat = getattr(getattr(services.coordinator, "runtime", None), "heartbeat", None)
        if heartbeat is not None:
            heartbeat.stop()


def bare_wires(url: str, trace_path: str) -> dict[str, Wire]:
    app = bare_stack.create_app(url)
    with traced(app.extensions["bare_stack"], trace_path):
        return requests_of(app, "memory", {}, trace_path)


def fresh_gravimeta_wires(mode: str = "off", provider: str = "memory") -> dict[str, Wire]:
    """gravimeta's wire for one request of each kind, on a fresh database."""
    with tempfile.TemporaryDirectory(prefix="gm-same-sql-") as tmp, fresh_database("postgresql", Path(tmp)) as url, \
            sqlite_root(str(Path(tmp) / "sqlite-catalogs")):
        return gravimeta_wires(url, mode, provider, str(Path(tmp) / "gm.trace"))


@contextmanager
def sqlite_root(root: str) -> Iterator[None]:
    """Point sqlite catalogs at `root` for the duration, then put the caller's environment back.

    The sqlite connector reads its root from the environment; this module also runs inside test
    processes, where a root left behind would be inherited by every later test's servers and tools."""
    before = os.environ.get(SQLITE_ROOT_ENV)
    os.environ[SQLITE_ROOT_ENV] = root
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SQLITE_ROOT_ENV, None)
        else:
            os.environ[SQLITE_ROOT_ENV] = before


def fresh_bare_wires() -> dict[str, Wire]:
    """The bare stack's wire for one request of each kind, on a fresh database."""
    with tempfile.TemporaryDirectory(prefix="gm-same-sql-") as tmp, fresh_database("postgresql", Path(tmp)) as url:
        return bare_wires(url, str(Path(tmp) / "bare.trace"))


def compare(mode: str = "off", provider: str = "memory") -> tuple[dict[str, Wire], dict[str, Wire]]:
    """(gravimeta's wires, the bare stack's wires) for one request of each kind."""
    return fresh_gravimeta_wires(mode, provider), fresh_bare_wires()


def agree(a: Wire, b: Wire) -> bool:
    return [s.sql for s in a.statements] == [s.sql for s in b.statements] and a.round_trips == b.round_trips


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="off", choices=["off", "LEASE_TABLE", "PG_ADVISORY"])
    parser.add_argument("--provider", default="memory", choices=["memory", "sqlite"])
    args = parser.parse_args(argv)
    gm, bare = compare(args.mode, args.provider)
    all_agree = True
    for kind in KINDS:
        same = agree(gm[kind], bare[kind])
        all_agree &= same
        print(f"## {kind}: gravimeta {gm[kind].round_trips} round trips / {len(gm[kind].statements)} statements, "
              f"bare stack {bare[kind].round_trips} / {len(bare[kind].statements)}: "
              f"{'same SQL' if same else 'DIFFERENT'}")
        for i in range(max(len(gm[kind].statements), len(bare[kind].statements))):
            g = gm[kind].statements[i] if i < len(gm[kind].statements) else None
            b = bare[kind].statements[i] if i < len(bare[kind].statements) else None
            mark = "=" if g and b and g.sql == b.sql else ("~" if g and b and g.signature == b.signature else "!")
            print(f"  {mark} gravimeta: {g.sql if g else '-'}")
            if mark != "=":
                print(f"    bare:      {b.sql if b else '-'}")
    print("\nlegend: = same text, ~ same verb/tables/lock, ! different")
    if not all_agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
