"""Building blocks for store tests and race workers: entities with sensible defaults, a small tree."""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from gravimeta.store import EntityStore

USER = "tester"


def table_of(name: str, **kwargs) -> Table:
    columns = kwargs.pop("columns", [Column("id", "long", nullable=False), Column("name", "string", "the name")])
    return Table(name, columns, **kwargs)


@dataclass(frozen=True)
class Tree:
    """The path metalake/catalog/schema of a test, all created."""

    m: str
    c: str
    s: str

    @classmethod
    def create(cls, store: EntityStore, suffix: str) -> Tree:
        tree = cls(f"m_{suffix}", f"c_{suffix}", f"s_{suffix}")
        store.create_metalake(Metalake(tree.m), USER)
        store.create_catalog(Catalog(tree.m, tree.c, "relational", "memory"), USER)
        store.create_schema(tree.m, tree.c, Schema(tree.s), USER)
        return tree
