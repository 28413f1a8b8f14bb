"""The failover soak, on demand (GRAVIMETA_FAILOVER_RUNS=1; docs/ha.md "Failover soak"): tests/chaos/soak.py's
race workload (3 replicas, lock on; creates, drops, renames, catalog and metalake swaps over memory, sqlite
and hive catalogs) on a three-member Patroni cluster in synchronous mode, reached through the multi-host URL,
while the primary's postmaster is SIGKILLed and a switchover is requested, in turn, waiting each time until
the old primary streams again. The soak's own nemesis (paused and killed workers, failpoints) is off, so
that what the clients see is the failover's.

The soak's checks (no lost acknowledged write, no two conflicting successes, every sqlite and hive engine
agrees with the store, no intent left open), and the fence check (tests/chaos/fence_check.py): no grant
carries a fence at or below one an engine had accepted before it, and at the end the anchor counters stand
at or above every fence the engines accepted. Prints each event's recovery time (last acknowledged
request before it to the first acknowledged request sent after it) and the failed requests by answer.

The same soak in asynchronous mode, with the standby made to lag for a second before each kill (the
primary's WAL senders stopped, as in test_failover.py), is the fence check's demonstration on a real
failover: the new primary lacks the last second's anchor bumps, and the check must report re-issued fences.
Run one or the other with `-k loses_no` or `-k asynchronous`."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from gravimeta.cluster import migrate
from tests.chaos.soak import SoakConfig, SoakResult, World, render, run
from tests.support.patroni import PatroniCluster, patroni_cluster

pytestmark = [pytest.mark.patroni, pytest.mark.skipif(
    not os.environ.get("GRAVIMETA_FAILOVER_RUNS"), reason="on demand (GRAVIMETA_FAILOVER_RUNS=1): docs/ha.md")]

EVENTS = ("kill", "switchover", "kill")
FIRST_AFTER_S, BETWEEN_S = 10.0, 12.0  # then a new primary, and the old one streaming again
LAG_S = 1.0  # asynchronous demonstration: how long the standbys receive nothing before a kill


def test_a_soak_through_failovers_loses_no_acknowledged_write(tmp_path, capsys):
    result = soak_through_failovers(tmp_path, _say(capsys), synchronous=True)
    assert result.ok, render(result)


def test_in_asynchronous_mode_a_lagging_standby_makes_the_store_grant_fences_again(tmp_path, capsys):
    result = soak_through_failovers(tmp_path, _say(capsys), synchronous=False, lag_s=LAG_S)
    reissued = [v for v in result.report.violations if v.kind == "fence-reissue"]
    assert reissued, "asynchronous failovers after a lag re-issued no fence:\n" + render(result)


def soak_through_failovers(tmp_path: Path, say: Callable[[str], None], synchronous: bool,
                           lag_s: float = 0.0) -> SoakResult:
    """The soak through EVENTS on a 3-member cluster; prints each event's recovery and the failed requests.
    `lag_s`: before each kill, the primary's WAL senders are stopped that long (then killed with it)."""
    seconds = float(os.environ.get("GRAVIMETA_SOAK_SECONDS", 120))
    events: list[tuple[str, float, float]] = []  # (what, at, writable at)
    worlds: list[World] = []
    with patroni_cluster(members=3, synchronous=synchronous) as pg:
        migrate(pg.url())

        def failovers(world: World) -> None:
            worlds.append(world)
            for i, what in enumerate(EVENTS):
                if world.stop.wait(FIRST_AFTER_S if i == 0 else BETWEEN_S):
                    return
                old = pg.wait_primary(timeout=30)
                senders = _lag(pg, old, lag_s) if what == "kill" else []
                at = time.monotonic()
                if what == "kill":
                    pg.kill_postmaster(old)
                    for pid in senders:  # killed with their postmaster: what they hold never reaches a standby
                        os.kill(pid, signal.SIGKILL)
                else:
                    pg.switchover()
                new = pg.wait_primary(timeout=60, other_than=old.name)
                events.append((f"{what} {old.name} -> {new.name}", at, time.monotonic()))
                say(f"[failover] {what} {old.name}: {new.name} writable after {time.monotonic() - at:.1f}s")
                pg.wait_replicas(timeout=90)  # the old primary streams again before the next event

        result = run(SoakConfig(db="postgresql", seconds=seconds, lock="AUTO", work_dir=tmp_path, say=say,
                                nemesis=False, store_url=pg.url(), store_nemesis=failovers, fence_check=True))
        say(render(result))
    ops = list(worlds[0].history.ops)
    for what, at, writable in events:
        before = max((op.end for op in ops if op.outcome == "ok" and op.end <= at), default=at)
        after = min((op.end for op in ops if op.outcome == "ok" and op.start >= at), default=float("nan"))
        failed = Counter(f"{op.status} {(op.body or {}).get('type', op.error or '')}".strip() for op in ops
                         if (op.status is None or op.status >= 500) and at <= op.start <= after)
        say(f"[failover] {what}: writable after {writable - at:.1f}s; recovery {after - before:.2f}s "
            f"(first ack {after - writable:.2f}s after writable); failed by answer: {dict(failed)}")
    everything = Counter(f"{op.status} {(op.body or {}).get('type', op.error or '')}".strip() for op in ops
                         if op.status is None or op.status >= 500)
    say(f"[failover] the whole run's 5xx and unanswered requests, by answer: {dict(everything)}")
    assert len(events) == len(EVENTS), events
    assert result.fences is not None and result.fences.grants > 0, "the fence check saw no grant"
    return result


def _lag(pg: PatroniCluster, primary, seconds: float) -> list[int]:
    """Stop the primary's WAL senders for `seconds` (its standbys then receive nothing); their pids."""
    if seconds <= 0:
        return []
    senders = pg.walsender_pids(primary)
    for pid in senders:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(seconds)  # the lag itself: commits no standby has received (the event under test)
    return senders


def _say(capsys) -> Callable[[str], None]:
    def say(line: str) -> None:
        with capsys.disabled():
            print(line, flush=True)
    return say
