"""The identity key an engine call is fenced by: the object the claim covers, named by what never changes.

A claim is taken on a name path ('/m/c/s'); an engine fence must not be. Keyed by path, a catalog rename
made an old holder's call ('/m/h/s') look unrelated to the repair that followed it ('/m/h2/s'), and the
late call landed after the repair had looked. So the fence key names the catalog, schema and table by
their store ids, each with its create time:

    /c<catalog id>.<create time digits>[/s<schema id>.<create time digits>[/t<table id>.<...>]]

- a rename (of the metalake, the catalog or a table) changes no key: old and new calls stay related;
- an object dropped and created again under the same name is another object with another key; the
  create time keeps that true where a database may hand out a deleted row's id again (SQLite reused the
  highest rowid once its row was deleted, before alembic 0019) and across stores that share one engine;
- a schema the store does not have (only the engine has it) under a schema's claim is named by its name,
  '/s~<name>': its key is related to its catalog's, never to a sibling schema's (a sibling's claim may
  hold a higher token at the same time). It can only come into the store, or leave it, through a
  claim on the catalog whose engine call or barrier (schema create or drop, schema import) records a
  token on the catalog's key, above every call made under the name key before.

Keys are resolved under the claim, inside a store transaction, so they name what the claim covers now.
An identity, once gone from the store, never comes back (`schema_gone`: the repair's rule for an intent
whose schema was dropped, docs/consistency.md §4).
"""

from __future__ import annotations

from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test
from gravimeta.store.models import SchemaRow


def _part(kind: str, row_id: int, create_time: str | None) -> str:
    digits = "".join(ch for ch in create_time or "" if ch.isdigit())
    return f"/{kind}{row_id}.{digits}"


def identity_key(store: EntityStore, s: Session, path: str) -> str:
    """The key of the object a claim on `path` ('/m/c', '/m/c/s' or '/m/c/s/t') covers. NoSuchCatalog
    (or NoSuchMetalake) when the catalog is gone: no engine call may be made for it then."""
    if disabled_for_test("identity_keys"):  # TEST-ONLY: fences keyed by the claim's path, as before keys
        return path
    names = path.strip("/").split("/")
    if len(names) < 2:
        raise ValueError(f"no engine lies under the claim on {path!r}")
    catalog = store.catalog_row(s, names[0], names[1])
    key = _part("c", catalog.id, catalog.create_time)
    if len(names) < 3:
        return key
    try:
        schema = store.schema_row(s, *names[:3])
    except errors.NoSuchSchema:
        return f"{key}/s~{quote(names[2], safe='')}"
    key += _part("s", schema.id, schema.create_time)
    if len(names) < 4:
        return key
    try:
        table = store.table_row(s, *names[:4])
    except errors.NoSuchTable:
        return key
    return key + _part("t", table.id, table.create_time)


def catalog_key(catalog_id: int, create_time: str | None) -> str:
    """The key of a catalog (and so of everything in it)."""
    return _part("c", catalog_id, create_time)


def schema_in_key(key: str) -> tuple[int, str] | None:
    """(schema id, create time digits) of the stored schema a key names; None when it names none (a
    catalog's key, an engine-only schema's '/s~<name>', a path key of an intent recorded before keys)."""
    parts = key.strip("/").split("/")
    if len(parts) < 2 or not parts[0].startswith("c") or not parts[1].startswith("s"):
        return None
    row_id, dot, digits = parts[1][1:].partition(".")
    return (int(row_id), digits) if dot and row_id.isdigit() and all(ch.isdigit() for ch in digits) else None


def schema_gone(store: EntityStore, catalog_id: int, key: str) -> bool:
    """Whether the key names a schema of the catalog by identity that the store no longer has (dropped,
    perhaps created again under its name: another identity)."""
    named = schema_in_key(key)
    if named is None:
        return False
    with store.snapshot() as s:
        row = s.execute(select(SchemaRow.create_time)
                        .where(SchemaRow.id == named[0], SchemaRow.catalog_id == catalog_id)).first()
    return row is None or "".join(ch for ch in row[0] or "" if ch.isdigit()) != named[1]
