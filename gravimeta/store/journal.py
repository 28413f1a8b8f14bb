"""Persistence of the operation journal (gm_operation_journal, alembic/versions/0003): the intent of
a structural connector operation, recorded before the engine call and deleted in the same transaction
that applies the store change. The repair that consumes leftover rows lives in gravimeta/dispatch/journal.py.

Every write goes through EntityStore.write, so it runs behind the claim's fence guard like any other
store change of the operation.
"""

from __future__ import annotations

import json
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

from gravimeta.concurrency.db_clock import db_now, db_now_plus, dialect_of
from gravimeta.concurrency.paths import related_in_sql
from gravimeta.store import guard
from gravimeta.store.entity_store import EntityStore

PENDING, STUCK = "pending", "stuck"

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
)


@dataclass(frozen=True)
class Intent:
    """One journal row. `settled`: older than the settle time asked for when it was read."""

    id: int
    scope_path: str
    operation: str
    payload: dict[str, Any]
    state: str = PENDING
    holder: str = ""
    detail: str | None = None
    created_at: str = ""
    settled: bool = False


def this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class OperationJournal:
    def __init__(self, store: EntityStore):
        self.store = store
        self.dialect = dialect_of(store.engine)

    def insert_in(self, s: Session, scope_path: str, operation: str, payload: dict[str, Any]) -> Intent:
        """Record an intent inside the caller's write transaction (the one that checked the store)."""
        result = cast(CursorResult[Any], s.execute(insert(operation_journal).values(
            scope_path=scope_path, operation=operation, payload=json.dumps(payload), state=PENDING,
            holder=this_process(), created_at=db_now(self.dialect),
        )))
        key = result.inserted_primary_key
        assert key is not None, "an INSERT always reports its primary key"
        return Intent(int(key[0]), scope_path, operation, payload)

    @contextmanager
    def finishing(self, intent_id: int, last: bool = False) -> Iterator[None]:
        """Store writes inside this block also delete the intent, in their own transaction (after the
        fence check), so the store change and the end of the intent commit or roll back together.
        `last`: the block's one store write is the operation's last (guard.last_write())."""
        outer = guard.current_guard()

        def hook(s: Session) -> None:
            if outer is not None:
                outer(s)
            s.execute(delete(operation_journal).where(operation_journal.c.id == intent_id))

        with guard.installed(hook), (guard.last_write() if last else nullcontext()):
            yield

    def discard(self, intent_id: int) -> None:
        """Delete the intent (the operation did not happen, or its store change is already there)."""
        self.store.write(lambda s: s.execute(delete(operation_journal).where(operation_journal.c.id == intent_id)))

    def note(self, intent_id: int, detail: str, state: str | None = None) -> None:
        """Record what the last repair attempt saw (and mark the intent stuck when it cannot decide)."""
        values: dict[str, Any] = {"detail": detail[:4000]}
        if state is not None:
            values["state"] = state
        self.store.write(lambda s: s.execute(
            update(operation_journal).where(operation_journal.c.id == intent_id).values(**values)))

    def pending(self, related_to: str | None = None, settle_ms: int = 0) -> list[Intent]:
        """The intents still open, oldest first; with `related_to`, only those recorded under that
        scope path, an ancestor or a descendant of it (the ones a claim on it excludes from running)."""
        with self.store.snapshot() as s:
            return self.pending_in(s, related_to, settle_ms)

    def pending_in(self, s: Session, related_to: str | None = None, settle_ms: int = 0) -> list[Intent]:
        """`pending` inside the caller's transaction."""
        j = operation_journal.c
        query = select(j.id, j.scope_path, j.operation, j.payload, j.state, j.holder, j.detail, j.created_at,
                       (j.created_at <= db_now_plus(self.dialect, -settle_ms)).label("settled"))
        if related_to is not None:
            query = query.where(related_in_sql(j.scope_path, related_to))
        rows = s.execute(query.order_by(j.id)).all()
        return [Intent(r.id, r.scope_path, r.operation, json.loads(r.payload), r.state, r.holder, r.detail,
                       str(r.created_at), bool(r.settled)) for r in rows]
