"""What an alter changes in a JDBC engine's table, worked out from the two table states the SPI passes.

Connector.alter_table receives the table before and after (not Gravitino's list of TableChanges), so the
changes are found by comparing them. Columns are paired by their store ids, which a column keeps across
renames and alters and which travel in the journal's intents: a column of `after` with the id of one of
`before` is that column (renamed when its name differs), one without is added, one of `before` whose id
is gone is dropped. So a rename with a retype in the same request is a rename, and two columns can
trade names. Only tables without ids (made by hand, not from the store) fall back to the sqlite
connector's guess (connectors/sqlite/alter.py infer_renames: an unmatched old and new column in the same
slot with every other attribute equal). Then the differences per column and per index. The engine's own description
of the table (`current`) decides what is left to do, so that a repeated alter does nothing again: a
rename whose new name the engine already has, a drop of a column it no longer has, an add of one it has.
Attribute changes (type, nullability, default, comment, auto-increment) are applied whenever before
and after differ: setting an attribute to what it is changes nothing.

The same comparison serves the journal's undo, which passes the two states the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connectors.sqlite.alter import infer_renames
from gravimeta.entities import Column, Table

#: an index as the plan compares it: (type, name or None, field names)
IndexKey = tuple[str, str | None, tuple[str, ...]]


def index_key(index: dict[str, Any], renames: dict[str, str] | None = None) -> IndexKey:
    fields = tuple((renames or {}).get(path[0], path[0]) for path in index.get("fieldNames", []))
    return str(index.get("indexType", "")).upper(), index.get("name") or None, fields


@dataclass
class ColumnChange:
    """One column that stays: its name in the engine now, and what of it changes."""

    engine_name: str
    after: Column
    before: Column
    engine: Column | None = None  # the engine's column now (under engine_name)

    @property
    def type_changed(self) -> bool:
        return self.before.type != self.after.type

    @property
    def nullable_changed(self) -> bool:
        return self.before.nullable != self.after.nullable

    @property
    def default_changed(self) -> bool:
        return self.before.default_value != self.after.default_value

    @property
    def comment_changed(self) -> bool:
        return (self.before.comment or None) != (self.after.comment or None)

    @property
    def auto_increment_changed(self) -> bool:
        return self.before.auto_increment != self.after.auto_increment

    @property
    def attributes_changed(self) -> bool:
        return (self.type_changed or self.nullable_changed or self.default_changed or self.comment_changed
                or self.auto_increment_changed)


@dataclass
class AlterPlan:
    renames: list[tuple[str, str]] = field(default_factory=list)  # engine name -> new name
    drops: list[str] = field(default_factory=list)  # engine names
    adds: list[Column] = field(default_factory=list)
    changes: list[ColumnChange] = field(default_factory=list)  # columns that stay, renamed or not
    #: the columns in their new order (after's), when it differs from the engine's order after the drops,
    #: renames and adds at the end; None when the order stays
    order: list[str] | None = None
    index_drops: list[IndexKey] = field(default_factory=list)  # as the engine has them (its names)
    index_adds: list[dict[str, Any]] = field(default_factory=list)
    comment: tuple[bool, str | None] = (False, None)

    def is_empty(self) -> bool:
        return not (self.renames or self.drops or self.adds or any(c.attributes_changed for c in self.changes)
                    or self.order or self.index_drops or self.index_adds or self.comment[0])


def pairs(before: Table, after: Table) -> list[tuple[Column | None, Column]]:
    """(the column of `before` it was, or None when added; the column of `after`), in after's order."""
    if before.columns and all(c.id is not None for c in before.columns):
        by_id = {c.id: c for c in before.columns}
        return [(by_id.get(c.id) if c.id is not None else None, c) for c in after.columns]
    renames = infer_renames(before, after) if [c.name for c in before.columns] != [c.name for c in after.columns] else {}
    source = {new: old for old, new in renames.items()}
    found = []
    for column in after.columns:
        old = before.column(source.get(column.name, column.name))
        if old is not None and old.name in renames and renames[old.name] != column.name:
            old = None  # its name went to another column: this one is new
        found.append((old, column))
    return found


def plan(before: Table, after: Table, current: Table,
         described: Callable[[Any], Any] = lambda t: t) -> AlterPlan:
    """The changes that make the engine's table `current` (which should be `before`) look like `after`.
    `described`: how the engine reports a type gravimeta writes (for columns that trade names)."""
    engine_names = [c.name for c in current.columns]
    paired = pairs(before, after)
    kept = {old.name for old, _ in paired if old is not None}
    result = AlterPlan()
    result.drops = [c.name for c in before.columns if c.name not in kept and c.name in engine_names]
    sources = {old.name for old, column in paired if old is not None and old.name != column.name}
    for old, column in paired:
        if old is None or old.name == column.name or old.name not in engine_names:
            continue  # not renamed, or renamed already (the engine has no column of the old name)
        if column.name in sources:  # names traded: renamed while the engine's column of the old name is the old one
            engine = current.column(old.name)  # (by its type: two columns of one type that traded look alike,
            if engine is not None and engine.type != described(old.type):  # and the repair never repeats those)
                continue
        elif column.name in engine_names and column.name not in result.drops:
            continue  # the new name is the column's already
        result.renames.append((old.name, column.name))
    renamed_in_engine = dict(result.renames)
    for old, column in paired:
        if old is None:
            if column.name not in engine_names or column.name in result.drops or column.name in renamed_in_engine:
                result.adds.append(column)
            continue
        engine_name = old.name if old.name in renamed_in_engine else column.name
        result.changes.append(ColumnChange(engine_name, column, old, current.column(engine_name)))
    renames = {old.name: column.name for old, column in paired if old is not None and old.name != column.name}
    # the order: the engine's columns once dropped, renamed and added to, against after's
    natural = [renamed_in_engine.get(n, n) for n in engine_names if n not in result.drops]
    natural += [c.name for c in result.adds if c.name not in natural]
    wanted = [c.name for c in after.columns]
    if [n for n in natural if n in wanted] != wanted:
        result.order = wanted
    _plan_indexes(before, after, current, renames, result)
    if (before.comment or None) != (after.comment or None):
        result.comment = (True, after.comment)
    return result


def _plan_indexes(before: Table, after: Table, current: Table, renames: dict[str, str], result: AlterPlan) -> None:
    old = {index_key(i, renames) for i in before.indexes}
    new = {index_key(i) for i in after.indexes}
    engine = [index_key(i) for i in current.indexes]
    for key in old - new:
        found = _in_engine(key, engine)
        if found is not None:
            result.index_drops.append(found)
    for index in after.indexes:
        key = index_key(index)
        if key not in old and _in_engine(key, engine) is None:
            result.index_adds.append(index)


def _in_engine(key: IndexKey, engine: list[IndexKey]) -> IndexKey | None:
    """The engine's index for `key`: by name when it has one, else the same type on the same columns."""
    kind, name, fields = key
    for found in engine:
        if (name is not None and found[1] == name) or (name is None and found[0] == kind and found[2] == fields):
            return found
    return None
