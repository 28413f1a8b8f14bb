"""Journalled connector operations (docs/consistency.md §2).

A structural schema/table operation runs, inside the coordinator's structural scope, as:
  0. repair: the intents earlier operations left open under its scope (repair.py), whatever the catalog;
  1. intent: one store transaction checks the store's preconditions and records the operation as a
             typed record (intent_records.py) naming its catalog by id;
  2. engine: the idempotent connector call through the engine door (engine_door.py), fenced by the
             identity key of what the claim covers, started only while the claim is trusted and bounded
             by what is left of it;
  3. store:  one transaction applies the change and deletes the intent. When the store already shows the
             change, the intent says who made it: gone means a repair of this intent did (the request's
             own change: answer it), still open means another operation did, so the request answers as
             if it had come after that one (409 XAlreadyExists, 404 for a rename, `dropped: false`).

Every answer is true (docs/consistency.md §2, "What the client is told"):
- the engine provably did not apply the call (a 4xx-class refusal, StaleFence, the claim ran out before
  it was sent, EngineUnreachable): the intent is withdrawn without the claim (safe: nothing may roll it
  forward).
  Withdrawn: the refusal as is (FenceLost 409 for a stale fence: not saved, retry is safe). Already
  gone (a repair settled it, we cannot tell which way): OutcomeUnknown;
- any other engine failure, or the store step failing after the engine call (FenceLost, the database
  unavailable, a bounded row-lock wait running out, which elsewhere is a ScopeBusy "nothing was
  changed"): the intent stays for the repair, which may still roll it forward: OutcomeUnknown (502,
  "outcome unknown, pending operation N"), never "not saved";
- the store proves it cannot hold the change (StoreRefused): the engine step is undone and the intent
  ends: StoreRefused (400). If the undo fails, the intent is marked stuck: OutcomeUnknown.

A catalog whose connector is process-local (memory) runs its operations whole in one store transaction
(Operation.direct, no intent), after settling any leftover intents under its scope (they belong to
another catalog: one dropped or renamed away).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy import delete
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from connectors.base import Connector
from gravimeta import errors, failpoints
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.concurrency.paths import scope_path
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache, ConnectorNotReady
from gravimeta.dispatch.engine_keys import identity_key
from gravimeta.dispatch.guarded import catalog_in_use_in
from gravimeta.dispatch.intent_records import Record, encode, placed
from gravimeta.dispatch.intents import Applied, Steps, steps
from gravimeta.dispatch.repair import Repairer
from gravimeta.dispatch.repair_preview import IntentPreview, RepairPreview
from gravimeta.entities import NameIdentifier
from gravimeta.store import EntityStore, guard
from gravimeta.store.journal import STUCK, Intent, OperationJournal, operation_journal

log = logging.getLogger(__name__)

#: how old an intent must be before "the engine does not have it" is taken as final when no claim is
#: held (distributed lock off): longer than any connector call may still be running in the engine
DEFAULT_SETTLE_S = 30.0
#: how many times an operation's first step makes its catalog's connector anew before it gives up (each
#: time the catalog's properties changed between the connector's making and the step's transaction)
READY_ATTEMPTS = 3
R = TypeVar("R", bound=Record)


def store_failure(exc: errors.StoreUnavailable | errors.ScopeBusy) -> str:
    """What failed in a store step that came after the engine call, without what the error's own message
    concludes ("nothing was changed", "retry later"): after the engine call that is untrue."""
    if isinstance(exc, errors.CommitOutcomeUnknown):
        return (f"the connection to the metadata database failed during the commit of store operation "
                f"{exc.operation}, and whether it committed could not be looked up")
    if isinstance(exc, errors.ScopeBusy):
        return "a row it needs stayed locked by another operation for longer than it could wait"
    if isinstance(exc, errors.StoreUnavailable) and exc.operation is not None:  # looked up: not committed
        return f"the metadata database failed during its commit; store operation {exc.operation} did not commit"
    return "the metadata database failed"


@dataclass
class _FirstStep:
    """What the first store transaction of an operation did."""

    connector: Connector = field(default=None)  # type: ignore[assignment]  # set by its prelude
    catalog_id: int = 0
    key: str = ""  # the identity key the operation's engine calls are fenced by
    record: Record | None = None  # journalled: the record it checked and recorded
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
        self.repairer = Repairer(store, coordinator, connectors, self.journal, self.settle_ms)

    def repair_pending(self, settle_s: float | None = None) -> Counter[str]:
        """Repair every open intent (`gravimeta repair`): Repairer.repair_pending (the engine door's
        guard on, as in a request)."""
        return self.repairer.repair_pending(settle_s)

    def preview_pending(self, settle_s: float | None = None) -> list[IntentPreview]:
        """What repair_pending would do with each open intent now, changing nothing (repair_preview.py:
        `gravimeta repair --dry-run`, /api/admin/repair-preview)."""
        return RepairPreview(self.store, self.coordinator, self.connectors, self.journal,
                             self.repairer).preview(settle_s)

    # ------------------------------------------------------------------ running an operation

    def run(self, scope: NameIdentifier, record: R, check: Callable[[Session, R], R | None],
            refuse: Callable[[Connector], None] | None = None) -> Any:
        """Intent, engine, store (or, for a process-local connector, the whole operation in one store
        transaction); call inside coordinator.run_structural(scope). `record` names its catalog by
        metalake and catalog name (its id is filled in here); `check(session, record)` checks the store's
        preconditions and returns the record with what it found, or None when there is nothing to do.
        None when there was nothing to do. `refuse(connector)` may reject the request for what the
        catalog's connector cannot do."""
        path = scope_path(scope)
        first = self._first_step(path, record, cast(Callable[[Session, Record], Record | None], check), refuse)
        if first.intent is None or first.record is None:
            return first.result
        connector, intent, record_ = first.connector, first.intent, first.record
        op = steps(record_)
        context = {"intent": intent.id, "scope": path, "operation": intent.operation}
        try:
            failpoints.hit("engine.before_call", **context)
            engine_door.change(lambda fence: op.engine(connector, record_, fence), record_.where.key,
                               intent=intent.id)
        except errors.GravitinoError as exc:
            failure = self._engine_failed(intent, op, exc)
            if failure is exc:  # the engine's own refusal: as it is (never "from" itself: a cycle)
                raise
            raise failure from exc
        # any other exception (a connector bug) propagates as it is; the intent stays for the repair
        try:
            failpoints.hit("engine.after_call", **context)
            result, already = self._apply(intent, record_)
        except errors.StoreRefused as exc:
            raise self._store_refused(intent, record_, connector, path, exc) from exc
        except errors.FenceLost as exc:  # its own message ("not saved; retry") would be untrue here
            raise self._unknown(intent, op, f"This operation's claim on {path} was taken over after the engine "
                                            f"call, before its store step (FenceLostException)") from exc
        except (errors.StoreUnavailable, errors.ScopeBusy) as exc:  # the database failed, or a bounded row-lock
            # wait ran out: the intent is still open and a repair may roll it forward. (The store step's own
            # refusals, e.g. a rename overtaken by a different one, keep their answers: docs/consistency.md §3.1.)
            raise self._unknown(intent, op, f"The store step of this {op.describe} failed after the engine "
                                            f"call ({store_failure(exc)})") from exc
        if already is not None and self._end(intent):
            # the store has the change but this intent was still open: ANOTHER operation made it (a repair
            # that rolled this intent forward would have ended it in the same transaction). The engine
            # agrees with the store (docs/consistency.md §3.1), so nothing is left to repair.
            raise already
        return result

    def _engine_failed(self, intent: Intent, op: Steps, exc: errors.GravitinoError) -> errors.GravitinoError:
        """The answer for an engine call that failed (see the module docstring)."""
        if isinstance(exc, errors.StaleFence | errors.EngineUnreachable) or exc.http_status < 500:  # not applied
            try:
                withdrawn = self.journal.withdraw(intent.id)
            except (errors.StoreUnavailable, errors.ScopeBusy) as failure:  # the intent may still be open, and a
                # repair settles it (a create the engine refused for a table it has: rolled forward if that table
                # has the create's columns, else left stuck): never "nothing was changed" nor the refusal as it is
                return self._unknown(intent, op, f"{exc.message.rstrip('.')}. Withdrawing its intent then failed "
                                                 f"({store_failure(failure)})")
            if not withdrawn:
                return errors.OutcomeUnknown(
                    f"{exc.message.rstrip('.')}. Meanwhile another operation's repair settled pending operation "
                    f"{intent.id} (this {op.describe}); its outcome is unknown here: look before retrying",
                    intent.id)
            if isinstance(exc, errors.StaleFence):
                return errors.FenceLost(f"{exc.message.rstrip('.')}. This {op.describe} was not saved; retry")
            return exc
        self._note(intent, f"engine call failed: {exc.message}")
        return self._unknown(intent, op, exc.message.rstrip("."))

    @staticmethod
    def _unknown(intent: Intent, op: Steps, why: str) -> errors.OutcomeUnknown:
        return errors.OutcomeUnknown(
            f"{why}. The outcome of this {op.describe} is unknown: gravimeta recorded it as pending operation "
            f"{intent.id} and will reconcile its metadata with the engine", intent.id)

    def _store_refused(self, intent: Intent, record: Record, connector: Connector, path: str,
                       refused: errors.StoreRefused) -> errors.GravitinoError:
        """The store cannot hold the change: undo the engine step and end the intent, so that one
        value can never keep the intent (and every later operation on its scope) failing."""
        op = steps(record)
        try:
            if op.undo is None:
                raise errors.UnsupportedOperation(f"a {op.describe} cannot be undone")
            undo = op.undo
            engine_door.change(lambda fence: undo(connector, record, fence), record.where.key, intent=intent.id)
        except errors.GravitinoError as exc:
            self._note(intent, f"the store refuses it ({refused.message}); undoing the engine step failed: "
                               f"{exc.message}", STUCK)
            return self._unknown(intent, op, f"{refused.message.rstrip('.')}; undoing the engine's change failed "
                                              f"({exc.message.rstrip('.')})")
        try:
            self.journal.discard(intent.id)
        except errors.GravitinoError:  # the engine is back to before: a repair rolls the intent back
            log.exception("could not end intent %s after undoing it", intent.id)
        return errors.StoreRefused(f"{refused.message.rstrip('.')}. The {op.describe} was undone in the catalog's "
                                   "engine; nothing was changed")

    def _note(self, intent: Intent, detail: str, state: str | None = None) -> None:
        try:
            self.journal.note(intent.id, detail, state)
        except errors.GravitinoError:  # the detail is for operators; the answer matters more
            log.exception("could not note on intent %s: %s", intent.id, detail)

    def _apply(self, intent: Intent, record: Record) -> Applied:
        """The operation's own store step, its last store write (the claim may end with it), ending the
        intent in the same transaction unless `already` (see intents.py)."""
        with self.journal.finishing(intent.id, last=True):
            return steps(record).apply(self.store, record)

    def _end(self, intent: Intent) -> bool:
        """Delete the intent; whether it was still open (no repair had ended it)."""
        def work(s: Session) -> bool:
            deleted = s.execute(delete(operation_journal).where(operation_journal.c.id == intent.id))
            return cast(CursorResult[Any], deleted).rowcount == 1

        return self.store.write(work)

    def _first_step(self, path: str, record: Record, check: Callable[[Session, Record], Record | None],
                    refuse: Callable[[Connector], None] | None) -> _FirstStep:
        """The operation's first store transaction. Intents that earlier operations left open under
        `path` come first (the next claimant's duty): the transaction then ends without writing
        anything, they are repaired, and it runs once more without looking again (what stays open,
        e.g. an unreachable engine, does not block the operation; the request that follows will try
        again)."""
        first = self._ready_first_step(path, record, check, refuse, True)
        if first.left_open:
            self.repairer.repair_all(first.left_open)
            first = self._ready_first_step(path, record, check, refuse, False)
        return first

    def _ready_first_step(self, path: str, record: Record, check: Callable[[Session, Record], Record | None],
                          refuse: Callable[[Connector], None] | None, look_for_open: bool) -> _FirstStep:
        """_try_first_step, after making the catalog's connector outside its transaction when this process
        has none for the catalog as the transaction finds it (ConnectorCache.ready: a new connector may
        ask its engine, which must not happen inside a store write transaction)."""
        for _ in range(READY_ATTEMPTS):
            try:
                return self._try_first_step(path, record, check, refuse, look_for_open)
            except ConnectorNotReady as exc:  # its transaction wrote nothing and is over
                self.connectors.for_catalog(exc.catalog)
        raise errors.ScopeBusy(f"The properties of catalog {record.where.metalake}.{record.where.catalog} changed "
                               f"{READY_ATTEMPTS} times while this operation made its connector; nothing was "
                               "changed, retry later")

    def _try_first_step(self, path: str, record: Record, check: Callable[[Session, Record], Record | None],
                        refuse: Callable[[Connector], None] | None, look_for_open: bool) -> _FirstStep:
        """ONE store transaction: check that the metalake and catalog are in use, pick the catalog's
        connector (one this process has made already: ConnectorCache.ready, no engine call in here) and
        look for open intents under `path` (reads that run before the claim's fence check,
        EntityStore.write's prelude). Then, for a process-local connector, the whole operation
        (Operation.direct: no journal, and the claim may end with this transaction). For any other
        connector, the intent step: run the store's `check` and record the intent. That needs a claim
        that lasts across transactions (coordinator.require_lasting_claim)."""
        first = _FirstStep()

        def look(s: Session) -> None:
            catalog = catalog_in_use_in(s, record.where.metalake, record.where.catalog)
            assert catalog.id is not None, "a stored catalog has an id"
            first.connector, first.catalog_id = self.connectors.ready(catalog, s), catalog.id
            if refuse is not None:
                refuse(first.connector)
            if not first.connector.process_local:
                require_lasting_claim()
                first.key = identity_key(self.store, s, path)
            if look_for_open:
                first.left_open = self.journal.pending_in(s, path, self.settle_ms)

        def work(s: Session) -> None:
            if first.left_open:
                return
            here = placed(record, first.catalog_id, first.key)
            if first.connector.process_local:
                first.result = steps(here).direct(self.store, s, first.connector, here)
                return
            checked = check(s, here)
            if checked is not None:
                first.record = checked
                operation, catalog_id, payload = encode(checked)
                first.intent = self.journal.insert_in(s, path, operation, catalog_id, payload)

        with guard.last_write(lambda: first.connector.process_local and not first.left_open):
            self.store.write(work, prelude=look)
        return first
