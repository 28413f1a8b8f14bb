"""The background repair: each serving worker settles the operation journal's leftover intents every
`gravimeta.journal.repair-interval-ms` (default 60 s; 0: off), so an intent whose operation did not
finish (its replica died between the engine call and the store step, its engine did not answer) is
settled without waiting for the next operation on its scope or for an operator.

A pass is `gravimeta repair` limited to the intents that are due:
- recorded at least one interval ago: a running operation keeps its intent for the length of its
  engine call, and claiming its scope now would only wait for it;
- not marked stuck: a repair already found it cannot decide those; they wait for an operator
  (`gravimeta repair --resolve`), and each pass counts them in the gauge gravimeta_journal_stuck_intents
  and logs them;
- each scope repaired under the claim any repair takes (Repairer.repair_pending: a structural claim on
  the intent's scope), so a pass is ordered with every structural operation and every other repair on
  any replica. Every worker of every replica runs passes: two passes on one scope are serialized by that
  claim, and the second finds nothing left. The first pass starts at a random point of the first
  interval, and later ones vary by a quarter, so workers started together do not all claim at once.

It runs on a thread of its own, never on the heartbeat's: a pass may wait for a claim up to the claim
timeout and call engines, and a renewal must never queue behind that. It is started in the serving
worker (create_app, after gunicorn forked it), never by operator commands, and stopped by the
worker_exit hook (gravimeta/server.py).
"""

from __future__ import annotations

import logging
import random
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable

from sqlalchemy.exc import SQLAlchemyError

from gravimeta import errors
from gravimeta.concurrency import metrics
from gravimeta.store.journal import STUCK, OperationJournal

log = logging.getLogger(__name__)

Repair = Callable[[Iterable[str]], Counter[str]]


class BackgroundRepair:
    """Repair passes over the due intents of `journal`; `repair(scopes)` repairs the intents of those
    scope paths, each under its claim (Repairer.repair_pending). `ready()`: whether the store can be
    used now (a worker that booted without its store waits for it)."""

    def __init__(self, journal: OperationJournal, repair: Repair, interval_ms: int,
                 ready: Callable[[], bool] = lambda: True):
        self.journal, self.repair, self.interval_ms, self.ready = journal, repair, interval_ms, ready
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def due_scopes(self) -> list[str]:
        """The scope paths of the intents a pass repairs now (see the module docstring)."""
        intents = self.journal.pending(settle_ms=self.interval_ms)
        stuck = [i for i in intents if i.state == STUCK]
        metrics.journal_stuck_intents.set(len(stuck))
        if stuck:
            log.warning("journal: %d stuck intent(s) wait for an operator (gravimeta repair --list, then --resolve "
                        "or --discard): %s", len(stuck), ", ".join(f"#{i.id} {i.operation} {i.scope_path}"
                                                                 for i in stuck[:10]))
        return sorted({i.scope_path for i in intents if i.settled and i.state != STUCK})

    def run_once(self) -> Counter[str]:
        """One pass; what it did to each intent it judged."""
        if not self.ready():
            return Counter()
        scopes = self.due_scopes()
        if not scopes:
            return Counter()
        outcomes = self.repair(scopes)
        for outcome, n in outcomes.items():
            metrics.journal_background_repairs.labels(outcome).inc(n)
        log.info("journal background repair of %d scope(s): %s", len(scopes),
                 ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "nothing to do")
        return outcomes

    def start(self) -> BackgroundRepair:
        """Start the thread in this process (nothing when the interval is 0)."""
        if self.interval_ms > 0 and self._thread is None:
            self._thread = threading.Thread(target=_run, args=(weakref.ref(self), self._stop, self.interval_ms / 1000),
                                            name="gravimeta-journal-repair", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _run(ref: weakref.ref[BackgroundRepair], stop: threading.Event, interval_s: float) -> None:
    """The thread: a pass after each wait, until stopped (or the BackgroundRepair is gone: a thrown-away
    application ends its thread within one interval)."""
    wait = random.uniform(0.25, 1.0) * interval_s
    while not stop.wait(wait):
        background = ref()
        if background is None:
            return
        try:
            background.run_once()
        except (errors.GravitinoError, SQLAlchemyError) as exc:  # the store is away, say: the next pass retries
            log.warning("journal background repair pass failed: %s: %s", type(exc).__name__, exc)
        except Exception:  # a pass must never end the thread
            log.exception("journal background repair pass failed")
        del background
        wait = random.uniform(0.75, 1.25) * interval_s
