"""One `sqlite` connector call in a process of its own, for the tests that pause or kill a call between two
of its steps (test_sqlite_incarnations.py): `python -m tests.connectors.sqlite_child '<json config>'`.

Config: root (the catalog root), path (the catalog's `path` property), call (create_schema, drop_schema,
create_table), schema, table, key and token (the call's fence; no token: no fence), fp_dir and tag
(failpoints on for this tag). The child prints one line, OK <result> or ERROR <type> <message>, and exits.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from connectors.base import CatalogContext, Fence
from connectors.sqlite import ROOT_ENV, SQLiteCatalogConnector
from gravimeta import errors, failpoints
from gravimeta.entities import Column, Schema, Table


def run(cfg: dict[str, Any]) -> Any:
    os.environ[ROOT_ENV] = cfg["root"]
    failpoints.configure(cfg["fp_dir"], cfg["tag"])
    connector = SQLiteCatalogConnector(CatalogContext("lake", "sq", {"path": cfg["path"]}))
    fence = Fence(cfg.get("key", "/lake/sq"), cfg.get("token"))
    if cfg["call"] == "create_schema":
        return connector.create_schema(Schema(cfg["schema"]), fence=fence)
    if cfg["call"] == "drop_schema":
        return connector.drop_schema(cfg["schema"], cascade=True, fence=fence)
    if cfg["call"] == "create_table":
        table = Table(cfg["table"], [Column("id", "long", nullable=False)])
        return connector.create_table(cfg["schema"], table, fence=fence)
    raise SystemExit(f"unknown call {cfg['call']!r}")


def main() -> None:
    try:
        result = run(json.loads(sys.argv[1]))
    except errors.GravitinoError as exc:
        print(f"ERROR {type(exc).__name__} {exc}", flush=True)
        return
    print(f"OK {result}", flush=True)


if __name__ == "__main__":
    main()
