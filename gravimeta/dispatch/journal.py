"""Journalled connector operations and their repair (DESIGN.md §6 and §9, docs/consistency.md).

A structural schema/table operation runs, inside the coordinator's structural scope, as:
  1. intent: one store transaction checks the store's preconditions and records the operation;
  2. engine: the idempotent connector call;
  3. store:  one transaction applies the change and deletes the intent. When the store already shows the
             change, the intent says who made it: gone means a repair of this intent did (the request's
             own change: answer it), still open means another operation did, so the request answers as
             if it had come after that one (409 XAlreadyExists, 404 for a rename, `dropped: false`).
A refusal by the engine (a 4xx-class error) deletes the intent and is returned as is. Any other engine
failure leaves the intent and becomes ConnectionFailed (502) saying the outcome is unknown; a crash
leaves it as well. The repair asks the engine what it really has and rolls the store forward
(APPLIED) or drops the intent (NOT_APPLIED, once the intent is older than the settle time, so that a
call still hanging in the engine cannot land after it was undone). It runs before every structural
operation for the intents under that scope, and for all scopes in `repair_pending()` (`gravimeta repair`).

A catalog whose connector is process-local (the memory provider: its engine only mirrors the store and
ends with the process) has nothing for a journal to repair: its operations run whole in one store
transaction, store first, then the mirror (Operation.direct), and never record an intent.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from sqlalchemy import delete
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.paths import scope_path
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use_in
from gravimeta.dispatch.intents import APPLIED, NOT_APPLIED, OPERATIONS, Applied, Payload
from gravimeta.entities import NameIdentifier
from gravimeta.store import EntityStore, guard
from gravimeta.store.journal import STUCK, Intent, OperationJournal, operation_journal

log = logging.getLogger(__name__)

#: how old an intent must be before "the engine does not have it" is taken as final (longer than any
#: connector call may still be running in the engine after its client gave up)
DEFAULT_SETTLE_S = 30.0
#: store errors that mean a roll-forward cannot be applied as journalled (a human must look)
_UNAPPLIABLE = (errors.NotFound, errors.AlreadyExists, errors.IllegalArgument, errors.NonEmpty)


@dataclass
class _FirstStep:
    """What the first store transaction of an operation did."""

    connector: Connector = field(default=None)  # type: ignore[assignment]  # set by its prelude
    intent: Intent | None = None  # journalled: the intent it recorded (None: nothing to do)
    left_open: list[Intent] = field(default_factory=list)  # open intents it found instead
    result: Any = None  # process-local: the operation's answer (it ran whole)


class Reconciler:
    """Runs journalled operations and repairs the ones left open."""

    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 settle_s: float = DEFAULT_SETTLE_S):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.journal = OperationJournal(store)
        self.settle_ms = int(settle_s * 1000)

    # ------------------------------------------------------------------ running an operation

    def run(self, scope: NameIdentifier, m: str, c: str, operation: str, payload: Payload,
            check: Callable[[Session], dict[str, Any] | None],
            refuse: Callable[[Connector], None] | None = None) -> Any:
        """Intent, engine, store (or, for a process-local connector, the whole operation in one store
        transaction: Operation.direct); call inside coordinator.run_structural(scope). None when there
        was nothing to do: `check` found nothing, or the drop found the object already gone from the
        store. `refuse(connector)` may reject the request for what the catalog's connector cannot do."""
        first = self._first_step(scope_path(scope), m, c, operation, payload, check, refuse)
        if first.intent is None:
            return first.result
        connector, intent = first.connector, first.intent
        op = OPERATIONS[operation]
        try:
            op.engine(connector, intent.payload)
        except errors.GravitinoError as exc:
            if exc.http_status < 500:  # the engine refused: nothing happened anywhere
                self.journal.discard(intent.id)
                raise
            self._note_failure(intent, exc)
            raise errors.ConnectionFailed(
                f"{exc.message.rstrip('.')}. The outcome of this {op.describe} is unknown: gravimeta recorded "
                f"it as pending operation {intent.id} and will reconcile its metadata with the engine"
            ) from exc
        # any other exception (a connector bug) propagates as it is; the intent stays for the repair
        result, already = self._apply(intent, last=True)
        if already is not None and self._end(intent):
            # the store has the change but this intent was still open: ANOTHER operation made it (a repair
            # that rolled this intent forward would have ended it in the same transaction). The engine
            # agrees with the store (docs/consistency.md §3.1), so nothing is left to repair.
            raise already
        return result

    def _note_failure(self, intent: Intent, exc: errors.GravitinoError) -> None:
        try:
            self.journal.note(intent.id, f"engine call failed: {exc.message}")
        except errors.GravitinoError:  # the detail is for operators; the engine's error matters more
            log.exception("could not note the failure of intent %s", intent.id)

    def _apply(self, intent: Intent, last: bool = False) -> Applied:
        """The store step, ending the intent in the same transaction unless `already` (see intents.py).
        `last`: the operation's own apply step, its last store write (the claim may end with it)."""
        with self.journal.finishing(intent.id, last):
            return OPERATIONS[intent.operation].apply(self.store, intent.payload)

    def _end(self, intent: Intent) -> bool:
        """Delete the intent; whether it was still open (no repair had ended it)."""
        def work(s: Session) -> bool:
            deleted = s.execute(delete(operation_journal).where(operation_journal.c.id == intent.id))
            return cast(CursorResult[Any], deleted).rowcount == 1

        return self.store.write(work)

    def _first_step(self, path: str, m: str, c: str, operation: str, payload: Payload,
                    check: Callable[[Session], dict[str, Any] | None],
                    refuse: Callable[[Connector], None] | None) -> _FirstStep:
        """The operation's first store transaction. Intents that earlier operations left open under
        `path` come first (the next claimant's duty): the transaction then ends without writing
        anything, they are repaired, and it runs once more without looking again (what stays open,
        e.g. an unreachable engine, does not block the operation; the request that follows will try
        again)."""
        first = self._try_first_step(path, m, c, operation, payload, check, refuse, True)
        if first.left_open:
            self._repair_all(first.left_open)
            first = self._try_first_step(path, m, c, operation, payload, check, refuse, False)
        return first

    def _try_first_step(self, path: str, m: str, c: str, operation: str, payload: Payload,
                        check: Callable[[Session], dict[str, Any] | None],
                        refuse: Callable[[Connector], None] | None, look_for_open: bool) -> _FirstStep:
        """ONE store transaction: check that the metalake and catalog are in use and pick the catalog's
        connector (reads that run before the claim's fence check, EntityStore.write's prelude). Then,
        for a process-local connector, the whole operation (Operation.direct: no journal, and the
        claim may end with this transaction). For any other connector, the intent step: look for open
        intents under `path` (first, in the prelude), run the store's `check` and record the intent.
        That needs a claim that lasts across transactions (coordinator.require_lasting_claim)."""
        first = _FirstStep()

        def look(s: Session) -> None:
            first.connector = connector = self.connectors.for_catalog(catalog_in_use_in(s, m, c))
            if refuse is not None:
                refuse(connector)
            if connector.process_local:
                return
            require_lasting_claim()
            if look_for_open:
                first.left_open = self.journal.pending_in(s, path, self.settle_ms)

        def work(s: Session) -> None:
            if first.connector.process_local:
                first.result = OPERATIONS[operation].direct(self.store, s, first.connector, payload)
            elif not first.left_open:
                extra = check(s)
                if extra is not None:
                    first.intent = self.journal.insert_in(s, path, operation, {**payload, **extra})

        with guard.last_write(lambda: first.connector.process_local):
            self.store.write(work, prelude=look)
        return first

    # ------------------------------------------------------------------ repair

    def repair_pending(self, settle_s: float | None = None) -> Counter[str]:
        """Repair every open intent, each under a claim on its own scope (reclaimer, `gravimeta repair`).
        Returns how many ended in each outcome."""
        settle_ms = self.settle_ms if settle_s is None else int(settle_s * 1000)
        outcomes: Counter[str] = Counter()
        for path in sorted({i.scope_path for i in self.journal.pending()}):
            scope = NameIdentifier(tuple(path.strip("/").split("/")))
            try:
                outcomes += self.coordinator.run_structural(scope, partial(self._repair_scope, path, settle_ms))
            except (errors.ScopeBusy, errors.FenceLost) as exc:
                log.warning("journal repair of %s deferred: %s", path, exc.message)
                outcomes["deferred"] += 1
        return outcomes

    def _repair_scope(self, path: str, settle_ms: int) -> Counter[str]:
        return self._repair_all(self.journal.pending(path, settle_ms))

    def _repair_all(self, intents: list[Intent]) -> Counter[str]:
        return Counter(self._repair(intent) for intent in intents)

    def _repair(self, intent: Intent) -> str:
        p, op = intent.payload, OPERATIONS[intent.operation]
        try:
            catalog = self.store.get_catalog(p["m"], p["c"])
        except errors.NotFound:
            log.warning("journal: dropping intent %s (%s): catalog %s.%s is gone", intent.id, op.describe,
                        p["m"], p["c"])
            self.journal.discard(intent.id)
            return "discarded"
        connector = self.connectors.for_catalog(catalog)
        if not connector.process_local:
            require_lasting_claim()  # observe, then apply: two steps the claim must cover together
        try:
            seen = op.observe(connector, p)
        except errors.GravitinoError as exc:
            self.journal.note(intent.id, f"engine not observable: {exc.message}")
            return "unreachable"
        if seen == APPLIED:
            try:
                _, already = self._apply(intent)
            except _UNAPPLIABLE as exc:
                return self._stuck(intent, f"engine has the change, the store refuses it: {exc.message}")
            if already is not None:  # made by another operation (or this intent's request just finished)
                if not intent.settled:
                    return "waiting"  # its request may still be running: it must find the intent to answer 409
                self.journal.discard(intent.id)
            log.info("journal: rolled %s (intent %s) forward", op.describe, intent.id)
            return "rolled forward"
        if seen == NOT_APPLIED:
            if not intent.settled:
                return "waiting"
            self.journal.discard(intent.id)
            log.info("journal: rolled %s (intent %s) back", op.describe, intent.id)
            return "rolled back"
        return self._stuck(intent, "engine shows neither the state before nor the state after")

    def _stuck(self, intent: Intent, detail: str) -> str:
        log.error("journal: intent %s (%s) is stuck: %s", intent.id, intent.operation, detail)
        self.journal.note(intent.id, detail, state=STUCK)
        return "stuck"
