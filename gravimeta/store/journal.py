"""Persistence of the operation journal (gm_operation_journal, alembic/versions/0003 and 0008): the intent
of a structural connector operation, recorded before the engine call and deleted in the same transaction
that applies the store change. The repair that consumes leftover rows lives in gravimeta/dispatch/repair.py;
what a payload means (a typed record) in gravimeta/dispatch/intent_records.py: here it is opaque text.

Writes go through EntityStore.write, so they run behind the claim's fence guard like any other store
change of the operation, except `withdraw`: the deletion of an intent whose engine step provably did
not happen, which is safe without a claim (nobody may ever roll such an intent forward) and must work
after the claim was lost (docs/consistency.md §2).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select

from gravimeta.capacity import check_json_size
from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.concurrency.paths import (
    is_ancestor,
    related,
    related_in_sql,
    related_in_sql_bound,
    related_sql_values,
)
from gravimeta.store import guard
from gravimeta.store.entity_store import EntityStore
from gravimeta.store.models import CatalogRow, MetalakeRow

PENDING, STUCK = "pending", "stuck"
DETAIL_LIMIT = 4000

operation_journal = Table(
    "gm_operation_journal", MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("scope_path", String(600), nullable=False),
    Column("operation", String(40), nullable=False),
    Column("payload", Text, nullable=False),
    Column("state", String(16), nullable=False),
    Column("holder", String(200), nullable=False),
    Column("detail", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("catalog_id", Integer),
    Column("observed_at", DateTime(timezone=True)),
    sqlite_autoincrement=True,  # ids are never reused (alembic/versions/0008)
)


class IntentSettled(Exception):
    """A repair's apply found its intent already ended by someone else (or its catalog no longer under
    the recorded names): the transaction rolled back, nothing was applied."""


@dataclass(frozen=True)
class Intent:
    """One journal row. `settled`: older than the settle time asked for when it was read. `payload`:
    the record's text (gravimeta/dispatch/intent_records.decode)."""

    id: int
    scope_path: str
    operation: str
    payload: str
    catalog_id: int | None = None
    state: str = PENDING
    holder: str = ""
    detail: str | None = None
    created_at: str = ""
    settled: bool = False
    observed_at: str | None = None


def this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def printable(text: str) -> str:
    """`text` as any database column holds it: NUL and lone surrogates escaped, at most DETAIL_LIMIT
    characters (an operator note must never be refused for the value it reports)."""
    escaped = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
    return escaped[:DETAIL_LIMIT]


class OperationJournal:
    def __init__(self, store: EntityStore):
        self.store = store
        self.dialect = dialect_of(store.engine)
        self._pending_queries: dict[tuple[bool, int], Select[Any]] = {}

    def insert_in(self, s: Session, scope_path: str, operation: str, catalog_id: int, payload: str) -> Intent:
        """Record an intent inside the caller's write transaction (the one that checked the store)."""
        check_json_size(payload, f"The journal entry of this {operation}")  # before the engine: a 400, not a pill
        result = cast(CursorResult[Any], s.execute(insert(operation_journal).values(
            scope_path=scope_path, operation=operation, payload=payload, state=PENDING, catalog_id=catalog_id,
            holder=this_process(), created_at=db_now(self.dialect),
        )))
        key = result.inserted_primary_key
        assert key is not None, "an INSERT always reports its primary key"
        return Intent(int(key[0]), scope_path, operation, payload, catalog_id)

    @contextmanager
    def finishing(self, intent_id: int, last: bool = False,
                  strict: tuple[int, str, str] | None = None) -> Iterator[None]:
        """Store writes inside this block also delete the intent, in their own transaction (after the
        fence check), so the store change and the end of the intent commit or roll back together.
        `last`: the block's one store write is the operation's last (guard.last_write()).
        `strict` = (catalog id, metalake, catalog), for a repair: the write must delete the row and the
        id must still carry those names, otherwise IntentSettled and the transaction rolls back."""
        outer = guard.current_guard()

        def hook(s: Session) -> None:
            if outer is not None:
                outer(s)
            deleted = cast(CursorResult[Any], s.execute(
                delete(operation_journal).where(operation_journal.c.id == intent_id))).rowcount
            if strict is None:
                return
            if deleted != 1:
                raise IntentSettled(f"intent {intent_id} was ended by another operation")
            if catalog_id_in(s, strict[1], strict[2]) != strict[0]:
                raise IntentSettled(f"catalog {strict[1]}.{strict[2]} is no longer catalog #{strict[0]}")

        with guard.installed(hook), (guard.last_write() if last else nullcontext()):
            yield

    def discard(self, intent_id: int) -> None:
        """Delete the intent (the operation did not happen, or its store change is already there)."""
        self.store.write(lambda s: s.execute(delete(operation_journal).where(operation_journal.c.id == intent_id)))

    def withdraw(self, intent_id: int) -> bool:
        """Delete the intent WITHOUT the claim's guard; whether it was still open. Only for an intent
        whose engine step provably did not happen (refused, or never sent)."""
        def work(s: Session) -> bool:
            deleted = s.execute(delete(operation_journal).where(operation_journal.c.id == intent_id))
            return cast(CursorResult[Any], deleted).rowcount == 1

        with guard.installed(None), guard.joining(None):
            return self.store.write(work)

    def note(self, intent_id: int, detail: str, state: str | None = None) -> None:
        """Record what the last repair attempt saw (and mark the intent stuck when it cannot decide)."""
        values: dict[str, Any] = {"detail": printable(detail)}
        if state is not None:
            values["state"] = state
        self.store.write(lambda s: s.execute(
            update(operation_journal).where(operation_journal.c.id == intent_id).values(**values)))

    def mark_observed(self, intent_id: int) -> None:
        """Remember (once) when a repair first held a claim related to the intent's scope."""
        j = operation_journal.c
        self.store.write(lambda s: s.execute(
            update(operation_journal).where(j.id == intent_id, j.observed_at.is_(None))
            .values(observed_at=db_now(self.dialect))))

    def observed_for(self, intent_id: int, window_ms: int) -> bool:
        """Whether a repair first held the intent's scope at least `window_ms` ago (database clock)."""
        j = operation_journal.c
        with self.store.snapshot() as s:
            return bool(s.scalar(select(j.id).where(
                j.id == intent_id, j.observed_at <= db_now_plus(self.dialect, -int(window_ms)))))

    def relabel_in(self, s: Session, old_prefix: str, new_prefix: str, catalog_id: int | None = None) -> int:
        """Inside the caller's transaction (a catalog or metalake rename, which holds the claim on the
        parent of the renamed scope): move the open intents under `old_prefix` (of catalog `catalog_id`
        only, if given) to `new_prefix`. Returns how many moved."""
        j = operation_journal.c
        query = select(j.id, j.scope_path).where(related_in_sql(j.scope_path, old_prefix))
        if catalog_id is not None:
            query = query.where(j.catalog_id == catalog_id)
        moved = 0
        for row in s.execute(query).all():
            if row.scope_path == old_prefix or is_ancestor(old_prefix, row.scope_path):
                new_path = new_prefix + row.scope_path[len(old_prefix):]
                s.execute(update(operation_journal).where(j.id == row.id).values(scope_path=new_path))
                moved += 1
        return moved

    @contextmanager
    def following_rename(self, old_prefix: str, new_prefix: str,
                         catalog: tuple[str, str] | None = None) -> Iterator[None]:
        """Store writes inside this block (a catalog or metalake rename) also move the open intents from
        `old_prefix` to `new_prefix`, in the same transaction; for a catalog rename, `catalog` =
        (metalake, old name) limits them to that catalog's id (a namesake's intents stay)."""
        outer = guard.current_guard()

        def hook(s: Session) -> None:
            if outer is not None:
                outer(s)
            catalog_id = None if catalog is None else catalog_id_in(s, *catalog)
            if catalog is None or catalog_id is not None:
                self.relabel_in(s, old_prefix, new_prefix, catalog_id)

        with guard.installed(hook):
            yield

    def move(self, intent_id: int, scope_path: str) -> None:
        """Record the intent under another scope path (its catalog was renamed)."""
        self.store.write(lambda s: s.execute(
            update(operation_journal).where(operation_journal.c.id == intent_id).values(scope_path=scope_path)))

    def pending(self, related_to: str | None = None, settle_ms: int = 0) -> list[Intent]:
        """The intents still open, oldest first; with `related_to`, only those recorded under that
        scope path, an ancestor or a descendant of it (the ones a claim on it excludes from running)."""
        with self.store.snapshot() as s:
            return self.pending_in(s, related_to, settle_ms)

    def pending_in(self, s: Session, related_to: str | None = None, settle_ms: int = 0) -> list[Intent]:
        """`pending` inside the caller's transaction. The SQL filter is a superset on SQLite (its LIKE
        ignores ASCII case), so the rows are checked again with the exact, case-sensitive relation.
        Every structural operation runs this before its claim's fence check: the statement is built
        once per settle time and run on the session's connection (no ORM execution around a Core read)."""
        query = self._pending_query(related_to is not None, settle_ms)
        params = {} if related_to is None else related_sql_values(related_to)
        rows = s.connection().execute(query, params).all()
        return [Intent(r.id, r.scope_path, r.operation, r.payload, r.catalog_id, r.state, r.holder, r.detail,
                       str(r.created_at), bool(r.settled), None if r.observed_at is None else str(r.observed_at))
                for r in rows if related_to is None or related(r.scope_path, related_to)]

    def _pending_query(self, filtered: bool, settle_ms: int) -> Select[Any]:
        """The open-intents SELECT (with `filtered`: only rows related to a path, whose values
        related_sql_values gives), built once per settle time."""
        key = (filtered, int(settle_ms))
        query = self._pending_queries.get(key)
        if query is None:
            j = operation_journal.c
            query = select(j.id, j.scope_path, j.operation, j.payload, j.catalog_id, j.state, j.holder, j.detail,
                           j.created_at, (j.created_at <= db_now_plus(self.dialect, -settle_ms)).label("settled"),
                           j.observed_at)
            if filtered:
                query = query.where(related_in_sql_bound(j.scope_path))
            query = self._pending_queries[key] = query.order_by(j.id)
        return query


def catalog_id_in(s: Session, metalake: str, catalog: str) -> int | None:
    """The id of the catalog now named metalake.catalog (None: there is none)."""
    return s.scalar(select(CatalogRow.id).join(MetalakeRow, CatalogRow.metalake_id == MetalakeRow.id)
                    .where(MetalakeRow.name == metalake, CatalogRow.name == catalog))


def catalog_names(store: EntityStore, catalog_id: int) -> tuple[str, str] | None:
    """(metalake, catalog) names of the catalog with this id now; None when it is gone."""
    with store.snapshot() as s:
        row = s.execute(select(MetalakeRow.name, CatalogRow.name)
                        .join(MetalakeRow, CatalogRow.metalake_id == MetalakeRow.id)
                        .where(CatalogRow.id == catalog_id)).first()
    return None if row is None else (row[0], row[1])
