"""Every statement gravimeta's store sends for a scenario of ~50 schema/table requests, recorded on one
backend, and a comparison of two recordings: the check that a change to the store's Python sent the
same SQL (docs/benchmarks.md round 7, phase 2 item 1).

    .venv/bin/python bench/store_sql.py record sqlite|postgresql|mysql OUT.json   # in each tree
    .venv/bin/python bench/store_sql.py compare BEFORE.json AFTER.json            # exit 1 on a difference

To record another checkout with this venv: `cd OTHER && PYTHONPATH=OTHER .venv-path/bin/python
bench/store_sql.py record ...` (copy this file there if it has none). A recording holds each
statement's text, its parameters, whether it ran as executemany, BEGIN/COMMIT/ROLLBACK, and each
request's status and body; timestamps and the process id in journal holders are masked. The comparison
turns named bind parameters into positional ones (psycopg and PyMySQL send them by position; the
names never reach the server).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
NAMED = re.compile(r"%\((\w+)\)s")


def norm(v: Any) -> Any:
    if isinstance(v, str):
        return ISO.sub("<T>", v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [norm(x) for x in v]
    return v


def record(backend: str, out: str) -> None:
    from sqlalchemy import event

    from gravimeta.app import create_app
    from gravimeta.config import Settings
    from tests.api.helpers import Api, column
    from tests.support.databases import fresh_database

    log: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, fresh_database(backend, Path(tmp)) as url:
        app = create_app(Settings(store_url=url))
        engine = app.extensions["gravimeta"].store.engine

        @event.listens_for(engine, "before_cursor_execute")
        def _statement(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            log.append({"sql": statement, "params": norm(parameters), "many": executemany})

        for name in ("begin", "commit", "rollback"):
            event.listen(engine, name, lambda conn, name=name: log.append({"sql": f"<{name.upper()}>"}))

        def step(name: str, resp: Any = None) -> None:
            log.append({"step": name, "status": getattr(resp, "status_code", None),
                        "body": norm(resp.get_json()) if resp is not None else None})

        api = Api(app.test_client())

        m = api.create_metalake("m1")
        c = api.create_catalog(m, "c1")
        s = api.create_schema(c, "s1", comment="a schema", properties={"k": "v"})
        step("schema s1")
        s2 = api.create_schema(c, "s2")
        step("schema s2")
        cols = [column("id"), column("name", "varchar(32)", comment="the name"),
                column("d", "integer", defaultValue={"type": "literal", "dataType": "integer", "value": "1"}),
                column("e", "integer", comment="e"), column("f", "integer")]
        step("create t1", api.post(s.children(), {"name": "t1", "comment": "c", "properties": {"a": "b"}, "columns": cols}))
        step("create t2", api.post(s.children(), {"name": "t2", "columns": [column("x")]}))
        step("create t3", api.post(s.children(), {"name": "t3", "columns": []}))
        step("create t4", api.post(s.children(), {"name": "t4", "columns": [column("a", comment="x"), column("b", comment="y")],
            "distribution": {"strategy": "hash", "number": 4, "funcArgs": [{"type": "field", "fieldName": ["a"]}]},
            "sortOrders": [{"sortTerm": {"type": "field", "fieldName": ["a"]}, "direction": "asc", "nullOrdering": "nulls_first"}]}))
        step("create dup", api.post(s.children(), {"name": "t1", "columns": [column("x")]}))
        step("create bad schema", api.post(c.child("nope").children(), {"name": "t9", "columns": [column("x")]}))
        step("load t1", api.get(s.child("t1").path))
        step("rename t1", api.alter(s.child("t1"), {"@type": "rename", "newName": "t1r"}))
        step("rename t2 onto t1r", api.alter(s.child("t2"), {"@type": "rename", "newName": "t1r"}))
        step("comment t1r", api.alter(s.child("t1r"), {"@type": "updateComment", "newComment": "new"}))
        step("add col t1r", api.alter(s.child("t1r"), {"@type": "addColumn", "fieldName": ["z"], "type": "integer"}))
        step("drop t2", api.delete(s.child("t2").path))
        step("drop t2 again", api.delete(s.child("t2").path))
        step("drop in missing schema", api.delete(c.child("nope").child("t").path))
        step("drop t1r", api.delete(s.child("t1r").path))
        step("drop s2", api.delete(s2.path))
        step("drop s1 not empty", api.delete(s.path))
        step("drop s1 cascade", api.delete(s.path + "?cascade=true"))
        step("create schema dup", api.post(c.children(), {"name": "s2"}))
        step("create schema dup2", api.post(c.children(), {"name": "s2"}))
        api.set_in_use(c, False)
        step("create in disabled", api.post(c.child("s2").children(), {"name": "t1", "columns": [column("x")]}))
        step("drop in disabled", api.delete(c.child("s2").child("t1").path))
        api.set_in_use(c, True)
        step("create long", api.post(c.child("s2").children(), {"name": "t1", "columns": [column("x", comment="\x00bad")]}))
        # part 2: tags on dropped objects, a journalled (sqlite) catalog, a disabled metalake
        os.environ["GRAVIMETA_SQLITE_CATALOG_ROOT"] = tmp
        step("tag", api.post("/api/metalakes/m1/tags", {"name": "tg", "comment": "x", "properties": {}}))
        s3 = api.create_schema(c, "s3")
        step("create t5", api.post(s3.children(), {"name": "t5", "columns": [column("a"), column("b")]}))
        step("tag t5", api.post("/api/metalakes/m1/objects/table/c1.s3.t5/tags", {"tagsToAdd": ["tg"], "tagsToRemove": []}))
        step("tag t5.a", api.post("/api/metalakes/m1/objects/column/c1.s3.t5.a/tags", {"tagsToAdd": ["tg"], "tagsToRemove": []}))
        step("drop t5", api.delete(s3.child("t5").path))
        step("create t6", api.post(s3.children(), {"name": "t6", "columns": [column("a")]}))
        step("tag s3", api.post("/api/metalakes/m1/objects/schema/c1.s3/tags", {"tagsToAdd": ["tg"], "tagsToRemove": []}))
        step("drop s3 cascade", api.delete(s3.path + "?cascade=true"))
        sq = api.create_catalog(m, "cq", provider="sqlite", properties={"path": "cq.db"})
        step("sq schema", api.post(sq.children(), {"name": "qs"}))
        step("sq create", api.post(sq.child("qs").children(), {"name": "qt", "columns": [column("a"), column("b")]}))
        step("sq dup", api.post(sq.child("qs").children(), {"name": "qt", "columns": [column("a")]}))
        step("sq rename", api.alter(sq.child("qs").child("qt"), {"@type": "rename", "newName": "qt2"}))
        step("sq drop", api.delete(sq.child("qs").child("qt2").path))
        step("sq drop schema", api.delete(sq.child("qs").path))
        step("create t8", api.post(c.child("s2").children(), {"name": "t8", "columns": [column("a"), column("b")], "properties": {"p": "1"}}))
        api.create_schema(c, "s4")
        step("move t8", api.alter(c.child("s2").child("t8"), {"@type": "rename", "newName": "t8m", "newSchemaName": "s4"}))
        step("setprop t8m", api.alter(c.child("s4").child("t8m"), {"@type": "setProperty", "property": "q", "value": "2"}))
        step("rmprop t8m", api.alter(c.child("s4").child("t8m"), {"@type": "removeProperty", "property": "p"}))
        step("move t8m missing", api.alter(c.child("s4").child("t8m"), {"@type": "rename", "newName": "t8x", "newSchemaName": "nope"}))
        step("rename missing", api.alter(c.child("s4").child("nope"), {"@type": "rename", "newName": "t8x"}))
        step("delcol t8m", api.alter(c.child("s4").child("t8m"), {"@type": "deleteColumn", "fieldName": ["a"], "ifExists": False}))
        api.set_in_use(m, False)
        step("create in disabled lake", api.post(c.child("s2").children(), {"name": "t7", "columns": [column("x")]}))
        step("drop in disabled lake", api.delete(c.child("s2").child("t1").path))
        step("schema in disabled lake", api.post(c.children(), {"name": "s9"}))
        api.set_in_use(m, True)
        step("schema in missing catalog", api.post(m.child("nocat").children(), {"name": "s9"}))
        step("table in missing catalog", api.post(m.child("nocat").child("x").children(), {"name": "t", "columns": [column("x")]}))
        step("drop in missing lake", api.delete("/api/metalakes/nolake/catalogs/c/schemas/s/tables/t"))
        Path(out).write_text(json.dumps(log, indent=1, default=str))
    print(f"{len(log)} entries in {out}")


def _positional(e: dict[str, Any]) -> tuple[Any, ...]:
    if "step" in e:
        return ("STEP", e["step"], e["status"], json.dumps(e["body"], sort_keys=True))
    sql, params = e["sql"], e.get("params")
    names = NAMED.findall(sql)

    def order(p: Any) -> Any:
        return [p[n] for n in names] if isinstance(p, dict) and names else p

    if isinstance(params, list) and params and isinstance(params[0], dict):
        params = [order(p) for p in params]
    elif isinstance(params, dict):
        params = order(params)
    return (NAMED.sub("%s", sql), re.sub(r"vm:\d+", "vm:PID", json.dumps(params, default=str)), e.get("many"))


def compare(before: str, after: str) -> int:
    a = [_positional(e) for e in json.loads(Path(before).read_text())]
    b = [_positional(e) for e in json.loads(Path(after).read_text())]
    diffs = [i for i in range(max(len(a), len(b))) if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)]
    for i in diffs[:8]:
        print(f"# {i}\n before: {a[i] if i < len(a) else None}\n after:  {b[i] if i < len(b) else None}")
    print(f"{len(a)} vs {len(b)} entries, {len(diffs)} differ")
    return 1 if diffs else 0


def main(argv: list[str] | None = None) -> int:
    """`record BACKEND OUT.json` or `compare BEFORE.json AFTER.json` (exit 1 when they differ)."""
    parser = argparse.ArgumentParser(prog="bench/store_sql.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="record the scenario's statements on one backend")
    rec.add_argument("backend", choices=["sqlite", "postgresql", "mysql"])
    rec.add_argument("out")
    cmp = commands.add_parser("compare", help="compare two recordings")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "record":
        record(args.backend, args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
