"""The bare-stack ceiling: the smallest Flask + SQLAlchemy Core app that sends the same SQL as gravimeta's
lock-off table create, rename, drop and load on the same tables, served by the same gunicorn setup.

    .venv/bin/python bench/bare_stack.py --store-url URL [--bind 127.0.0.1:PORT] [--workers 2] [--threads 4]

What gravimeta's request costs beyond this app is ours to win: both use Flask, SQLAlchemy,
psycopg, the same pool settings (no pre-ping, READ COMMITTED, pool_recycle 1800, default QueuePool),
gunicorn's gthread worker with the same workers, threads and timeouts, on a database migrated by
gravimeta's own migrations. What this app leaves out is everything else a gravimeta request does: the
marshmallow schemas, entities and DTOs, the ORM, the dispatchers, the tree lock and the claim, the
connector, the journal, request logs, metrics, error wording.

The SQL, statement for statement and byte for byte (tests/bench_smoke/test_ceiling.py compares it on
the wire with what gravimeta sends, so the two cannot drift apart unnoticed; bench/same_sql.py prints both):
- create: BEGIN; the in-use check (metalake LEFT JOIN catalog, whole rows); the open-intents read (the
  journal rows under the schema's path, its ancestors or descendants); the schema row FOR SHARE
  (parent chain in nested scalar subqueries); INSERT the table RETURNING id; INSERT its columns in one
  multi-row INSERT ... RETURNING (SQLAlchemy's insertmanyvalues, ordered); INSERT the write marker; COMMIT.
- rename: BEGIN; the in-use check; the open-intents read; the table row FOR UPDATE (parent chain in
  subqueries); its columns; UPDATE name, modifier, time, version; INSERT the write marker; COMMIT.
- drop: BEGIN; the in-use check; the open-intents read; the schema row FOR SHARE; the table row FOR
  UPDATE; DELETE its tag relations and columns; DELETE the row; INSERT the write marker; COMMIT.
- load: the one load statement (in-use flags, schema id, table row, columns outer joined), outside a
  transaction (autocommit: one round trip).
The routes and JSON shapes are gravimeta's, as far as the bench's wrk scripts need: the same script
drives both. POST of a metalake, catalog and schema exist only to set a tree up (not measured).
Errors: 404 for a missing parent or table, 409 for a name taken; nothing else is checked.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from flask import Flask, request
from sqlalchemy import (
    Boolean,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    bindparam,
    create_engine,
    delete,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

NO_DISTRIBUTION = {"strategy": "none", "number": 0, "funcArgs": []}
JSON_TABLE_FIELDS = ("properties", "partitioning", "distribution", "sort_orders", "indexes")


class Missing(LookupError):
    """A parent or the table does not exist: 404."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def create_bare_engine(url: str) -> Engine:
    """gravimeta's engine settings on PostgreSQL (gravimeta/store/database.py), nothing more."""
    return create_engine(url, isolation_level="READ COMMITTED", pool_recycle=1800)


def _audited(name: str, *columns: Column[Any]) -> Table:
    return Table(name, METADATA, Column("id", Integer, primary_key=True), *columns,
                 Column("creator", String(256)), Column("create_time", String(40)),
                 Column("last_modifier", String(256)), Column("last_modified_time", String(40)),
                 Column("version", Integer, nullable=False))


# The tables as gravimeta's migrations create them (gravimeta/store/models.py), in plain Core types:
# JSON columns are TEXT that this app encodes and decodes itself.
METADATA = MetaData()
METALAKE = _audited("gm_metalake", Column("name", String(128)), Column("comment", Text),
                    Column("properties", Text), Column("in_use", Boolean))
CATALOG = _audited("gm_catalog", Column("metalake_id", Integer), Column("name", String(128)),
                   Column("type", String(32)), Column("provider", String(64)), Column("comment", Text),
                   Column("properties", Text), Column("in_use", Boolean))
SCHEMA = _audited("gm_schema", Column("catalog_id", Integer), Column("name", String(128)), Column("comment", Text),
                  Column("properties", Text))
TABLE = _audited("gm_table", Column("schema_id", Integer), Column("name", String(128)), Column("comment", Text),
                 Column("properties", Text), Column("partitioning", Text), Column("distribution", Text),
                 Column("sort_orders", Text), Column("indexes", Text))
COLUMN = Table("gm_column", METADATA, Column("id", Integer, primary_key=True), Column("table_id", Integer),
               Column("position", Integer), Column("name", String(128)), Column("type", Text),
               Column("comment", Text), Column("nullable", Boolean), Column("auto_increment", Boolean),
               Column("default_value", Text))
TAG_RELATION = Table("gm_tag_relation", METADATA, Column("id", Integer, primary_key=True),
                     Column("tag_id", Integer), Column("object_type", String(32)), Column("object_id", Integer))
JOURNAL = Table("gm_operation_journal", METADATA, Column("id", Integer, primary_key=True),
                Column("scope_path", String(1024)), Column("operation", String(64)), Column("payload", Text),
                Column("catalog_id", Integer), Column("state", String(16)), Column("holder", String(256)),
                Column("detail", Text), Column("created_at", String(40)), Column("observed_at", String(40)))
# every write transaction records its operation id last, before COMMIT (gravimeta/store/commit_check.py:
# a COMMIT whose reply is lost is looked up there); gravimeta's garbage collection of old markers, one
# DELETE after every 100th write, is left out
WRITE_MARKER = Table("gm_write_marker", METADATA, Column("op_id", String(32), primary_key=True),
                     Column("created_at", Text))
# gravimeta's settle time (30 s) on PostgreSQL's clock, as its journal writes it (the ceiling runs on PostgreSQL)
SETTLED_BEFORE = literal_column("(clock_timestamp() + interval '-30000 milliseconds')")


def statements() -> SimpleNamespace:
    """The app's statements, built once (compiled once, then cached by SQLAlchemy)."""
    metalake, catalog, schema, table, column = METALAKE, CATALOG, SCHEMA, TABLE, COLUMN
    metalake_id = select(metalake.c.id).where(metalake.c.name == bindparam("m")).scalar_subquery()
    catalog_id = (select(catalog.c.id)
                  .where(catalog.c.metalake_id == metalake_id, catalog.c.name == bindparam("c")).scalar_subquery())
    schema_id = (select(schema.c.id)
                 .where(schema.c.catalog_id == catalog_id, schema.c.name == bindparam("s")).scalar_subquery())
    col_fields = ("position", "name", "type", "comment", "nullable", "auto_increment", "default_value")
    return SimpleNamespace(
        metalake=metalake, catalog=catalog, schema=schema, table=table, column=column,
        # gravimeta looks for intents left open under the schema before a create, rename or drop (they
        # are settled first; "settled": older than its settle time, 30 s); on a healthy store
        # it finds none, and neither does this app. ancestry: the schema's path, then its ancestors.
        open_intents=(select(*[c for c in JOURNAL.c if c.name != "observed_at"],
                             (JOURNAL.c.created_at <= SETTLED_BEFORE).label("settled"), JOURNAL.c.observed_at)
                      .where(or_(JOURNAL.c.scope_path.in_(bindparam("ancestry", expanding=True)),
                                 JOURNAL.c.scope_path.like(bindparam("descendants"), escape="!")))
                      .order_by(JOURNAL.c.id)),
        in_use=(select(metalake, catalog)
                .select_from(metalake.outerjoin(
                    catalog, and_(catalog.c.metalake_id == metalake.c.id, catalog.c.name == bindparam("c"))))
                .where(metalake.c.name == bindparam("m"))),
        schema_for_share=(select(schema).where(schema.c.catalog_id == catalog_id, schema.c.name == bindparam("s"))
                          .with_for_update(read=True)),
        table_for_update=(select(table).where(table.c.schema_id == bindparam("schema_id"),
                                              table.c.name == bindparam("t")).with_for_update()),
        table_by_path_for_update=(select(table).where(table.c.schema_id == schema_id, table.c.name == bindparam("t"))
                                  .with_for_update()),
        columns_of=select(column).where(column.c.table_id == bindparam("table_id")).order_by(column.c.position),
        insert_table=insert(table).returning(table.c.id),
        insert_columns=insert(column).returning(column.c.id, sort_by_parameter_order=True),
        rename=(update(table).where(table.c.id == bindparam("table_id"))
                .values(name=bindparam("name"), last_modifier=bindparam("user"),
                        last_modified_time=bindparam("time"), version=bindparam("version"))),
        # a dropped table's tag associations and its columns' go with it (gravimeta/store/tags.py)
        delete_tag_relations=delete(TAG_RELATION).where(or_(
            and_(TAG_RELATION.c.object_type == "table",
                 TAG_RELATION.c.object_id.in_(bindparam("ids", expanding=True))),
            and_(TAG_RELATION.c.object_type == "column",
                 TAG_RELATION.c.object_id.in_(select(column.c.id).where(
                     column.c.table_id.in_(bindparam("ids", expanding=True))))))),
        delete_columns=delete(column).where(column.c.table_id.in_(bindparam("ids", expanding=True))),
        delete_table=delete(table).where(table.c.id.in_(bindparam("ids", expanding=True))),
        mark=insert(WRITE_MARKER).values(op_id=bindparam("op_id"), created_at=literal_column("clock_timestamp()")),
        load=(select(metalake.c.in_use.label("metalake_in_use"), catalog.c.in_use.label("catalog_in_use"),
                     schema.c.id.label("found_schema_id"), *table.c,
                     *(column.c[f].label(f"col_{f}") for f in col_fields))
              .select_from(metalake)
              .outerjoin(catalog, and_(catalog.c.metalake_id == metalake.c.id, catalog.c.name == bindparam("c")))
              .outerjoin(schema, and_(schema.c.catalog_id == catalog.c.id, schema.c.name == bindparam("s")))
              .outerjoin(table, and_(table.c.schema_id == schema.c.id, table.c.name == bindparam("t")))
              .outerjoin(column, column.c.table_id == table.c.id)
              .where(metalake.c.name == bindparam("m"))
              .order_by(column.c.position)),
    )


def _column_json(name: str, type_: Any, comment: Any, nullable: Any, auto_increment: Any, default: Any) -> dict[str, Any]:
    out = {"name": name, "type": type_, "comment": comment, "nullable": bool(nullable),
           "autoIncrement": bool(auto_increment)}
    if default is not None:
        out["defaultValue"] = default
    return out


def _table_json(row: Any, columns: list[dict[str, Any]]) -> dict[str, Any]:
    audit = {"creator": row.creator, "createTime": row.create_time, "lastModifier": row.last_modifier,
             "lastModifiedTime": row.last_modified_time}
    return {
        "name": row.name, "comment": row.comment, "columns": columns,
        "properties": json.loads(row.properties or "{}"),
        "audit": {k: v for k, v in audit.items() if v is not None},
        "distribution": json.loads(row.distribution) if row.distribution else NO_DISTRIBUTION,
        "sortOrders": json.loads(row.sort_orders or "[]"),
        "partitioning": json.loads(row.partitioning or "[]"),
        "indexes": json.loads(row.indexes or "[]"),
    }


def create_app(store_url: str) -> Flask:
    """The ceiling app; gunicorn calls this in each worker after fork, as gravimeta's create_app."""
    engine = create_bare_engine(store_url)
    q = statements()
    app = Flask("bare_stack")
    app.extensions["bare_stack"] = engine
    app.url_map.strict_slashes = False
    app.json.sort_keys = False  # type: ignore[attr-defined]
    tables = "/api/metalakes/<m>/catalogs/<c>/schemas/<s>/tables"

    def in_use(conn: Any, m: str, c: str) -> None:
        found = conn.execute(q.in_use, {"m": m, "c": c}).first()
        if found is None or found._mapping[q.catalog.c.id] is None:
            raise Missing(f"{m}.{c}")
        if not (found._mapping[q.metalake.c.in_use] and found._mapping[q.catalog.c.in_use]):
            raise Missing(f"{m}.{c} not in use")

    def no_open_intents(conn: Any, m: str, c: str, s: str) -> None:
        path = f"/{m}/{c}/{s}"
        ancestry = [path, "/", f"/{m}", f"/{m}/{c}"]
        if conn.execute(q.open_intents, {"ancestry": ancestry, "descendants": f"{path}/%"}).first() is not None:
            raise Missing(f"{path}: an operation left open (gravimeta would settle it first)")

    @app.errorhandler(Missing)
    def _missing(exc: Missing) -> Any:
        return {"code": 1003, "type": "NoSuchEntityException", "message": str(exc)}, 404

    @app.errorhandler(IntegrityError)
    def _taken(exc: IntegrityError) -> Any:
        return {"code": 1004, "type": "EntityAlreadyExistsException", "message": "already exists"}, 409

    @app.get("/api/version")
    def version() -> Any:
        return {"code": 0, "version": {"version": "1.3.1", "compileDate": "", "gitCommit": "bare-stack"}}

    @app.post("/api/metalakes")
    def create_metalake() -> Any:
        body = request.get_json(force=True)
        with engine.begin() as conn:
            conn.execute(insert(q.metalake), {"name": body["name"], "properties": "{}", "in_use": True,
                                              "creator": "anonymous", "create_time": now_iso(), "version": 1})
        return {"code": 0, "metalake": {"name": body["name"]}}

    @app.post("/api/metalakes/<m>/catalogs")
    def create_catalog(m: str) -> Any:
        body = request.get_json(force=True)
        with engine.begin() as conn:
            metalake_id = conn.execute(select(q.metalake.c.id).where(q.metalake.c.name == m)).scalar_one()
            conn.execute(insert(q.catalog), {
                "metalake_id": metalake_id, "name": body["name"], "type": body.get("type", "relational"),
                "provider": body.get("provider", "memory"), "properties": "{}", "in_use": True,
                "creator": "anonymous", "create_time": now_iso(), "version": 1})
        return {"code": 0, "catalog": {"name": body["name"]}}

    @app.post("/api/metalakes/<m>/catalogs/<c>/schemas")
    def create_schema(m: str, c: str) -> Any:
        body = request.get_json(force=True)
        with engine.begin() as conn:
            catalog_id = conn.execute(
                select(q.catalog.c.id).join(q.metalake, q.metalake.c.id == q.catalog.c.metalake_id)
                .where(q.metalake.c.name == m, q.catalog.c.name == c)).scalar_one()
            conn.execute(insert(q.schema), {"catalog_id": catalog_id, "name": body["name"], "properties": "{}",
                                            "creator": "anonymous", "create_time": now_iso(), "version": 1})
        return {"code": 0, "schema": {"name": body["name"]}}

    @app.post(tables)
    def create_table(m: str, c: str, s: str) -> Any:
        body = request.get_json(force=True)
        columns = [_column_json(col["name"], col["type"], col.get("comment"), col.get("nullable", True),
                                col.get("autoIncrement", False), col.get("defaultValue"))
                   for col in body["columns"]]
        row = SimpleNamespace(name=body["name"], comment=body.get("comment"), properties="{}", partitioning="[]",
                              distribution=None, sort_orders="[]", indexes="[]", creator="anonymous",
                              create_time=now_iso(), last_modifier=None, last_modified_time=None, version=1)
        with engine.begin() as conn:
            in_use(conn, m, c)
            no_open_intents(conn, m, c, s)
            schema = conn.execute(q.schema_for_share, {"m": m, "c": c, "s": s}).first()
            if schema is None:
                raise Missing(f"{m}.{c}.{s}")
            table_id = conn.execute(q.insert_table, {"schema_id": schema.id, **vars(row)}).scalar_one()
            conn.execute(q.insert_columns, [
                {"table_id": table_id, "position": i, "name": col["name"], "type": json.dumps(col["type"]),
                 "comment": col["comment"], "nullable": col["nullable"], "auto_increment": col["autoIncrement"],
                 "default_value": None if col.get("defaultValue") is None else json.dumps(col["defaultValue"])}
                for i, col in enumerate(columns)])
            conn.execute(q.mark, {"op_id": uuid.uuid4().hex})
        return {"code": 0, "table": _table_json(row, columns)}

    @app.get(f"{tables}/<t>")
    def load_table(m: str, c: str, s: str, t: str) -> Any:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            rows = conn.execute(q.load, {"m": m, "c": c, "s": s, "t": t}).all()
        if not rows or rows[0].id is None:
            raise Missing(f"{m}.{c}.{s}.{t}")
        columns = [_column_json(r.col_name, json.loads(r.col_type), r.col_comment, r.col_nullable,
                                r.col_auto_increment, None if r.col_default_value is None
                                else json.loads(r.col_default_value))
                   for r in rows if r.col_position is not None]
        return {"code": 0, "table": _table_json(rows[0], columns)}

    @app.put(f"{tables}/<t>")
    def rename_table(m: str, c: str, s: str, t: str) -> Any:
        new_name = request.get_json(force=True)["updates"][0]["newName"]
        with engine.begin() as conn:
            in_use(conn, m, c)
            no_open_intents(conn, m, c, s)
            row = conn.execute(q.table_by_path_for_update, {"m": m, "c": c, "s": s, "t": t}).first()
            if row is None:
                raise Missing(f"{m}.{c}.{s}.{t}")
            columns = [_column_json(r.name, json.loads(r.type), r.comment, r.nullable, r.auto_increment,
                                    None if r.default_value is None else json.loads(r.default_value))
                       for r in conn.execute(q.columns_of, {"table_id": row.id})]
            modified = {"name": new_name, "user": "anonymous", "time": now_iso(), "version": row.version + 1}
            conn.execute(q.rename, {"table_id": row.id, **modified})
            conn.execute(q.mark, {"op_id": uuid.uuid4().hex})
        renamed = SimpleNamespace(**{**row._asdict(), "name": new_name, "last_modifier": "anonymous",
                                     "last_modified_time": modified["time"], "version": modified["version"]})
        return {"code": 0, "table": _table_json(renamed, columns)}

    @app.delete(f"{tables}/<t>")
    def drop_table(m: str, c: str, s: str, t: str) -> Any:
        with engine.begin() as conn:
            in_use(conn, m, c)
            no_open_intents(conn, m, c, s)
            schema = conn.execute(q.schema_for_share, {"m": m, "c": c, "s": s}).first()
            row = None if schema is None else conn.execute(q.table_for_update, {"schema_id": schema.id, "t": t}).first()
            if row is not None:
                conn.execute(q.delete_tag_relations, {"ids": [row.id]})
                conn.execute(q.delete_columns, {"ids": [row.id]})
                conn.execute(q.delete_table, {"ids": [row.id]})
            conn.execute(q.mark, {"op_id": uuid.uuid4().hex})
        return {"code": 0, "dropped": row is not None}

    return app


def main(argv: list[str] | None = None) -> None:
    """Serve the ceiling app with gravimeta's gunicorn options (gravimeta/cli.py `serve`)."""
    from gunicorn.app.base import BaseApplication

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store-url", required=True)
    parser.add_argument("--bind", default="127.0.0.1:8095")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=60)
    args = parser.parse_args(argv)
    options = {"bind": args.bind, "workers": args.workers, "threads": args.threads, "worker_class": "gthread",
               "timeout": args.timeout, "graceful_timeout": 30}

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return create_app(args.store_url)

    sys.argv = sys.argv[:1]  # gunicorn must not parse ours
    Server().run()


if __name__ == "__main__":
    main()
