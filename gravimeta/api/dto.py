"""Entities -> Gravitino response JSON (the shapes the official clients validate)."""

from __future__ import annotations

from typing import Any

from gravimeta.entities import Audit, Catalog, Column, Metalake, Schema, Table
from gravimeta.ownership.store import Owner, Principal

NO_DISTRIBUTION = {"strategy": "none", "number": 0, "funcArgs": []}


def audit(a: Audit) -> dict[str, Any]:
    out = {
        "creator": a.creator,
        "createTime": a.create_time,
        "lastModifier": a.last_modifier,
        "lastModifiedTime": a.last_modified_time,
    }
    return {k: v for k, v in out.items() if v is not None}


def _in_use(properties: dict[str, str], in_use: bool) -> dict[str, str]:
    return {**properties, "in-use": "true" if in_use else "false"}


def metalake(m: Metalake, resolved: bool = True) -> dict[str, Any]:
    """`resolved`: load and list add the `in-use` property; create and alter answer with the stored
    properties only, which hold `in-use` once an enable or disable stored it (Gravitino's
    MetalakeManager.newMetalakeWithResolvedProperties is applied on load/list only)."""
    return {
        "name": m.name,
        "comment": m.comment,
        "properties": _in_use(m.properties, m.in_use) if resolved else dict(m.properties),
        "audit": audit(m.audit),
    }


def catalog(c: Catalog) -> dict[str, Any]:
    return {
        "name": c.name,
        "type": c.type,
        "provider": c.provider,
        "comment": c.comment,
        "properties": _in_use(c.properties, c.in_use),
        "audit": audit(c.audit),
    }


def schema(s: Schema) -> dict[str, Any]:
    return {"name": s.name, "comment": s.comment, "properties": dict(s.properties), "audit": audit(s.audit)}


def column(c: Column) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": c.name,
        "type": c.type,
        "comment": c.comment,
        "nullable": c.nullable,
        "autoIncrement": c.auto_increment,
    }
    if c.default_value is not None:  # the client breaks on "defaultValue": null
        out["defaultValue"] = c.default_value
    return out


def table(t: Table) -> dict[str, Any]:
    return {
        "name": t.name,
        "comment": t.comment,
        "columns": [column(c) for c in t.columns],
        "properties": dict(t.properties),
        "audit": audit(t.audit),
        "distribution": t.distribution or NO_DISTRIBUTION,
        "sortOrders": t.sort_orders,
        "partitioning": t.partitioning,
        "indexes": t.indexes,
    }


def owner(o: Owner) -> dict[str, Any]:
    return {"name": o.name, "type": o.type}


def principal(p: Principal) -> dict[str, Any]:
    """A UserDTO or GroupDTO, with the names of its roles."""
    return {"name": p.name, "roles": list(p.roles), "audit": audit(p.audit)}


def identifiers(namespace: list[str], names: list[str]) -> list[dict[str, Any]]:
    return [{"namespace": namespace, "name": n} for n in names]


def ok(**payload: Any) -> dict[str, Any]:
    return {"code": 0, **payload}
