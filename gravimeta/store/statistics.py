"""Statistics of tables and of their partitions (Gravitino 1.3's StatisticManager with its JDBC
partition-statistic storage: one row per statistic, keyed by the table's id, so they follow a rename of
the table and go with its drop: the foreign key deletes them with the table row, ON DELETE CASCADE).

Safety across replicas (as for properties): every write is one transaction that first
locks the table's row FOR UPDATE, then reads the statistics it is about to change and updates or
inserts them. Two updates of one table therefore run one after the other, whichever replica serves
them: the second sees the first one's rows and updates them instead of inserting a duplicate (which
the unique key would refuse: an acknowledged write lost to an error), and a drop of the table, which
locks the same row, deletes them all. Reads run in one snapshot. Partition statistics name a
partition by its name only, as in Gravitino: the partition need not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from sqlalchemy import delete, func, select
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.entities import Statistic
from gravimeta.metadata_objects import MetadataObject
from gravimeta.store import objects
from gravimeta.store.attached_models import PartitionStatisticRow, TableStatisticRow, audit_of, stamp, touch
from gravimeta.store.database import disabled_for_test
from gravimeta.store.entity_store import EntityStore, now_iso

StatisticRow = TableStatisticRow | PartitionStatisticRow

# Limits per table (docs/hardening.md, "Statistics"). They bound what one GET can return (values are at
# most statistic_payloads.VALUE_MAX_CHARS characters of JSON each): an update that would pass one is
# refused (400) and changes nothing.
TABLE_STATISTICS_MAX = 1_000
TABLE_STATISTICS_MAX_CHARS = 1 << 20  # 1 MiB of JSON text over all of a table's statistic values
PARTITION_STATISTICS_MAX = 10_000  # (partition, statistic) pairs of one table
PARTITION_STATISTICS_MAX_CHARS = 4 << 20
#: the largest page a GET may ask for (`limit`)
PAGE_MAX = 1_000


@dataclass(frozen=True)
class Page:
    """Which slice of a listing to return: `limit` items (None: all) after skipping `offset`; for
    partition statistics, the items are partitions (each with all its statistics)."""

    limit: int | None = None
    offset: int = 0


ALL = Page()


@dataclass(frozen=True)
class PartitionRange:
    """Which partitions' statistics to list: names from `lower` to `upper` (either may be None: open)."""

    lower: str | None = None
    lower_inclusive: bool = True
    upper: str | None = None
    upper_inclusive: bool = False


def statistic_of(row: StatisticRow) -> Statistic:
    return Statistic(row.name, row.value, audit_of(row))


class StatisticStore:
    def __init__(self, store: EntityStore):
        self.store = store

    # ------------------------------------------------------------------ table statistics

    def list_table(self, m: str, table: MetadataObject, page: Page = ALL) -> list[Statistic]:
        with self.store.snapshot() as s:
            table_id = objects.resolve(self.store, s, m, table).id
            rows = s.scalars(select(TableStatisticRow).where(TableStatisticRow.table_id == table_id)
                             .order_by(TableStatisticRow.name).limit(page.limit).offset(page.offset))
            return [statistic_of(r) for r in rows]

    def update_table(self, m: str, table: MetadataObject, updates: dict[str, Any], user: str) -> None:
        def work(s: Session) -> None:
            table_id = self._locked_table(s, m, table)
            existing = {r.name: r for r in s.scalars(select(TableStatisticRow).where(
                TableStatisticRow.table_id == table_id, TableStatisticRow.name.in_(list(updates))))}
            failpoints.hit("statistics.before_write", metalake=m, table=table.full_name)
            _upsert(s, existing, updates, user, partial(TableStatisticRow, table_id=table_id))
            _check_totals(s, TableStatisticRow, table_id, TABLE_STATISTICS_MAX, TABLE_STATISTICS_MAX_CHARS,
                          "statistics")

        self.store.write(work)

    def drop_table(self, m: str, table: MetadataObject, names: list[str]) -> bool:
        """True when at least one of the statistics existed."""

        def work(s: Session) -> bool:
            table_id = self._locked_table(s, m, table)
            result = s.execute(delete(TableStatisticRow).where(TableStatisticRow.table_id == table_id,
                                                               TableStatisticRow.name.in_(names)))
            return _count(result) > 0

        return self.store.write(work)

    # ------------------------------------------------------------------ partition statistics

    def list_partitions(self, m: str, table: MetadataObject, span: PartitionRange,
                        page: Page = ALL) -> list[tuple[str, list[Statistic]]]:
        """(partition name, its statistics) for the partitions in `span`, by name; `page` counts partitions."""
        with self.store.snapshot() as s:
            table_id = objects.resolve(self.store, s, m, table).id
            query = select(PartitionStatisticRow).where(PartitionStatisticRow.table_id == table_id)
            name = PartitionStatisticRow.partition_name
            if span.lower is not None:
                query = query.where(name >= span.lower if span.lower_inclusive else name > span.lower)
            if span.upper is not None:
                query = query.where(name <= span.upper if span.upper_inclusive else name < span.upper)
            if page.limit is not None or page.offset:
                names = query.with_only_columns(name).distinct().order_by(name).limit(page.limit).offset(page.offset)
                query = query.where(name.in_(list(s.scalars(names))))
            grouped: dict[str, list[Statistic]] = {}
            for row in s.scalars(query.order_by(name, PartitionStatisticRow.name)):
                grouped.setdefault(row.partition_name, []).append(statistic_of(row))
            return list(grouped.items())

    def update_partitions(self, m: str, table: MetadataObject, updates: list[tuple[str, dict[str, Any]]],
                          user: str) -> None:
        """Upsert each partition's statistics; a partition named twice gets both maps, the later winning."""
        merged: dict[str, dict[str, Any]] = {}
        for partition, values in updates:
            merged.setdefault(partition, {}).update(values)
        updates = list(merged.items())

        def work(s: Session) -> None:
            table_id = self._locked_table(s, m, table)
            existing = [{r.name: r for r in s.scalars(select(PartitionStatisticRow).where(
                PartitionStatisticRow.table_id == table_id, PartitionStatisticRow.partition_name == partition,
                PartitionStatisticRow.name.in_(list(values))))} for partition, values in updates]
            failpoints.hit("statistics.before_write", metalake=m, table=table.full_name)
            for (partition, values), found in zip(updates, existing, strict=True):
                _upsert(s, found, values, user, partial(PartitionStatisticRow, table_id=table_id,
                                                        partition_name=partition))
            _check_totals(s, PartitionStatisticRow, table_id, PARTITION_STATISTICS_MAX,
                          PARTITION_STATISTICS_MAX_CHARS, "partition statistics")

        self.store.write(work)

    def drop_partitions(self, m: str, table: MetadataObject, drops: Iterable[tuple[str, list[str]]]) -> bool:
        def work(s: Session) -> bool:
            table_id = self._locked_table(s, m, table)
            dropped = 0
            for partition, names in drops:
                dropped += _count(s.execute(delete(PartitionStatisticRow).where(
                    PartitionStatisticRow.table_id == table_id, PartitionStatisticRow.partition_name == partition,
                    PartitionStatisticRow.name.in_(names))))
            return dropped > 0

        return self.store.write(work)

    # ------------------------------------------------------------------ helpers

    def _locked_table(self, s: Session, m: str, table: MetadataObject) -> int:
        lock = None if disabled_for_test("statistics_row_lock") else "update"  # TEST-ONLY switch
        return objects.resolve(self.store, s, m, table, lock=lock).id


def _upsert(s: Session, existing: dict[str, Any], values: dict[str, Any], user: str,
            new: Callable[..., StatisticRow]) -> None:
    """Update the statistics that exist (`existing`, by name), insert the others with `new(name=...)`."""
    when = now_iso()
    for name, value in values.items():
        row = existing.get(name)
        if row is None:
            row = new(name=name)
            row.value, row.version = value, 1
            stamp(row, user, when)
            s.add(row)
        else:
            row.value = value
            touch(row, user, when)
    s.flush()


def _check_totals(s: Session, model: type[StatisticRow], table_id: int, most: int, most_chars: int,
                  what: str) -> None:
    """After the upsert, in its transaction (the table row is locked, so no concurrent update of this
    table can pass the limit alongside): refuse the update, rolling it back, when the table now has more
    than `most` rows or more than `most_chars` characters of JSON values."""
    count, chars = s.execute(select(func.count(), func.coalesce(func.sum(func.length(model.value)), 0))
                             .where(model.table_id == table_id)).one()
    if count > most:
        raise errors.IllegalArgument(f"this update would give the table {count} {what}; the limit is {most}")
    if chars > most_chars:
        raise errors.IllegalArgument(f"this update would give the table {chars} characters of {what} values; "
                                     f"the limit is {most_chars}")


def _count(result: Any) -> int:
    """Rows a DELETE removed."""
    return int(cast(CursorResult[Any], result).rowcount)
