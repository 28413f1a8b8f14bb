"""Statistic operations (Gravitino's StatisticManager): tables only (405 for other objects, as in 1.3),
names must start with `custom-` (IllegalStatisticName, 400). Reads READ-lock the table's identifier,
updates and drops WRITE-lock it (in-process, as Gravitino does); across replicas the store's lock of
the table row orders them (gravimeta/store/statistics.py)."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.entities import NameIdentifier, Statistic
from gravimeta.metadata_objects import MetadataObject
from gravimeta.store import EntityStore
from gravimeta.store.statistics import ALL, Page, PartitionRange, StatisticStore

CUSTOM_PREFIX = "custom-"


def check_names(names: Iterable[str]) -> None:
    for name in names:
        if not name.startswith(CUSTOM_PREFIX):
            raise errors.IllegalStatisticName(f"Statistic name must start with {CUSTOM_PREFIX} , but got: {name}")


def require_table(obj: MetadataObject, what: str) -> None:
    if obj.type != "table":
        raise errors.UnsupportedOperation(f"{what} is only supported for tables now.")


class StatisticDispatcher:
    def __init__(self, store: EntityStore, coordinator: Coordinator):
        self.statistics, self.coordinator = StatisticStore(store), coordinator

    def _lock(self, m: str, table: MetadataObject, lock_type: LockType) -> AbstractContextManager[None]:
        return self.coordinator.local(NameIdentifier((m, *table.names)), lock_type)

    def list_statistics(self, m: str, table: MetadataObject, page: Page = ALL) -> list[Statistic]:
        require_table(table, "Listing statistics")
        with self._lock(m, table, LockType.READ):
            return self.statistics.list_table(m, table, page)

    def update_statistics(self, m: str, table: MetadataObject, updates: dict[str, Any], user: str) -> None:
        require_table(table, "Update statistics")
        check_names(updates)
        with self._lock(m, table, LockType.WRITE):
            self.statistics.update_table(m, table, updates, user)

    def drop_statistics(self, m: str, table: MetadataObject, names: list[str]) -> bool:
        require_table(table, "Dropping statistics")
        with self._lock(m, table, LockType.WRITE):
            return self.statistics.drop_table(m, table, names)

    def list_partitions(self, m: str, table: MetadataObject, span: PartitionRange,
                        page: Page = ALL) -> list[tuple[str, list[Statistic]]]:
        require_table(table, "Listing partition statistics")
        with self._lock(m, table, LockType.READ):
            return self.statistics.list_partitions(m, table, span, page)

    def update_partitions(self, m: str, table: MetadataObject, updates: list[tuple[str, dict[str, Any]]],
                          user: str) -> None:
        require_table(table, "Updating partition statistics")
        for _, values in updates:
            check_names(values)
        with self._lock(m, table, LockType.WRITE):
            self.statistics.update_partitions(m, table, updates, user)

    def drop_partitions(self, m: str, table: MetadataObject, drops: list[tuple[str, list[str]]]) -> bool:
        require_table(table, "Dropping partition statistics")
        with self._lock(m, table, LockType.WRITE):
            return self.statistics.drop_partitions(m, table, drops)
