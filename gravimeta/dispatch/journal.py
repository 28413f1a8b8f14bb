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
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import delete
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.paths import scope_path
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.guarded import catalog_in_use_in
from gravimeta.dispatch.intents import APPLIED, NOT_APPLIED, OPERATIONS, Applied, Payload
from gravimeta.entities import NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.journal import STUCK, Intent, OperationJournal, operation_journal

log = logging.getLogger(__name__)

#: how old an intent must be before "the engine does not have it" is taken as final (longer than any
#: connector call may still be running in the engine after its client gave up)
DEFAULT_SETTLE_S = 30.0
#: store errors that mean a roll-forward cannot be applied as journalled (a human must look)
_UNAPPLIABLE = (errors.NotFound, errors.AlreadyExists, errors.IllegalArgument, errors.NonEmpty)


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
        """Intent, engine, store; call inside coordinator.structural(scope). None when there was nothing
        to do: `check` found nothing, or the drop found the object already gone from the store.
        `refuse(connector)` may reject the request for what the catalog's connector cannot do."""
        connector, intent = self._record(scope_path(scope), m, c, operation, payload, check, refuse)
        if intent is None:
            return None
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

    def _record(self, path: str, m: str, c: str, operation: str, payload: Payload,
                check: Callable[[Session], dict[str, Any] | None],
                refuse: Callable[[Connector], None] | None) -> tuple[Connector, Intent | None]:
        """The intent step, in ONE store transaction: check that the metalake and catalog are in use,
        pick the catalog's connector, look for intents that earlier operations left open under `path`
        (these reads come before the claim's fence check), run the store's `check` and record the
        intent. Open intents come first (the next claimant's duty): the transaction then ends without
        writing anything, they are repaired, and the step runs once more without looking again (what
        stays open, e.g. an unreachable engine, does not block the operation; the request that
        follows will try again)."""
        connector, intent, left_open = self._intent_step(path, m, c, operation, payload, check, refuse, True)
        if left_open:
            self._repair_all(left_open)
            connector, intent, _ = self._intent_step(path, m, c, operation, payload, check, refuse, False)
        return connector, intent

    def _intent_step(self, path: str, m: str, c: str, operation: str, payload: Payload,
                     check: Callable[[Session], dict[str, Any] | None],
                     refuse: Callable[[Connector], None] | None,
                     look_for_open: bool) -> tuple[Connector, Intent | None, list[Intent]]:
        """One try of the intent step: (connector, intent, the open intents found instead)."""
        found: dict[str, Any] = {"open": []}

        def look(s: Session) -> None:  # reads only: they run before the claim's guard locks its row
            found["connector"] = connector = self.connectors.for_catalog(catalog_in_use_in(s, m, c))
            if refuse is not None:
                refuse(connector)
            if look_for_open:
                found["open"] = self.journal.pending_in(s, path, self.settle_ms)

        def checked(s: Session) -> dict[str, Any] | None:
            return None if found["open"] else check(s)

        intent = self.journal.record(path, operation, payload, checked, prelude=look)
        return found["connector"], intent, found["open"]

    # ------------------------------------------------------------------ repair

    def repair_pending(self, settle_s: float | None = None) -> Counter[str]:
        """Repair every open intent, each under a claim on its own scope (reclaimer, `gravimeta repair`).
        Returns how many ended in each outcome."""
        settle_ms = self.settle_ms if settle_s is None else int(settle_s * 1000)
        outcomes: Counter[str] = Counter()
        for path in sorted({i.scope_path for i in self.journal.pending()}):
            scope = NameIdentifier(tuple(path.strip("/").split("/")))
            try:
                with self.coordinator.structural(scope, LockType.WRITE):
                    outcomes += self._repair_all(self.journal.pending(path, settle_ms))
            except (errors.ScopeBusy, errors.FenceLost) as exc:
                log.warning("journal repair of %s deferred: %s", path, exc.message)
                outcomes["deferred"] += 1
        return outcomes

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
        try:
            seen = op.observe(self.connectors.for_catalog(catalog), p)
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
