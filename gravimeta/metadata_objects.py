"""Gravitino's metadata objects: a kind and a dotted full name, as the `/objects/{type}/{fullName}/...`
routes (tags, statistics) address them. Pure parsing with Gravitino's rules (MetadataObjects.parse):
the type is case-insensitive, single-level kinds (metalake, tag, role, ...) take the full name as is,
the others split it on "." into exactly as many names as their depth, and no name may be "*".
"""

from __future__ import annotations

from dataclasses import dataclass

from gravimeta import errors

#: every kind Gravitino 1.3 knows, with the number of dotted names of its full name (None: one name,
#: taken whole); gravimeta's tree holds the first five
DEPTH: dict[str, int | None] = {
    "metalake": None, "catalog": 1, "schema": 2, "table": 3, "column": 4,
    "fileset": 3, "topic": 3, "model": 3, "view": 3, "function": 3,
    "role": None, "tag": None, "policy": None, "job": None, "job_template": None,
}
#: the kinds gravimeta keeps in its tree
SERVED = ("metalake", "catalog", "schema", "table", "column")
RESERVED_NAME = "*"


@dataclass(frozen=True)
class MetadataObject:
    """A metadata object in a metalake: `names` are catalog, schema, table, column (as deep as the
    kind), or the one name of a single-level kind."""

    type: str
    names: tuple[str, ...]

    @property
    def full_name(self) -> str:
        return ".".join(self.names)

    @property
    def name(self) -> str:
        return self.names[-1]

    def parent(self) -> MetadataObject | None:
        """The object it inherits tags from (column -> table -> schema -> catalog), None for a catalog
        and for single-level kinds (Gravitino's MetadataObjects.parent)."""
        if DEPTH.get(self.type) is None or len(self.names) == 1:
            return None
        kind = {4: "table", 3: "schema", 2: "catalog"}[len(self.names)]
        return MetadataObject(kind, self.names[:-1])

    def ancestors(self) -> list[MetadataObject]:
        """Its parents, nearest first."""
        found, current = [], self.parent()
        while current is not None:
            found.append(current)
            current = current.parent()
        return found

    def __str__(self) -> str:
        return f"{self.full_name} ({self.type})"


def parse(kind: str, full_name: str) -> MetadataObject:
    """The object a route names; IllegalArgument (400) for an unknown kind or a malformed name."""
    lowered = kind.lower()
    if lowered not in DEPTH:
        raise errors.IllegalArgument(
            f"Unknown metadata object type {kind!r}; expected one of {', '.join(DEPTH)}")
    if not full_name.strip():
        raise errors.IllegalArgument("Metadata object full name cannot be blank")
    depth = DEPTH[lowered]
    names = (full_name,) if depth is None else tuple(full_name.split("."))
    if depth is not None and len(names) != depth:
        raise errors.IllegalArgument(
            f"If the type is {lowered.upper()}, the length of names must be {depth}: {full_name!r} has {len(names)}")
    for name in names:
        if name == RESERVED_NAME:
            raise errors.IllegalArgument("Cannot create a metadata object with `*` name.")
        if not name:
            raise errors.IllegalArgument(f"Metadata object full name {full_name!r} has an empty name")
    return MetadataObject(lowered, names)
