"""The repair of intents left open in the operation journal (docs/consistency.md §4: each rule and why).

It runs under a structural claim related to the intent's scope (the next operation on that scope, or
`repair_pending` under a claim on the intent's own scope), so the intent's holder has lost or ended its
claim. What it must still rule out is a call of that holder landing in the engine after the repair
looked. So it observes before it decides, and only once the observation is final:

- fenced:    the repair's claim has a token and the engine checks fences: the repair first raises a
             barrier through the engine door (engine_door.barrier) on an identity key related to the
             intent's key (the key its holder's calls carry: engine_keys.py), with its own token, which
             is above the holder's (the repair's claim was granted after the holder's ended, on a path
             related to it or to the rename that moved it, and fences grow across related paths). A
             call of the old holder that has not landed by then never will (StaleFence), so one
             observation after the barrier is final. Keys are identities, so a rename of the catalog or
             metalake in between changes nothing here.
- held:      no fence can keep the holder out (an engine that does not check fences, a claim without a
             token): the first repair to hold the
             scope records when (observed_at); the holder's claim had ended by then, and its calls end
             on its side by its lease deadline, so the engine can still receive one for call_window_s().
             "Not applied" is taken as final only when a later observation is that much later.
- unclaimed: no cross-node claims (the distributed lock is off): the settle time since the intent was
             recorded, as before (a request of another worker may still be running it).

Decisions are keyed by the catalog's id: an intent whose catalog is gone is discarded, one whose catalog
was renamed is moved to its scope under the new names, one whose schema (named by identity in its key)
was dropped is discarded once its barrier is raised (fenced only: repair_rules.by_dropped_schema), and an apply checks in its own transaction that
the intent is still open and the id still carries the names it applies under (IntentSettled otherwise).
What to do with what it found is decided by repair_rules.py, pure functions the dry run
(repair_preview.py) runs too. One bad intent never stops the others: an unexpected failure marks it stuck and the repair goes on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from functools import partial

from connectors import door_guard
from connectors.base import Connector
from connectors.fencing import related
from gravimeta import errors, failpoints
from gravimeta.concurrency.coordinator import (
    Coordinator,
    NeedsLastingClaim,
    current_claim,
    require_lasting_claim,
)
from gravimeta.dispatch import engine_door
from gravimeta.dispatch import repair_rules as rules
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_keys import identity_key, schema_gone
from gravimeta.dispatch.intent_records import Record, decode
from gravimeta.dispatch.intents import Applied, steps
from gravimeta.dispatch.repair_rules import FENCED
from gravimeta.entities import NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test
from gravimeta.store.journal import STUCK, Intent, IntentSettled, OperationJournal, catalog_names

log = logging.getLogger(__name__)

#: store errors that mean a roll-forward cannot be applied as journalled (a human must look)
_UNAPPLIABLE = (errors.NotFound, errors.AlreadyExists, errors.IllegalArgument, errors.NonEmpty)
#: errors about the repairer's own claim or the store itself: the whole repair must stop, not one intent
_FATAL = (errors.FenceLost, errors.StoreUnavailable, NeedsLastingClaim)


class Repairer:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 journal: OperationJournal, settle_ms: int):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.journal, self.settle_ms = journal, settle_ms

    def repair_pending(self, settle_s: float | None = None, scopes: Iterable[str] | None = None) -> Counter[str]:
        """Repair every open intent, each under a claim on its own scope (`gravimeta repair`); with
        `scopes`, only the intents recorded under those scope paths (the background repair's choice). A
        busy scope is deferred; a scope whose repair fails is counted and the others still run. The
        engine door's guard is on throughout (connectors/door_guard.py), as in a request: the background
        repair's thread and the operator's command change engines only through the door too."""
        with door_guard.serving():
            return self._repair_pending(settle_s, scopes)

    def _repair_pending(self, settle_s: float | None, scopes: Iterable[str] | None) -> Counter[str]:
        settle_ms = self.settle_ms if settle_s is None else int(settle_s * 1000)
        outcomes: Counter[str] = Counter()
        paths = {i.scope_path for i in self.journal.pending()} if scopes is None else set(scopes)
        for path in sorted(paths):
            scope = NameIdentifier(tuple(path.strip("/").split("/")))
            try:
                outcomes += self.coordinator.run_structural(scope, partial(self._repair_scope, path, settle_ms))
            except (errors.ScopeBusy, errors.FenceLost) as exc:
                log.warning("journal repair of %s deferred: %s", path, exc.message)
                outcomes["deferred"] += 1
            except Exception:  # noqa: BLE001 - one scope's failure must not stop the repair of the others
                log.exception("journal repair of %s failed", path)
                outcomes["failed"] += 1
        return outcomes

    def _repair_scope(self, path: str, settle_ms: int) -> Counter[str]:
        return self.repair_all([i for i in self.journal.pending(path, settle_ms) if i.scope_path == path])

    def repair_all(self, intents: list[Intent]) -> Counter[str]:
        return Counter(self.repair(intent) for intent in intents)

    def repair(self, intent: Intent) -> str:
        """One intent's outcome: discarded, relabelled, unreachable, waiting, rolled forward, rolled back,
        undone, settled elsewhere, stuck, or failed (an unexpected error, recorded on the intent)."""
        try:
            return self._repair(intent)
        except _FATAL:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad intent must not block the others
            log.exception("journal: repair of intent %s failed", intent.id)
            self._stuck(intent, f"repair failed: {type(exc).__name__}: {exc}")
            return "failed"

    # ------------------------------------------------------------------ one intent

    def _repair(self, intent: Intent) -> str:
        """Gather the facts under the claim, in order, and do what repair_rules decides from them."""
        record = decode(intent.operation, intent.catalog_id, intent.payload)
        op = steps(record)
        names = catalog_names(self.store, record.where.catalog_id)
        decided = rules.by_catalog(intent.scope_path, record, names)
        if decided is not None:
            return self._carry_out(intent, record, decided)
        assert names is not None
        record = replace(record, where=replace(record.where, metalake=names[0], catalog=names[1]))
        connector = self.connectors.for_catalog(self.store.get_catalog(*names))
        decided = rules.by_connector(connector.process_local)
        if decided is not None:
            return self._carry_out(intent, record, decided)
        gone = self.schema_dropped(record)
        require_lasting_claim()  # observe, then apply: two steps the claim must cover together
        try:
            mode = self._mode(intent, connector)
            decided = rules.by_dropped_schema(mode, gone, record)
            if decided is not None:
                return self._carry_out(intent, record, decided)
            seen = op.observe(connector, record)
        except errors.StaleFence:
            raise
        except errors.GravitinoError as exc:
            self.journal.note(intent.id, f"engine not observable: {exc.message}")
            return "unreachable"
        failpoints.hit("repair.before_decide", intent=intent.id, seen=seen, mode=mode)
        decided = rules.by_observation(seen, mode, intent.settled)
        if decided.action == rules.ROLL_FORWARD:
            return self._roll_forward(intent, record, connector, mode)
        return self._carry_out(intent, record, decided)

    def _carry_out(self, intent: Intent, record: Record, decided: rules.Decision) -> str:
        """Do what a decision of repair_rules says (all but a roll-forward); the outcome's name."""
        if decided.action == rules.STUCK:
            return self._stuck(intent, decided.why)
        if decided.action == rules.WAIT:
            return "waiting"
        if decided.action == rules.RELABEL:
            self.journal.move(intent.id, decided.to)
            log.info("journal: intent %s moved from %s to %s: %s", intent.id, intent.scope_path, decided.to,
                     decided.why)
            return "relabelled"
        self.journal.discard(intent.id)
        if decided.action == rules.ROLL_BACK:
            log.info("journal: rolled %s (intent %s) back", steps(record).describe, intent.id)
            return "rolled back"
        log.warning("journal: dropping intent %s (%s): %s", intent.id, steps(record).describe, decided.why)
        return "discarded"

    def schema_dropped(self, record: Record) -> bool:
        """Whether the schema the intent's key names by identity is gone from the store (a drop; perhaps
        created again under its name since, as another identity). An identity never comes back, so this
        read needs no barrier."""
        if disabled_for_test("dropped_schema"):  # TEST-ONLY: the intent is judged by its names alone
            return False
        return schema_gone(self.store, record.where.catalog_id, record.where.key)

    def fence_out(self, intent: Intent, connector: Connector) -> str:
        """Under a claim related to the intent's scope: keep its holder's late engine calls out where the
        engine can (the barrier), and say how final an observation made now is: FENCED, HELD, WAITING or
        UNCLAIMED (`gravimeta repair --resolve`, intent_resolution.py)."""
        return self._mode(intent, connector)

    def _mode(self, intent: Intent, connector: Connector) -> str:
        """How final an observation made now is (see the module docstring); raises the barrier when
        FENCED, and records the first time a repair held the scope otherwise."""
        claim = current_claim()

        def held_long_enough() -> bool:
            self.journal.mark_observed(intent.id)
            return self.journal.observed_for(intent.id, int(connector.call_window_s() * 1000))

        mode = rules.finality(claim is not None, engine_door.can_fence(connector), held_long_enough)
        if mode == FENCED:
            assert claim is not None
            engine_door.barrier(connector, self.barrier_key(intent, claim.path))
        return mode

    def barrier_key(self, intent: Intent, claim_path: str) -> str:
        """Where the repair's barrier goes: the key of what its own claim covers when that is related to
        the intent's key (then it also keeps out anything else below the claim), else the intent's key
        itself (an incarnation that no longer carries the intent's names: nobody else holds it). Reads
        only (the dry run names the key too)."""
        with self.store.snapshot() as s:
            own = identity_key(self.store, s, claim_path)
        key = decode(intent.operation, intent.catalog_id, intent.payload).where.key
        if disabled_for_test("identity_keys"):  # TEST-ONLY: the barrier on the claim's own path, as before keys
            return own
        return own if not key or related(own, key) else key

    def _roll_forward(self, intent: Intent, record: Record, connector: Connector, mode: str) -> str:
        op = steps(record)
        try:
            _, already = self._apply(intent, record)
        except IntentSettled as settled:
            log.info("journal: intent %s needs no repair: %s", intent.id, settled)
            return "settled elsewhere"
        except errors.StoreRefused as exc:
            return self._undo(intent, record, connector, exc)
        except _UNAPPLIABLE as exc:
            return self._stuck(intent, f"engine has the change, the store refuses it: {exc.message}")
        if already is not None:  # made by another operation (or this intent's request just finished)
            if rules.by_store_already(mode, intent.settled).action == rules.WAIT:
                return "waiting"
            self.journal.discard(intent.id)
        log.info("journal: rolled %s (intent %s) forward", op.describe, intent.id)
        return "rolled forward"

    def _apply(self, intent: Intent, record: Record) -> Applied:
        strict = (record.where.catalog_id, record.where.metalake, record.where.catalog)
        with self.journal.finishing(intent.id, strict=strict):
            return steps(record).apply(self.store, record)

    def _undo(self, intent: Intent, record: Record, connector: Connector, refused: errors.StoreRefused) -> str:
        """The store proved it cannot hold the change: take the engine's change back and end the intent."""
        op = steps(record)
        if op.undo is None:
            return self._stuck(intent, f"the engine applied the {op.describe}, which cannot be undone, and the "
                                       f"store refuses it: {refused.message}")
        try:
            undo = op.undo
            engine_door.change(lambda fence: undo(connector, record, fence), self._key_of(record, intent),
                               intent=intent.id)
        except errors.StaleFence:
            raise
        except errors.GravitinoError as exc:
            return self._stuck(intent, f"the store refuses the {op.describe} ({refused.message}) and undoing it in "
                                       f"the engine failed: {exc.message}")
        self.journal.discard(intent.id)
        log.warning("journal: undid %s (intent %s) in the engine: the store refuses it: %s", op.describe, intent.id,
                    refused.message)
        return "undone"

    def _key_of(self, record: Record, intent: Intent) -> str:
        """The key the intent's engine calls are fenced by (resolved from its scope for an intent
        recorded before keys were)."""
        if record.where.key:
            return record.where.key
        with self.store.snapshot() as s:
            return identity_key(self.store, s, intent.scope_path)

    def _stuck(self, intent: Intent, detail: str) -> str:
        log.error("journal: intent %s (%s) is stuck: %s", intent.id, intent.operation, detail)
        try:
            self.journal.note(intent.id, detail, state=STUCK)
        except _FATAL:
            raise
        except Exception:  # noqa: BLE001 - the note is for operators; it must not hide the outcome
            log.exception("journal: could not record that intent %s is stuck", intent.id)
        return "stuck"
