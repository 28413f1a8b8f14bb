"""Worker bodies for the store race tests. Each runs in its own 'spawn' process with its own engine,
like a replica, and reports plain data (outcome names) back through a queue."""

from __future__ import annotations

import itertools
import multiprocessing
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from gravimeta.entities import Catalog, Column, Metalake
from gravimeta.errors import GravitinoError
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.store.tree import USER, table_of

BARRIER_TIMEOUT = 20
RESULT_TIMEOUT = 40


def outcome(call: Callable[[], Any]) -> str:
    """'ok', or the name of the domain error; anything else is a bug and is reported in full."""
    try:
        call()
        return "ok"
    except GravitinoError as exc:
        return type(exc).__name__
    except Exception as exc:
        return f"UNEXPECTED {type(exc).__name__}: {exc}"


class RacePool:
    """Spawned worker processes, started once and reused by every race test (spawning and importing
    per test cost seconds). Each job runs in its own process; the jobs of one run share a Barrier."""

    def __init__(self, size: int):
        ctx = multiprocessing.get_context("spawn")
        self.size = size
        self._manager = ctx.Manager()  # its Barrier proxies can travel through queues
        self._results = ctx.Queue()
        self._inboxes = [ctx.Queue() for _ in range(size)]
        self._procs = [
            ctx.Process(target=_serve, args=(inbox, self._results), daemon=True) for inbox in self._inboxes
        ]
        for p in self._procs:
            p.start()
        self.broken = False

    def run(self, url: str, jobs: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Run each (worker name, args) in its own process, all released together by one Barrier.
        Returns each job's result, in job order; fails if a worker crashes or hangs."""
        assert len(jobs) <= self.size, f"{len(jobs)} jobs for {self.size} workers"
        run_id = uuid.uuid4().hex
        barrier = self._manager.Barrier(len(jobs), timeout=BARRIER_TIMEOUT)
        for i, (name, args) in enumerate(jobs):
            self._inboxes[i].put((run_id, i, name, url, barrier, args))
        results: dict[int, Any] = {}
        try:
            while len(results) < len(jobs):
                rid, index, ok, value = self._results.get(timeout=RESULT_TIMEOUT)
                if rid != run_id:
                    continue  # a late answer from an earlier, failed run
                assert ok, f"worker {jobs[index][0]} crashed:\n{value}"
                results[index] = value
        except BaseException:
            self.broken = True  # a worker may still be busy or stuck: never reuse this pool
            raise
        return [results[i] for i in range(len(jobs))]

    def close(self) -> None:
        for inbox in self._inboxes:
            inbox.put(None)
        for p in self._procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        self._manager.shutdown()


def _serve(inbox: Any, results: Any) -> None:
    while (job := inbox.get()) is not None:
        run_id, index, name, url, barrier, args = job
        engine = create_store_engine(url)
        try:
            results.put((run_id, index, True, globals()[name](EntityStore(engine), barrier, *args)))
        except BaseException:
            results.put((run_id, index, False, traceback.format_exc()))
        finally:
            engine.dispose()


# --------------------------------------------------------------------------- (a) same-name creates


def create_same_names(store: EntityStore, barrier: Any, m: str, existing_m: str, c: str, s: str) -> list[str]:
    """Three rounds behind the barrier: the same metalake, the same catalog, the same table."""
    results = []
    barrier.wait()
    results.append(outcome(lambda: store.create_metalake(Metalake(m), USER)))
    barrier.wait()
    results.append(outcome(lambda: store.create_catalog(Catalog(existing_m, "same", "relational", "memory"), USER)))
    barrier.wait()
    results.append(outcome(lambda: store.create_table(existing_m, c, s, table_of("same"), USER)))
    return results


# --------------------------------------------------------------------------- (b) create vs cascade drop


def create_tables_until_gone(store: EntityStore, barrier: Any, m: str, c: str, s: str, me: int) -> list[str]:
    """Create tables until the parent is gone, then try a few more times (they must keep failing).
    After 400 creates, pause 5 ms between creates: on a busy machine SQLite's busy handler can keep
    the drop waiting while the creators hold its write lock back to back. Bounded by time as well."""
    results: list[str] = []
    barrier.wait()
    failures = 0
    deadline = time.monotonic() + 20  # well inside RESULT_TIMEOUT
    for i in itertools.count():
        if time.monotonic() > deadline:
            break
        if i >= 400:
            time.sleep(0.005)
        result = outcome(lambda i=i: store.create_table(m, c, s, table_of(f"t{me}_{i}"), USER))
        results.append(result)
        if result != "ok":
            failures += 1
            if failures > 3:
                break
    return results


def churn_columns_until_gone(store: EntityStore, barrier: Any, m: str, c: str, s: str, t: str) -> list[str]:
    """Replace a table's columns over and over (delete + insert of column rows) until it is gone.
    Bounded by time, not by a count: a fast store finished a fixed 400 before a busy machine let the
    drop in. After 400, pause 5 ms between changes, as the creators do (SQLite's busy handler)."""
    results: list[str] = []
    barrier.wait()
    deadline = time.monotonic() + 20  # well inside RESULT_TIMEOUT
    for i in itertools.count():
        if time.monotonic() > deadline:
            break
        if i >= 400:
            time.sleep(0.005)

        def change(table, i=i):
            table.columns = [Column(f"c{i}_{k}", "long") for k in range(3)]
            return table

        result = outcome(lambda: store.update_table(m, c, s, t, change, USER))
        results.append(result)
        if result != "ok":
            break
    return results


def cascade_drop_when_busy(store: EntityStore, barrier: Any, level: str, m: str, c: str, s: str, after: int) -> str:
    """Wait until `after` tables exist under the schema (the creators are running), then cascade-drop.
    The wait is bounded by time, not by a count of polls: on a loaded machine 2000 quick polls ended
    before the creators had written anything, and the test saw no race."""
    barrier.wait()
    deadline = time.monotonic() + 30
    while len(store.list_tables(m, c, s)) < after and time.monotonic() < deadline:
        time.sleep(0.002)
    drop = {
        "schema": lambda: store.drop_schema(m, c, s, cascade=True),
        "catalog": lambda: store.drop_catalog(m, c, cascade=True),
        "metalake": lambda: store.drop_metalake(m, cascade=True),
    }[level]
    return outcome(lambda: _assert_true(drop()))


def _assert_true(value: bool) -> None:
    assert value, "the drop found nothing to drop"


# --------------------------------------------------------------------------- (c) concurrent property updates


def set_properties(store: EntityStore, barrier: Any, kind: str, path: tuple[str, ...], me: int, count: int) -> list[str]:
    barrier.wait()
    results = []
    for i in range(count):

        def mutate(entity, i=i):
            entity.properties[f"k{me}_{i}"] = str(i)
            return entity

        if kind == "metalake":
            results.append(outcome(lambda: store.update_metalake(path[0], mutate, USER)))
        else:
            results.append(outcome(lambda: store.update_table(*path, mutate, USER)))
    return results
