"""The fence a mutating connector call carries, and the one rule an engine applies to it.

A structural operation runs under a cross-node claim on a scope ('/m/c' or '/m/c/s') with a fencing
token that grows with every grant. A holder can lose its claim (its lease expired while it was paused)
and still have an engine call on its way; the next holder must be able to make the engine refuse it.
So every mutating call carries a Fence, and an engine that can check it does so *storage-side, in the
same transaction as the change*:

    refuse the call (StaleFence, nothing changed) when its token is lower than the highest token the
    engine has seen on the call's key, or on any related key (an ancestor or a descendant) when the
    tokens are ordered across related keys (`related`); otherwise record the token for the key and make
    the change.

The key names the object the claim covers by its identity, not by its name: '/c<catalog id>.<create
time>/s<schema id>.<create time>/t<table id>.<create time>' (gravimeta/dispatch/engine_keys.py). A
rename changes no key, so it can never turn an old holder's call into an "unrelated" one; a schema or
table dropped and created again under the same name is another object with another key.

`highest_conflicting` is that rule over the (key, token) pairs an engine keeps; the sqlite catalog and
the hive stub both use it, so the rule lives in one place. The caller (gravimeta/dispatch/engine_door.py,
the one door every engine change goes through) builds the Fence from the running operation's claim. An
engine that cannot check fences ignores them (Connector.checks_fences = False); the repair then waits out
its calls instead (docs/consistency.md §4).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from gravimeta import errors

#: the largest fencing token an engine accepts (2^53, the largest integer every JSON reader keeps exactly).
#: Tokens grow by one per claim grant, so a real one never comes near it; a header above it (or below 0)
#: is malformed. Without the bound, one request with a token of 2^62 would make every later call on
#: that key stale forever.
MAX_TOKEN = 2**53

#: HTTP headers a remote engine receives the fence in (the hive provider and its stub)
SCOPE_HEADER, TOKEN_HEADER, RELATED_HEADER = "X-Gravimeta-Fence-Scope", "X-Gravimeta-Fence", "X-Gravimeta-Fence-Related"


@dataclass(frozen=True)
class Fence:
    """What a mutating call is made under.

    key:      the identity key of the object the claim covers (see the module docstring); '' when the
              call runs under no claim.
    token:    the claim's fencing token; None when there is none (distributed lock off, or a claim
              without a token): the engine then checks nothing and records nothing.
    related:  tokens are ordered across related scopes, so compare with ancestors and descendants too.
    deadline: time.monotonic() by which the call must have ended on the caller's side (the end of what
              the caller may still trust of its lease); None: no bound. A connector bounds every wait
              of the call by it (socket and busy timeouts) and refuses to start once it has passed.
    """

    key: str = ""
    token: int | None = None
    related: bool = False
    deadline: float | None = None

    def timeout(self, default: float) -> float:
        """The timeout to give the call's next wait: `default`, shortened to what is left before the
        deadline. StaleFence (nothing was sent) when the deadline has already passed."""
        if self.deadline is None:
            return default
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise errors.StaleFence(
                f"The claim on {self.key} ran out before this engine call could be made; nothing was changed"
            )
        return min(default, left)

    def headers(self) -> dict[str, str]:
        """The fence as HTTP headers (empty when it has no token)."""
        if self.token is None:
            return {}
        return {SCOPE_HEADER: quote(self.key, safe="/"), TOKEN_HEADER: str(self.token),
                RELATED_HEADER: "1" if self.related else "0"}

    @classmethod
    def from_headers(cls, header: Callable[[str], str | None]) -> Fence:
        """The fence a remote engine received, from its header lookup (case-insensitive, as
        http.server's `headers.get`); NO_FENCE when the call carried none. ValueError if malformed."""
        token = header(TOKEN_HEADER)
        if token is None:
            return NO_FENCE
        value = int(token)
        if not 0 <= value <= MAX_TOKEN:
            raise ValueError(f"fence token {token[:40]} is out of range: tokens go from 0 to 2^53")
        return cls(unquote(header(SCOPE_HEADER) or ""), value, header(RELATED_HEADER) == "1")


NO_FENCE = Fence()


def is_ancestor(a: str, b: str) -> bool:
    return a != b and (a == "/" or b.startswith(a + "/"))


def related(a: str, b: str) -> bool:
    """Keys (like the claim layer's scope paths) are related when equal or one is an ancestor of the
    other. Case-sensitive."""
    return a == b or is_ancestor(a, b) or is_ancestor(b, a)


def highest_conflicting(seen: Iterable[tuple[str, int]], fence: Fence) -> int | None:
    """The highest token among `seen` that makes `fence` stale, or None when the call may go ahead."""
    if fence.token is None:
        return None
    worst = None
    for key, token in seen:
        if token > fence.token and (key == fence.key or (fence.related and related(key, fence.key))):
            worst = token if worst is None else max(worst, token)
    return worst


def stale_fence(fence: Fence, seen: int, engine: str) -> errors.StaleFence:
    """The error an engine raises for a refused call."""
    return errors.StaleFence(
        f"{engine} refused a call on {fence.key} with fence {fence.token}: it has seen fence "
        f"{seen}, so another operation has taken over that object; nothing was changed"
    )
