"""The fence a journalled operation's engine calls carry, built from the running operation's claim
(the fence contract: connectors/base.py; the rule: connectors/fencing.py).

Before an engine call the holder checks that it may still act on its claim: the claim must be trusted
and must have at least MIN_CALL_S left. The call then carries the claim's scope, its fencing token and
a deadline (the end of what the holder may trust of its lease, by its own monotonic clock) that every
connector bounds its waits by, so the call's timeout always fits inside what is left of the lease. An
engine that checks fences refuses the call if a newer holder has made it see a higher token.
"""

from __future__ import annotations

import math
import time

from connectors.base import Fence
from gravimeta import errors
from gravimeta.concurrency.coordinator import Claim, current_claim
from gravimeta.concurrency.paths import related
from gravimeta.store.database import disabled_for_test

#: Whether claim fences are ordered across related scopes: a later grant on ANY related path gets a
#: strictly greater fence. The lease claim numbers fences on the anchor row that related claims lock in
#: common (gravimeta/concurrency/lease_grant.py, alembic 0012; tests/ha/test_fence_order.py), so an
#: engine may compare a token with those of related scopes, and a repair whose claim is on a related
#: scope can fence the intent's holder out (docs/consistency.md §4).
FENCES_ORDERED_ACROSS_SCOPES = True

#: the least time left on a claim for an engine call to be started at all
MIN_CALL_S = 0.05


def call_fence(fallback_scope: str) -> Fence:
    """The fence for an engine call of the running operation. Without a claim (distributed lock off)
    a Fence without token. StaleFence (nothing sent) when the claim can no longer be trusted or has
    less than MIN_CALL_S left."""
    claim = current_claim()
    if claim is None:
        return Fence(fallback_scope)
    left = claim.time_left()
    if left < MIN_CALL_S:
        raise errors.StaleFence(
            f"The claim on {claim.path} ran out before the engine call could be made ({left:.3f}s left); "
            "nothing was sent"
        )
    deadline = None if math.isinf(left) else time.monotonic() + left
    token = None if disabled_for_test("engine_fence") else claim.fence  # TEST-ONLY: calls carry no fence
    return Fence(claim.path, token, FENCES_ORDERED_ACROSS_SCOPES, deadline)


def can_fence_out(claim: Claim | None, intent_scope: str) -> bool:
    """Whether a barrier under `claim` keeps every call of the holder of an intent recorded under
    `intent_scope` from landing afterwards: the claim has a token and the tokens of the two scopes
    are ordered (the same scope, or related scopes once fences are ordered across scopes)."""
    if claim is None or claim.fence is None or disabled_for_test("engine_fence"):
        return False
    if claim.path == intent_scope:
        return True
    return FENCES_ORDERED_ACROSS_SCOPES and related(claim.path, intent_scope)
