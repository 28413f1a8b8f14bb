"""The repair's decisions (docs/consistency.md §4) as functions of what it has found, with no I/O.

The repair (repair.py) gathers the facts under its claim: the catalog's names by its id, the catalog's
connector, how final an observation is (after its barrier), what the engine shows. It asks these
functions what to do with them and does it. The dry run (repair_preview.py) gathers the same facts
without writing anything and asks the same functions, so a preview cannot drift from the repair.
Each decision says why, in words an operator reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gravimeta.dispatch.intent_records import Record
from gravimeta.dispatch.intents import APPLIED, NOT_APPLIED, Unclear

#: how final an observation is (repair.py's module docstring)
FENCED, HELD, WAITING, UNCLAIMED = "fenced", "held", "waiting", "unclaimed"
#: what the repair does with an intent
DISCARD, RELABEL, STUCK, WAIT, ROLL_FORWARD, ROLL_BACK = (
    "discard", "relabel", "stuck", "wait", "roll forward", "roll back")


@dataclass(frozen=True)
class Decision:
    action: str
    why: str
    to: str = ""  # RELABEL: the intent's scope path under its catalog's names now


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def by_catalog(scope_path: str, record: Record, names: tuple[str, str] | None) -> Decision | None:
    """The catalog by its id: gone (discard), renamed (move the intent to its new scope), or None: the
    intent is judged where it is."""
    w = record.where
    if names is None:
        return Decision(DISCARD, f"its catalog #{w.catalog_id} ({w.metalake}.{w.catalog}) is gone")
    prefix = f"/{names[0]}/{names[1]}"
    if under(scope_path, prefix):
        return None
    old = f"/{w.metalake}/{w.catalog}"
    if not under(scope_path, old):
        return Decision(STUCK, f"its scope {scope_path} is not under its catalog's path {prefix}")
    return Decision(RELABEL, f"its catalog was renamed ({old} is now {prefix}); the next repair there judges it",
                    prefix + scope_path[len(old):])


def by_connector(process_local: bool) -> Decision | None:
    if process_local:
        return Decision(STUCK, "its catalog's connector is process-local now: no engine to observe")
    return None


def finality(claimed: bool, fences: bool, held_long_enough: Callable[[], bool]) -> str:
    """How final an observation is: UNCLAIMED without a cross-node claim, FENCED when the engine can be
    made to refuse the holder's late calls (the caller raises the barrier), else HELD once the
    connector's call window has passed since a repair first held the scope (`held_long_enough`, asked only
    then), WAITING before."""
    if not claimed:
        return UNCLAIMED
    if fences:
        return FENCED
    return HELD if held_long_enough() else WAITING


def by_dropped_schema(mode: str, schema_gone: bool, record: Record) -> Decision | None:
    """Under the barrier, an intent whose schema (by identity) the store has dropped ends unjudged."""
    if schema_gone and mode == FENCED:
        w = record.where
        return Decision(DISCARD, f"schema {w.key} of {w.metalake}.{w.catalog}, which it changes, was dropped: the "
                                 "drop won and fenced the operation out of every later schema of that name")
    return None


def by_observation(seen: str, mode: str, settled: bool) -> Decision:
    """What the engine shows decides, as far as the observation is final."""
    if seen == APPLIED:
        return Decision(ROLL_FORWARD, "the engine has the change")
    if seen == NOT_APPLIED:
        if mode == WAITING:
            return Decision(WAIT, "the engine cannot refuse a late call of the operation, which may still arrive "
                                  "within the connector's call window")
        if mode == UNCLAIMED and not settled:
            return Decision(WAIT, "without cross-node claims the operation may still be running until the intent "
                                  "is older than the settle time")
        return Decision(ROLL_BACK, "the engine does not have the change")
    why = "engine shows neither the state before nor the state after"
    return Decision(STUCK, f"{why}: {seen.why}" if isinstance(seen, Unclear) else why)


def by_store_already(mode: str, settled: bool) -> Decision:
    """A roll-forward found the change already in the store (another operation made it)."""
    if mode == UNCLAIMED and not settled:
        return Decision(WAIT, "the store already has the change, and the intent's own request may still be "
                              "running: it must find its intent to answer")
    return Decision(DISCARD, "the store already has the change")
