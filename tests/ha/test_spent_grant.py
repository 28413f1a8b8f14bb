"""A claim whose attempt waited on a row lock for longer than the lease TTL is not handed to the
operation: its lease counts from the attempt's start, so it would be lost before its first renewal.

At the grain of SQL statements (H holds /m/c; S claims /m/c with a 15 s claim timeout, TTL 3 s):

  H  UPDATE gm_scope_lease SET lease_expires_at = now+TTL WHERE /m/c, H, fence AND unexpired (row locked)
     -- H frozen inside that renewal transaction (failpoint renew.before_commit) --
  S  reads /m/c FOR UPDATE               -> waits for H's row lock, longer than the TTL
  H  dies (SIGKILL): its session ends, the renewal rolls back, the lock goes
  S  the committed row has expired: S steals it. Its lease counts from its attempt's start, more than a
     TTL ago: the grant is spent before it is made.

Before the fix S's operation got that claim, and its first store write failed with FenceLost ("expired
before this change could be saved"), an answer 409 for a request that had waited 8 s (CI saw it in
tests/engine/test_zombie_engine_calls.py, with a replica SIGSTOPped inside a renewal). Now S gives the spent
grant back and claims again within its timeout: a fresh lease, and its guard passes.
Switch: GRAVIMETA_HA_DISABLE=fresh_grant keeps the spent grant (the guard then answers FENCELOST).
"""

from __future__ import annotations

import signal
import time

from tests.engine.conftest import wait_until
from tests.ha.test_lease_interleavings import (
    TTL_MS,
    cfg,
    committed_lease_expired,
    engine,  # noqa: F401 - the fixture
    fp,  # noqa: F401 - the fixture
    someone_waits_on_a_row_lock,
)


def test_a_grant_that_waited_past_its_ttl_on_a_frozen_renewal_is_taken_again_fresh(engine, fp, children):  # noqa: F811
    s = children("claim", cfg(engine, fp, "s", "/m/c", timeout_ms=15000, ready_first=True), "tests.ha.lease_child")
    s.expect("READY")
    h = children("hold", cfg(engine, fp, "h", "/m/c", renew_before_ms=600), "tests.ha.lease_child")
    first = int(h.expect("CLAIMED"))
    fp.arm("renew.before_commit", tag="h")
    h.send("go")
    fp.wait_reached("renew.before_commit", tag="h", timeout=TTL_MS / 1000 + 10)

    wait_until("H's committed lease has expired", lambda: committed_lease_expired(engine, "/m/c"), timeout=10)
    s.send("go")  # S's attempt finds the expired row and waits for H's lock on it
    wait_until("S's claim waits on H's row lock", lambda: someone_waits_on_a_row_lock(engine), timeout=10)
    time.sleep(TTL_MS / 1000 + 1.0)  # longer than a TTL
    h.signal(signal.SIGKILL)

    fence = int(s.expect("CLAIMED", timeout=20))
    assert fence > first
    assert s.expect("") == "GUARD OK", "S was handed a claim whose lease had run out while it waited"
