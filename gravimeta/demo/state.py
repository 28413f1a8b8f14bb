"""Reading a metalake's final state three ways for the history checker: through the REST API, with
SQL straight from the store's tables, and from the `sqlite` connector's real files."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, select

from gravimeta.demo.client import Replica, catalog_path
from gravimeta.demo.history import CatalogState
from gravimeta.store.models import CatalogRow, MetalakeRow, SchemaRow, TableRow

MEMORY_NOTE = "memory connector: a per-process mirror of the store, no external engine to compare"


def read_state(replica: Replica, engine: Engine, metalake: str, catalogs: dict[str, dict[str, str]],
               sqlite_root: Path | None) -> dict[str, CatalogState]:
    """`catalogs` maps catalog name -> {"provider": ..., "path": ...} (path for sqlite catalogs)."""
    states = {}
    for name, info in catalogs.items():
        cat = CatalogState(info["provider"])
        read_api(replica, metalake, name, cat)
        read_sql(engine, metalake, name, cat)
        if info["provider"] == "sqlite" and sqlite_root is not None:
            cat.engine = read_sqlite_engine(sqlite_root / info["path"])
        elif info["provider"] == "sqlite":
            cat.engine_note = "sqlite catalog root unknown (give --sqlite-root)"
        else:
            cat.engine_note = MEMORY_NOTE
        states[name] = cat
    return states


def read_api(replica: Replica, metalake: str, catalog: str, cat: CatalogState) -> None:
    base = catalog_path(metalake, catalog)
    status, body = replica.request("GET", f"{base}/schemas")
    if status != 200:
        raise RuntimeError(f"listing schemas of {catalog} failed: {status} {body}")
    cat.api_schema_listing = [i["name"] for i in body["identifiers"]]
    for schema in cat.api_schema_listing:
        status, body = replica.request("GET", f"{base}/schemas/{quote(schema, safe='')}/tables")
        if status == 404:  # dropped between the two listings: the load is over, so this is a finding
            continue
        if status != 200:
            raise RuntimeError(f"listing tables of {catalog}.{schema} failed: {status} {body}")
        cat.api.setdefault(schema, []).extend(i["name"] for i in body["identifiers"])


def read_sql(engine: Engine, metalake: str, catalog: str, cat: CatalogState) -> None:
    with engine.connect() as conn:
        catalog_id = conn.scalar(
            select(CatalogRow.id).join(MetalakeRow, CatalogRow.metalake_id == MetalakeRow.id)
            .where(MetalakeRow.name == metalake, CatalogRow.name == catalog)
        )
        schemas = conn.execute(select(SchemaRow.id, SchemaRow.name).where(SchemaRow.catalog_id == catalog_id)).all()
        ids = {row.id: row.name for row in schemas}
        cat.sql_schema_rows = [row.name for row in schemas]
        for name in cat.sql_schema_rows:
            cat.sql.setdefault(name, [])
        tables = conn.execute(
            select(TableRow.schema_id, TableRow.name)
            .outerjoin(SchemaRow, TableRow.schema_id == SchemaRow.id)
            .where((SchemaRow.catalog_id == catalog_id) | (SchemaRow.id.is_(None)))
        ).all()
    for row in tables:
        if row.schema_id in ids:
            cat.sql[ids[row.schema_id]].append(row.name)
        else:
            cat.sql_orphans.append(f"{row.name} (schema_id {row.schema_id})")


def read_sqlite_engine(catalog_file: Path) -> dict[str, list[str]]:
    """Schema -> tables as the SQLite catalog files really hold them (read-only)."""
    if not catalog_file.exists():
        return {}
    result: dict[str, list[str]] = {}
    conn = sqlite3.connect(f"{catalog_file.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        registry = conn.execute("SELECT name, file FROM gravimeta_schemas").fetchall()
    finally:
        conn.close()
    schema_dir = catalog_file.with_name(catalog_file.name + ".schemas")
    for name, file_name in registry:
        path = schema_dir / file_name
        if not path.exists():
            result[name] = []
            continue
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
            result[name] = sorted(r[0] for r in rows)
        finally:
            conn.close()
    return result
