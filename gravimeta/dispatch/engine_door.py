"""The one door every engine change goes through.

A connector's engine (a sqlite file, a Hive metastore) and gravimeta's store share no transaction, so an
engine change is safe only when four things hold for it. This module is where they are held, for every
caller: the journalled operations (journal.py), their repairs (repair.py), the drops of objects only the
engine has and the barrier before an import (imports.py), partition add and drop (partitions.py) and the
retirement of a dropped or moved catalog (catalogs.py, metalakes.py). connectors/door_guard.py makes a mutating connector call
made anywhere else fail, once the server requires the door (gravimeta/app.py).

(a) The intent first, or a reason in code why none is needed: `change` takes either the id of the
    journal intent recorded before the call (a repair in another process can then find, finish or undo
    it) or `why_no_intent`, one of the reasons below, so that a new caller has to say which applies.
(b) A fence keyed by the object's identity (engine_keys.py), not its name: the running claim's token,
    compared by the engines we own, storage-side and in the same transaction as the change, with every
    token they have seen on related keys. A rename changes no key; a re-created namesake has another.
(c) The claim's time left: no call is started with less than MIN_CALL_S left on the claim, and the call
    carries the claim's deadline. The barrier a repair or an import raises goes through `barrier`, with
    the same fence, so a late call of an earlier holder that has not landed by then never will.
(d) Bounded: every connector bounds each wait of a call by the fence's deadline (Fence.timeout), which
    ends where the holder's trust in its lease ends; without a claim (the lock off) by its own timeout.
(e) Durable: the claim's grant is durable before its fence goes out (Claim.make_durable), so that no
    crash or failover of the store hands that fence out again to another holder.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

from connectors import door_guard
from connectors.base import Connector, Fence
from gravimeta import errors
from gravimeta.concurrency.coordinator import current_claim
from gravimeta.store.database import disabled_for_test

T = TypeVar("T")

#: Whether claim fences are ordered across related scopes: a later grant on ANY related path gets a
#: strictly greater fence. The lease claim numbers fences on the anchor row that related claims lock in
#: common (gravimeta/concurrency/lease_grant.py; tests/ha/test_fence_order.py), and a metalake rename
#: claims the root, whose fence every later grant exceeds, so an engine may compare a token with those
#: of related keys.
FENCES_ORDERED_ACROSS_SCOPES = True

#: the least time left on a claim for an engine call to be started at all
MIN_CALL_S = 0.05

#: reasons an engine change needs no journal intent (the `why_no_intent` of `change`)
PROCESS_LOCAL = ("process-local engine: it mirrors the store inside this process and changes in the same "
                 "store transaction, so nothing outlives a failure")
NO_STORE_STATE = ("the engine alone keeps this state (partitions of an engine-kept table): the store has "
                  "nothing to disagree with, and a retry is answered from the engine")
BARRIER = "a barrier changes no object: it only makes the engine refuse older tokens"
CATALOG_HOME = "the catalog's home is made before the catalog exists in the store: nothing can refer to it yet"
RETIREMENT = "a retirement only makes the engine refuse the calls of a dropped catalog: it changes no object"
#: TEST-ONLY (GRAVIMETA_HA_DISABLE=engine_only_intent): an engine-only drop sent without its intent, as
#: before such drops were journalled (imports.py)
UNJOURNALLED_FOR_TEST = "TEST-ONLY: an engine-only drop without its journal intent"
_REASONS = (PROCESS_LOCAL, NO_STORE_STATE, BARRIER, CATALOG_HOME, RETIREMENT, UNJOURNALLED_FOR_TEST)
#: the calls made without the fence (mirror and prepare below drop it)
_FENCE_NOT_SENT = (PROCESS_LOCAL, CATALOG_HOME)


def fence_for(key: str, sent: bool = True) -> Fence:
    """The fence for an engine call on `key` by the running operation. Without a claim (distributed
    lock off) a fence without token. StaleFence (nothing sent) when the claim can no longer be trusted or
    has less than MIN_CALL_S left. `sent`: the fence goes to the engine, so the claim's grant is made
    durable first (False for the calls that drop it, _FENCE_NOT_SENT: a process-local change runs inside
    the operation's store transaction, whose fence guard holds the claim row, so the durable write on that
    row would wait for its own operation until the claim ran out)."""
    claim = current_claim()
    if claim is None:
        return Fence(key)
    left = claim.time_left()
    if left < MIN_CALL_S:
        raise errors.StaleFence(
            f"The claim on {claim.path} ran out before the engine call could be made ({left:.3f}s left); "
            "nothing was sent"
        )
    deadline = None if math.isinf(left) else time.monotonic() + left
    token = None if disabled_for_test("engine_fence") else claim.fence  # TEST-ONLY: calls carry no fence
    if token is not None and sent and not disabled_for_test("durable_fence"):  # TEST-ONLY when off
        claim.make_durable()  # an engine that has seen the fence must never see it granted again
    return Fence(key, token, FENCES_ORDERED_ACROSS_SCOPES, deadline)


def change(call: Callable[[Fence], T], key: str, *, intent: int | None = None,
           why_no_intent: str | None = None) -> T:
    """Make one engine change: `call(fence)` with the fence of `key`, inside the door. Exactly one of
    `intent` (the journal intent recorded for it) and `why_no_intent` (one of this module's reasons)."""
    if (intent is None) == (why_no_intent is None) or (why_no_intent is not None and why_no_intent not in _REASONS):
        raise ValueError("an engine change names its journal intent or one of engine_door's reasons for none")
    fence = fence_for(key, sent=why_no_intent not in _FENCE_NOT_SENT)
    with door_guard.opened():
        return call(fence)


def can_fence(connector: Connector) -> bool:
    """Whether a barrier on this connector keeps every earlier holder's call out: the engine checks
    fences and the running claim has a token."""
    claim = current_claim()
    return fences_out(connector, claim is not None and claim.fence is not None)


def fences_out(connector: Connector, token: bool) -> bool:
    """Whether a barrier on this connector, by a claim with a token or not, keeps every earlier
    holder's call out (can_fence; the repair's dry run asks it of the claim the repair would hold)."""
    return connector.checks_fences and token and not disabled_for_test("engine_fence")


def barrier(connector: Connector, key: str, why: str = BARRIER) -> None:
    """Make the engine see the running claim's token on `key` (Connector.fence_barrier): afterwards it
    refuses every call with a lower token on a related key. StaleFence when it has seen a higher one."""
    change(connector.fence_barrier, key, why_no_intent=why)


def mirror(call: Callable[[], T]) -> T:
    """A process-local connector's change, made in the caller's store transaction (PROCESS_LOCAL)."""
    return change(lambda _fence: call(), "", why_no_intent=PROCESS_LOCAL)


def prepare(connector: Connector) -> None:
    """A new catalog's home in its engine (Connector.prepare_engine; CATALOG_HOME)."""
    change(lambda _fence: connector.prepare_engine(), "", why_no_intent=CATALOG_HOME)


def deliver_retirement(connector: Connector, fence: Fence) -> None:
    """A dropped catalog's retirement recorded when its engine could not be told (retirement.py),
    delivered with the token recorded at the drop rather than a running claim's (RETIREMENT)."""
    with door_guard.opened():
        connector.fence_barrier(fence)
