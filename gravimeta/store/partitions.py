"""Partitions kept by the store, for catalogs whose connector keeps none of its own
(Connector.partitions == PARTITIONS_IN_STORE: `memory`, whose engine is a per-process mirror).

Why the store: a `memory` catalog's "engine" is a dict in each worker process, so a partition kept
there would be seen by one worker of one replica only, and lost with it. The store is what every
worker and replica reads, and it is already the authority for such catalogs (their tables too).

An add or drop runs under the table scope's claim (gravimeta/dispatch/partitions.py) as ONE store
transaction behind the claim's fence guard: the table row is locked FOR SHARE (a drop of the table
locks it FOR UPDATE, and its partitions go with its row: ON DELETE CASCADE), the unique
(table, name) key decides two racing adds (PartitionAlreadyExists). Nothing runs outside the store, so
there is nothing to repair after a crash: the transaction commits or it does not.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gravimeta import errors
from gravimeta.entities import Table
from gravimeta.partitions import Partition
from gravimeta.store import convert
from gravimeta.store.attached_models import PartitionRow, stamp
from gravimeta.store.entity_store import EntityStore, _flush_unique, now_iso


class PartitionStore:
    def __init__(self, store: EntityStore):
        self.store = store

    def list_in(self, s: Session, m: str, c: str, sc: str, t: str) -> list[Partition]:
        table = self.store.table_row(s, m, c, sc, t)
        rows = s.scalars(select(PartitionRow).where(PartitionRow.table_id == table.id).order_by(PartitionRow.name))
        return [dict(r.definition) for r in rows]

    def get_in(self, s: Session, m: str, c: str, sc: str, t: str, name: str) -> Partition:
        table = self.store.table_row(s, m, c, sc, t)
        row = s.scalar(select(PartitionRow).where(PartitionRow.table_id == table.id, PartitionRow.name == name))
        if row is None:
            raise errors.NoSuchPartition(f"Partition {name} does not exist in table {m}.{c}.{sc}.{t}")
        return dict(row.definition)

    def add_in(self, s: Session, m: str, c: str, sc: str, t: str, check: Callable[[Table], Partition],
               user: str) -> Partition:
        """Insert the partition `check(table)` returns (it raises for one the table does not allow)."""
        row = self.store.table_row(s, m, c, sc, t, lock="share")
        partition = check(convert.table_of(row, []))
        added = PartitionRow(table_id=row.id, name=partition["name"], definition=partition, version=1)
        stamp(added, user, now_iso())
        s.add(added)
        _flush_unique(s, errors.PartitionAlreadyExists(
            f"Partition {partition['name']} already exists in table {m}.{c}.{sc}.{t}"))
        return partition

    def drop_in(self, s: Session, m: str, c: str, sc: str, t: str, name: str) -> bool:
        row = self.store.table_row(s, m, c, sc, t, lock="share")
        result = s.execute(delete(PartitionRow).where(PartitionRow.table_id == row.id, PartitionRow.name == name))
        return bool(getattr(result, "rowcount", 0))
