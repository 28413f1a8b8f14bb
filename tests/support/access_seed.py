"""Many catalogs, schemas, tables, tags, roles and grants written straight into the store's tables with
bulk INSERTs, for the tests and benches of access checks over big lists (through the API, 10,000
catalogs take minutes). The rows are those the API writes: audit columns, a `memory` provider, no
owner rows (the creator owns them), privilege rows with their object's own foreign key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Engine, insert, select

from gravimeta.ownership.models import PrincipalRow
from gravimeta.roles.models import OBJECT_COLUMNS, RoleMemberRow, RolePrivilegeRow, RoleRow
from gravimeta.store.attached_models import TagRelationRow, TagRow
from gravimeta.store.models import CatalogRow, MetalakeRow, SchemaRow, TableRow

BATCH = 500
_WHEN = "2025-01-01T00:00:00.000Z"
_ROWS: dict[str, Any] = {"catalog": CatalogRow, "schema": SchemaRow, "table": TableRow, "tag": TagRow,
                         "role": RoleRow}


def _audit(creator: str) -> dict[str, Any]:
    return {"creator": creator, "create_time": _WHEN, "last_modifier": creator, "last_modified_time": _WHEN,
            "version": 1}


def _metalake_id(conn: Any, metalake: str) -> int:
    found = conn.scalar(select(MetalakeRow.id).where(MetalakeRow.name == metalake))
    assert found is not None, f"no metalake {metalake}"
    return int(found)


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for lo in range(0, len(items), BATCH):
        yield items[lo:lo + BATCH]


def seed(engine: Engine, metalake: str, kind: str, names: Sequence[str], creator: str = "seed",
         parent: tuple[str, ...] = ()) -> dict[str, int]:
    """Insert `kind` objects ("catalog", "tag", "role" in the metalake; "schema" in catalog parent[0];
    "table" in schema parent[0].parent[1]) called `names`, created (owned) by `creator`. name -> id."""
    model = _ROWS[kind]
    with engine.begin() as conn:
        metalake_id = _metalake_id(conn, metalake)
        common: dict[str, Any] = {**_audit(creator)}
        if kind == "catalog":
            common.update(metalake_id=metalake_id, type="relational", provider="memory", comment=None,
                          properties={}, in_use=True)
        elif kind in ("tag", "role"):
            common.update(metalake_id=metalake_id, properties={}, **({"comment": None} if kind == "tag" else {}))
        elif kind == "schema":
            common.update(catalog_id=_catalog_id(conn, metalake_id, parent[0]), comment=None, properties={})
        else:
            catalog_id = _catalog_id(conn, metalake_id, parent[0])
            schema_id = conn.scalar(select(SchemaRow.id).where(SchemaRow.catalog_id == catalog_id,
                                                               SchemaRow.name == parent[1]))
            common.update(schema_id=schema_id, comment=None, properties={}, partitioning=[], distribution=None,
                          sort_orders=[], indexes=[])
        for chunk in _chunks(list(names)):
            conn.execute(insert(model), [{**common, "name": n} for n in chunk])
        parent_column = {"catalog": "metalake_id", "tag": "metalake_id", "role": "metalake_id",
                         "schema": "catalog_id", "table": "schema_id"}[kind]
        ids: dict[str, int] = {}
        for chunk in _chunks(list(names)):
            ids.update(conn.execute(select(model.name, model.id).where(
                getattr(model, parent_column) == common[parent_column], model.name.in_(chunk))).all())
        return ids


def _catalog_id(conn: Any, metalake_id: int, name: str) -> int:
    found = conn.scalar(select(CatalogRow.id).where(CatalogRow.metalake_id == metalake_id, CatalogRow.name == name))
    assert found is not None, f"no catalog {name}"
    return int(found)


def grant(engine: Engine, metalake: str, role: str, kind: str, ids: Iterable[int], privilege: str,
          effect: str = "ALLOW") -> None:
    """Give role `role` `privilege` (`effect`: ALLOW or DENY) on the `kind` objects ("METALAKE",
    "CATALOG", "SCHEMA", "TABLE", "TAG") with these ids."""
    with engine.begin() as conn:
        metalake_id = _metalake_id(conn, metalake)
        role_id = conn.scalar(select(RoleRow.id).where(RoleRow.metalake_id == metalake_id, RoleRow.name == role))
        assert role_id is not None, f"no role {role}"
        column = None if kind == "METALAKE" else OBJECT_COLUMNS[kind]
        rows = [{"role_id": role_id, "object_kind": kind, "object_id": i, "metalake_id": metalake_id,
                 "privilege": privilege, "effect": effect, **({column: i} if column else {})} for i in ids]
        for chunk in _chunks(rows):
            conn.execute(insert(RolePrivilegeRow), list(chunk))


def give_roles(engine: Engine, metalake: str, user: str, role_ids: Iterable[int]) -> None:
    """Grant the roles with these ids to user `user` of the metalake."""
    with engine.begin() as conn:
        metalake_id = _metalake_id(conn, metalake)
        principal = conn.scalar(select(PrincipalRow.id).where(
            PrincipalRow.metalake_id == metalake_id, PrincipalRow.kind == "USER", PrincipalRow.name == user))
        assert principal is not None, f"no user {user}"
        for chunk in _chunks([{"principal_id": principal, "role_id": r} for r in role_ids]):
            conn.execute(insert(RoleMemberRow), list(chunk))


def tag_objects(engine: Engine, tag_id: int, kind: str, ids: Iterable[int]) -> None:
    """Associate the tag with the `kind` ("catalog", "schema", "table", "column") objects with these ids."""
    with engine.begin() as conn:
        for chunk in _chunks([{"tag_id": tag_id, "object_type": kind, "object_id": i} for i in ids]):
            conn.execute(insert(TagRelationRow), list(chunk))
