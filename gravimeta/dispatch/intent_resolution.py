"""An operator settles one intent of the operation journal that the repair cannot settle
(`gravimeta repair --resolve ID applied|not-applied`, `gravimeta repair --discard ID`; the runbook is
docs/operations.md, "Stuck intents").

The repair decides from what the engine shows. When the engine shows neither the state before nor the
state after (a rename with both names or neither, an alter's or a create's table with other columns),
when the store refuses the change the engine has, or when the engine stays unreachable, the intent stays
open (marked stuck, or noted unreachable) and only someone who has looked at the engine can say what
happened. Each resolution runs under a
structural claim on the intent's scope, like a repair, so no operation or repair on that scope runs
meanwhile on any replica, and the intent is read again under it:

- applied:      the engine has the change: the store takes it (the intent's own store step, ending the
                intent in the same transaction, as a roll-forward does). Refused when the engine, looked
                at, shows the change absent. No barrier is needed: a late call of the intent's holder
                is the same idempotent change.
- not-applied:  the engine does not have it: the intent ends and the store stays as it is. The holder's
                late calls are kept out first, as a repair does (the barrier; or, for an engine that
                cannot check fences, once the holder's calls can no longer arrive): otherwise the change
                could land after the intent was closed and nobody would repair it. Refused when the
                engine, looked at after the barrier, shows the change made.
- discard:      the intent ends, nothing else is touched (no engine call at all): for an engine that is
                gone for good, or a state the operator has already put right by hand.

Refusals are GravitinoErrors with a message that says what to do instead; the intent stays open.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial

from connectors.base import Connector
from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator, require_lasting_claim
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.intent_records import Record, decode
from gravimeta.dispatch.intents import APPLIED, NOT_APPLIED, steps
from gravimeta.dispatch.repair import Repairer
from gravimeta.dispatch.repair_rules import UNCLAIMED, WAITING
from gravimeta.entities import NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.journal import Intent, IntentSettled, OperationJournal, catalog_names

log = logging.getLogger(__name__)

OUTCOMES = ("applied", "not-applied")
DISCARD = "discard"


class IntentResolver:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 journal: OperationJournal, repairer: Repairer):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.journal, self.repairer = journal, repairer

    def resolve(self, intent_id: int, outcome: str) -> str:
        """Settle intent `intent_id` as `outcome` (applied, not-applied or discard); what was done."""
        if outcome not in (*OUTCOMES, DISCARD):
            raise errors.IllegalArgument(f"an intent is resolved as applied, not-applied or discard, not {outcome!r}")
        scope_path = self._open(intent_id).scope_path
        scope = NameIdentifier(tuple(scope_path.strip("/").split("/")))
        return self.coordinator.run_structural(scope, partial(self._resolve, intent_id, outcome))

    def _open(self, intent_id: int) -> Intent:
        found = [i for i in self.journal.pending(settle_ms=self.repairer.settle_ms) if i.id == intent_id]
        if not found:
            raise errors.NotFound(f"There is no open intent #{intent_id} (`gravimeta repair --list` shows them)")
        return found[0]

    def _resolve(self, intent_id: int, outcome: str) -> str:
        intent = self._open(intent_id)  # again, under the claim: a repair may have settled it meanwhile
        what = f"#{intent.id} {intent.operation} {intent.scope_path}"
        if outcome == DISCARD:
            self.journal.discard(intent.id)
            log.warning("journal: intent %s discarded by an operator", what)
            return f"discarded {what}: nothing else was changed"
        record = decode(intent.operation, intent.catalog_id, intent.payload)
        names = catalog_names(self.store, record.where.catalog_id)
        if names is None:
            if outcome == "applied":
                raise errors.IllegalArgument(f"Intent {what}: its catalog #{record.where.catalog_id} is gone, so "
                                             "nothing can take the change; close it with --discard")
            self.journal.discard(intent.id)
            return f"resolved {what} as not applied: its catalog is gone"
        prefix = f"/{names[0]}/{names[1]}"
        if not (intent.scope_path == prefix or intent.scope_path.startswith(prefix + "/")):
            raise errors.IllegalArgument(f"Intent {what}: its catalog is now named {names[0]}.{names[1]}; run "
                                         "`gravimeta repair` first (it moves the intent to the new name), then "
                                         "resolve it by its id again")
        record = replace(record, where=replace(record.where, metalake=names[0], catalog=names[1]))
        connector = self.connectors.for_catalog(self.store.get_catalog(*names))
        require_lasting_claim()  # the barrier, the look and the store step: the claim covers them together
        if outcome == "applied":
            return self._applied(intent, record, connector, what)
        return self._not_applied(intent, record, connector, what)

    def _applied(self, intent: Intent, record: Record, connector: Connector, what: str) -> str:
        if self._look(connector, record) == NOT_APPLIED:
            raise errors.Conflict(f"Intent {what}: the engine shows the change absent. `gravimeta repair` rolls "
                                  "it back; if you know better, put the engine right first")
        strict = (record.where.catalog_id, record.where.metalake, record.where.catalog)
        try:
            with self.journal.finishing(intent.id, strict=strict):
                _, already = steps(record).apply(self.store, record)
        except IntentSettled as settled:
            return f"{what} needs nothing: {settled}"
        if already is not None:
            self.journal.discard(intent.id)
            return f"resolved {what} as applied: the store already had the change ({already.message})"
        log.warning("journal: intent %s resolved as applied by an operator", what)
        return f"resolved {what} as applied: the store now has the change"

    def _not_applied(self, intent: Intent, record: Record, connector: Connector, what: str) -> str:
        if not connector.process_local:
            try:
                mode = self.repairer.fence_out(intent, connector)
            except errors.StaleFence:
                raise
            except errors.GravitinoError as exc:
                raise errors.Conflict(f"Intent {what}: the engine could not be told to refuse the operation's late "
                                      f"calls ({exc.message.rstrip('.')}). Retry once it answers, or close the "
                                      "intent with --discard if you know no such call can still arrive") from exc
            if mode == WAITING or (mode == UNCLAIMED and not intent.settled):
                wait_s = connector.call_window_s() if mode == WAITING else self.repairer.settle_ms / 1000
                raise errors.Conflict(f"Intent {what}: a call of its operation may still reach the engine, which "
                                      f"cannot refuse it; run the command again in {wait_s:.0f} s")
            if self._look(connector, record) == APPLIED:
                raise errors.Conflict(f"Intent {what}: the engine shows the change made. `gravimeta repair` rolls "
                                      "it forward, or resolve it as applied")
        self.journal.discard(intent.id)
        log.warning("journal: intent %s resolved as not applied by an operator", what)
        return f"resolved {what} as not applied: the store keeps what it had"

    @staticmethod
    def _look(connector: Connector, record: Record) -> str | None:
        """What the engine shows (APPLIED, NOT_APPLIED, UNCLEAR), or None when it cannot be reached."""
        if connector.process_local:
            return None
        try:
            return steps(record).observe(connector, record)
        except errors.StaleFence:
            raise
        except errors.GravitinoError:
            return None
