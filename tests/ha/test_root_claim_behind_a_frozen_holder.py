"""A root claim (a metalake create, rename or drop) that meets an expired claim whose holder is frozen
inside its fenced store transaction waits for that row lock while it holds the '/' anchor FOR UPDATE
(lease_grant.py step 1; on PostgreSQL and MariaDB inside gm_claim_scope). Every other claim takes '/'
FOR KEY SHARE (LOCK IN SHARE MODE) first, so claims in every OTHER metalake queue behind it: a holder
frozen in m4 stalled a create in m1 that has nothing to steal, until the root claimant's deadline or the
database ending the frozen session. What the soak's frozen-holder probe met (tests/chaos/soak.py).
Since alembic 0020 a root claim locks those rows NOWAIT: a locked one makes its attempt busy, its
transaction ends and frees '/', and it retries with backoff; the create in m1 goes through meanwhile.
Run against revision 0019's functions (the commit before 0020) it fails: 503 after the 4 s claim timeout.

Since alembic 0021 the waiting root claim holds new claims back (root_wait.py), but one waiter's record
lasts at most a quarter of its claim timeout (2 s of 8 s here), and the next one starts only after as long
again: the create in m1 waits at most that long. `GRAVIMETA_HA_DISABLE=root_hold_cap` (the record lasts
until the root claim's deadline) makes it fail: 503 after its own 4 s claim timeout.
"""

from __future__ import annotations

import time

from gravimeta.concurrency.root_wait import HOLD_SHARE
from tests.engine.conftest import Api, Cluster, in_background, ok, wait_until
from tests.ha.test_bounded_waits import expired, shared_db, stalled_holder  # noqa: F401


def test_a_root_claim_behind_a_frozen_holder_in_m4_does_not_stall_a_create_in_m1(shared_db, tmp_path, clusters):  # noqa: F811
    cluster = Cluster(shared_db, tmp_path, {"GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS": "60000"})
    clusters.append(cluster)
    holder = Api(cluster.replica("h"))
    root_timeout_s = 8
    root = Api(cluster.replica("r", GRAVIMETA_CLAIM_TIMEOUT_MS=str(root_timeout_s * 1000)))
    other = Api(cluster.replica("o", GRAVIMETA_CLAIM_TIMEOUT_MS="4000"))
    for m in ("m1", "m4"):
        ok(root.metalake(m))
        ok(root.catalog("memory", {}, m=m))
    ok(root.schema(m="m1"))
    ok(other.table("warm", m="m1"))  # the other replica's anchors exist: its create below only claims
    thread, created, paused = stalled_holder(cluster, holder, m="m4", setup=False)
    wait_until("the frozen holder's lease on /m4/c/s expired", lambda: expired(cluster.engine, "/m4/c/s"), timeout=15)

    creator, made = in_background(lambda: root.metalake("m9"))  # claims '/', related to /m4/c/s
    # the root claim meets the frozen holder's locked row: before 0020 it waited on it (holding '/'), now
    # it answers busy and retries; either way the metalake create cannot finish while the holder is frozen
    time.sleep(1)
    assert not made, "the metalake create did not meet the frozen holder's claim row"
    # from its first busy attempt (within the second above) it holds new claims back, for a bounded time
    bound = HOLD_SHARE * root_timeout_s
    started = time.monotonic()
    waiter, answered = in_background(lambda: other.table("t", m="m1"))
    waiter.join(15)
    elapsed = time.monotonic() - started
    frozen = cluster.fp.is_paused(paused)
    cluster.fp.resume(paused)
    for t in (waiter, creator, thread):
        t.join(60)
    assert frozen, "the holder in m4 was resumed before the create in m1 answered"
    assert answered, "the create in m1 did not answer within 15 s"
    status, body = answered[0]
    assert status == 200 and elapsed < bound + 1, (
        f"a create in m1 (nothing to steal) answered {status} {body.get('type')} after {elapsed:.1f} s while a "
        f"metalake create waited on the claim row of a holder frozen in m4 (bound: {bound:.1f} s of hold-back)")
    assert made, made
