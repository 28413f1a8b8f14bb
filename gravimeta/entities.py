"""Plain domain objects shared by the store, the dispatchers, the connectors and the API layer.

They carry no behaviour beyond naming; JSON-ish fields (column types, partitioning, ...) are kept in
their Gravitino wire form so that what a client sent is what it reads back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class NameIdentifier:
    """A path in the metadata tree: () is the root, (m,) a metalake, (m, c, s, t) a table."""

    levels: tuple[str, ...]

    @classmethod
    def of(cls, *levels: str) -> NameIdentifier:
        return cls(tuple(levels))

    @property
    def name(self) -> str:
        return self.levels[-1] if self.levels else "/"

    @property
    def parent(self) -> NameIdentifier:
        return NameIdentifier(self.levels[:-1])

    def child(self, name: str) -> NameIdentifier:
        return NameIdentifier(self.levels + (name,))

    def is_root(self) -> bool:
        return not self.levels

    def __str__(self) -> str:
        return "/" + "/".join(self.levels)


ROOT = NameIdentifier(())


@dataclass
class Audit:
    creator: str | None = None
    create_time: str | None = None
    last_modifier: str | None = None
    last_modified_time: str | None = None


@dataclass
class Metalake:
    name: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    in_use: bool = True
    audit: Audit = field(default_factory=Audit)
    version: int = 1


@dataclass
class Catalog:
    metalake: str
    name: str
    type: str
    provider: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    in_use: bool = True
    audit: Audit = field(default_factory=Audit)
    version: int = 1
    #: the store's id of this catalog (None before it is stored): its identity, which a catalog dropped
    #: and re-created under the same name does not share (the operation journal keys intents by it)
    id: int | None = field(default=None, compare=False)


@dataclass
class Schema:
    name: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    audit: Audit = field(default_factory=Audit)
    version: int = 1


@dataclass
class Column:
    name: str
    type: Any  # Gravitino type JSON: a lowercase string ("integer", "varchar(10)") or an object
    comment: str | None = None
    nullable: bool = True
    auto_increment: bool = False
    default_value: Any = None  # expression JSON, None when no default is set
    #: the store's id of the column: kept across renames and alters, so that what is attached to the
    #: column (tags) follows it; None for a column not stored yet. Not part of the definition (equality).
    id: int | None = field(default=None, compare=False, repr=False)


@dataclass
class Table:
    name: str
    columns: list[Column]
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    partitioning: list[Any] = field(default_factory=list)
    distribution: dict[str, Any] | None = None
    sort_orders: list[Any] = field(default_factory=list)
    indexes: list[Any] = field(default_factory=list)
    audit: Audit = field(default_factory=Audit)
    version: int = 1

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def working_copy(self) -> Table:
        """A copy that the changes of an alter (gravimeta/dispatch/changes.py) may mutate without altering
        this table: its own columns, property map and lists. The JSON values inside them (types,
        expressions, index, partitioning and sort order entries) are shared: changes replace those,
        never edit them in place. Cheaper than copy.deepcopy, which copies every value."""
        return replace(
            self, columns=[replace(c) for c in self.columns], properties=dict(self.properties),
            partitioning=list(self.partitioning), sort_orders=list(self.sort_orders), indexes=list(self.indexes),
            distribution=None if self.distribution is None else dict(self.distribution), audit=replace(self.audit),
        )


@dataclass
class Tag:
    """A tag of a metalake; associated with catalogs, schemas, tables and columns by their ids."""

    name: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    audit: Audit = field(default_factory=Audit)
    version: int = 1


@dataclass
class Statistic:
    """A statistic of a table or of one of its partitions: a name starting with `custom-` and a JSON
    value (boolean, number, string, list or object, as Gravitino's StatisticValue serialises it)."""

    name: str
    value: Any
    audit: Audit = field(default_factory=Audit)
