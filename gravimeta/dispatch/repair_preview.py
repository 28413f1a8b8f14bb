"""The repair's dry run: for each open intent, what `gravimeta repair` would do with it now, and why
(`gravimeta repair --dry-run`, GET /api/admin/repair-preview, the console's cluster page).

It gathers the facts the repair gathers (repair.py: the catalog by id, its connector, how final an
observation would be, what the engine shows) and asks the repair's own rules (repair_rules.py), but it
writes nothing: it takes no claim, raises no barrier, records no first observation, moves, notes or ends
no intent, and reads the engine through a connector made without the delivery of pending retirements
(ConnectorCache.for_reading). So it can only say what the repair would do first, where the repair
would wait or fence before deciding:

- a live claim on a related path: the repair waits for it (up to its claim timeout, then defers);
- fenced: the repair raises its barrier first and looks after it; the preview's look is before any
  barrier, so a call of the old holder may still land: what it saw is "as of now";
- held or waiting: the connector's call window since the first repair held the scope;
- unclaimed (the lock off): the settle time since the intent was recorded.

What a roll-forward finds in the store (the change already there, a value the store refuses) is known
only once it applies; the preview says what then happens instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from sqlalchemy import select

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.paths import related
from gravimeta.concurrency.reclaimer import live_claims
from gravimeta.dispatch import engine_door
from gravimeta.dispatch import repair_rules as rules
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.intent_records import Record, decode
from gravimeta.dispatch.intents import APPLIED, NOT_APPLIED, steps
from gravimeta.dispatch.repair import Repairer
from gravimeta.store import EntityStore
from gravimeta.store.database import disabled_for_test
from gravimeta.store.journal import STUCK, Intent, OperationJournal, catalog_names

UNREACHABLE = "unreachable"
WAITS = "waits for the claim on"
_SEEN = {APPLIED: "shows the change made", NOT_APPLIED: "does not show the change"}


@dataclass(frozen=True)
class Claim:
    path: str
    holder: str
    fence: int
    left_s: float


@dataclass(frozen=True)
class IntentPreview:
    """What the repair would do with one intent: `first`, what it waits for or does before deciding
    (in order); `action`, a repair_rules action (or UNREACHABLE); `why`; `text`, all of it in a sentence."""

    id: int
    operation: str
    path: str
    state: str
    action: str
    why: str
    first: list[str] = field(default_factory=list)

    @property
    def waits(self) -> bool:
        """Whether the repair would first wait for a live claim on a related path."""
        return any(step.startswith(WAITS) for step in self.first)

    @property
    def text(self) -> str:
        return "; then ".join([*self.first, self.why])

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "operation": self.operation, "path": self.path, "state": self.state,
                "action": self.action, "waits": self.waits, "first": self.first, "why": self.why, "text": self.text}


class RepairPreview:
    def __init__(self, store: EntityStore, coordinator: Coordinator, connectors: ConnectorCache,
                 journal: OperationJournal, repairer: Repairer):
        self.store, self.coordinator, self.connectors = store, coordinator, connectors
        self.journal, self.repairer = journal, repairer

    def preview(self, settle_s: float | None = None) -> list[IntentPreview]:
        """Every open intent, oldest first, with what `gravimeta repair [--settle-seconds S]` would do."""
        settle_ms = self.repairer.settle_ms if settle_s is None else int(settle_s * 1000)
        if disabled_for_test("repair_preview"):  # TEST-ONLY: the "preview" runs the real repair
            self.repairer.repair_pending(settle_s)
        now, claims = self._clock_and_claims()
        return [self._one(intent, now, claims, settle_ms) for intent in self.journal.pending(settle_ms=settle_ms)]

    def _clock_and_claims(self) -> tuple[datetime | None, list[Claim]]:
        """The database's clock and the live claims by it (reclaimer.live_claims, as `gravimeta locks`
        lists them; nothing waits on a lock)."""
        engine = self.store.engine
        with engine.connect() as conn:
            now = _instant(conn.execute(select(db_now(dialect_of(engine)))).scalar_one())
        return now, [Claim(str(c["path"]), str(c["holder"]), int(str(c["fence"])),
                           _seconds(now, _instant(c["expires_at"])))
                     for c in live_claims(engine) if c["live"]]

    def _one(self, intent: Intent, now: datetime | None, claims: list[Claim], settle_ms: int) -> IntentPreview:
        first = [f"{WAITS} {c.path} held by {c.holder} (fence {c.fence}, {c.left_s:.1f} s left; its holder may "
                 "settle the intent first)" for c in claims if related(c.path, intent.scope_path)]
        if intent.state == STUCK:
            first.insert(0, "marked stuck: the background repair skips it, `gravimeta repair` judges it again")
        action, why = self._decide(intent, now, settle_ms, first)
        return IntentPreview(intent.id, intent.operation, intent.scope_path, intent.state, action, why, first)

    def _decide(self, intent: Intent, now: datetime | None, settle_ms: int, first: list[str]) -> tuple[str, str]:
        """Repairer._repair's steps, read only; `first` gets what the repair would do before deciding."""
        try:
            record = decode(intent.operation, intent.catalog_id, intent.payload)
            op = steps(record)
        except (ValueError, KeyError, TypeError) as exc:  # the repair fails on it the same way
            return rules.STUCK, f"would mark it stuck: its record cannot be read ({type(exc).__name__}: {exc})"
        names = catalog_names(self.store, record.where.catalog_id)
        decided = rules.by_catalog(intent.scope_path, record, names)
        if decided is not None:
            return decided.action, _sentence(decided, op.describe)
        assert names is not None
        record = replace(record, where=replace(record.where, metalake=names[0], catalog=names[1]))
        try:
            catalog = self.store.get_catalog(*names)
        except errors.NotFound as exc:  # dropped since the names were read
            return rules.DISCARD, f"would discard the intent: its catalog is gone ({exc.message})"
        with self.connectors.for_reading(catalog) as connector:
            decided = rules.by_connector(connector.process_local)
            if decided is not None:
                return decided.action, _sentence(decided, op.describe)
            gone = self.repairer.schema_dropped(record)
            window_ms = int(connector.call_window_s() * 1000)
            claimed = self.coordinator.claims is not None  # a journalled operation's claim is a lease: it has a token
            mode = rules.finality(claimed, engine_door.fences_out(connector, claimed),
                                  lambda: self._held_long_enough(intent, window_ms))
            first.append(self._finality_note(intent, record, mode, window_ms, now, settle_ms))
            decided = rules.by_dropped_schema(mode, gone, record)
            if decided is not None:
                return decided.action, _sentence(decided, op.describe)
            try:
                seen = op.observe(connector, record)
            except errors.GravitinoError as exc:
                return UNREACHABLE, (f"would keep it open and note it: the engine cannot be observed now "
                                     f"({exc.message.rstrip('.')})")
        decided = rules.by_observation(seen, mode, intent.settled)
        looked = f"the engine {_SEEN.get(seen, 'shows neither the state before nor the state after')} (as of now"
        looked += ", before the barrier)" if mode == rules.FENCED else ")"
        return decided.action, f"{looked}, so it {_sentence(decided, op.describe)}"

    def _held_long_enough(self, intent: Intent, window_ms: int) -> bool:
        """Repairer._mode's question, without recording a first observation: the repair records one now
        when there is none, which is final at once only with no call window at all."""
        if intent.observed_at is None:
            return window_ms <= 0
        return self.journal.observed_for(intent.id, window_ms)

    def _finality_note(self, intent: Intent, record: Record, mode: str, window_ms: int, now: datetime | None,
                       settle_ms: int) -> str:
        """What the repair does before its look counts, for each mode."""
        window = f"{window_ms / 1000:.0f} s"
        if mode == rules.FENCED:
            return (f"would fence the operation out of the engine first (a barrier on "
                    f"{self.repairer.barrier_key(intent, intent.scope_path)} with its own claim's token) and look "
                    "after it")
        if mode == rules.HELD:
            return (f"the engine cannot refuse late calls, but the connector's call window ({window}) has passed since "
                    f"a repair first held the scope ({intent.observed_at}): a look now is final")
        if mode == rules.WAITING:
            if intent.observed_at is None:
                return (f"the engine cannot refuse late calls: would record its first look now, final only {window} "
                        "later")
            left = window_ms / 1000 - _seconds(_instant(intent.observed_at), now)
            return (f"the engine cannot refuse late calls: a look is final {max(left, 0):.1f} s from now (call window "
                    f"{window} since a repair first held the scope at {intent.observed_at})")
        settle = f"{settle_ms / 1000:.0f} s"
        if intent.settled:
            return f"no cross-node claims: the intent is older than the settle time ({settle})"
        left = settle_ms / 1000 - _seconds(_instant(intent.created_at), now)
        return f"no cross-node claims: a look is final once the intent is {settle} old ({max(left, 0):.1f} s from now)"


def _sentence(decided: rules.Decision, describe: str) -> str:
    """A decision as the end of "the repair ...", in the preview's words."""
    if decided.action == rules.ROLL_FORWARD:
        return (f"would finish the {describe} in the store ({decided.why}; if the store already has it, the intent "
                "just ends; if the store refuses it, the engine's change is undone, or, for a drop, the intent is "
                "marked stuck)")
    if decided.action == rules.ROLL_BACK:
        return f"would discard the intent, the store keeps what it has ({decided.why})"
    if decided.action == rules.WAIT:
        return f"would leave it open for now ({decided.why})"
    if decided.action == rules.RELABEL:
        return f"would move the intent to {decided.to} ({decided.why})"
    if decided.action == rules.STUCK:
        return f"would mark it stuck for an operator ({decided.why})"
    return f"would discard the intent ({decided.why})"


def _instant(value: object) -> datetime | None:
    """A database time (datetime or text, with or without a zone) as naive UTC; None if unreadable."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _seconds(start: datetime | None, end: datetime | None) -> float:
    """end - start in seconds (0 when either is unknown)."""
    return 0.0 if start is None or end is None else (end - start).total_seconds()
