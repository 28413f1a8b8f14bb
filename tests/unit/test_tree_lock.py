"""TreeLock: READ on every ancestor and READ/WRITE on the leaf, root first; no deadlock; writers are
not starved; unused nodes are evicted. Blocking is proven behaviourally with Events and bounded waits."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from gravimeta.concurrency.tree_lock import LockType, TreeLock, _RWLock
from gravimeta.entities import NameIdentifier

READ, WRITE = LockType.READ, LockType.WRITE
PROBE = 0.2  # how long a thread is given to (wrongly) get through a lock that must block it
BOUND = 10.0  # upper bound for anything that must happen


def ident(path: str) -> NameIdentifier:
    return NameIdentifier.of(*[p for p in path.split("/") if p])


class Holder:
    """A thread that takes a lock, signals `entered`, and holds it until `release` is set."""

    def __init__(self, lock: TreeLock, path: str, lock_type: LockType, on_enter: Callable[[], None] | None = None):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.error: BaseException | None = None
        self._on_enter = on_enter
        self._thread = threading.Thread(target=self._run, args=(lock, path, lock_type), daemon=True)

    def _run(self, lock: TreeLock, path: str, lock_type: LockType) -> None:
        try:
            with lock.locked(ident(path), lock_type):
                if self._on_enter:
                    self._on_enter()
                self.entered.set()
                assert self.release.wait(BOUND), "holder was never released"
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def start(self) -> Holder:
        self._thread.start()
        return self

    def finish(self) -> None:
        self.release.set()
        self._thread.join(BOUND)
        assert not self._thread.is_alive(), "holder did not finish"
        if self.error:
            raise self.error


@contextmanager
def holding(lock: TreeLock, path: str, lock_type: LockType) -> Iterator[Holder]:
    holder = Holder(lock, path, lock_type).start()
    assert holder.entered.wait(BOUND), f"{lock_type.value} on {path} was never granted"
    try:
        yield holder
    finally:
        holder.finish()


def assert_blocks(lock: TreeLock, first: tuple[str, LockType], second: tuple[str, LockType]) -> None:
    """`second` cannot enter while `first` is held, and enters as soon as `first` is released."""
    with holding(lock, *first) as held:
        waiter = Holder(lock, *second).start()
        assert not waiter.entered.wait(PROBE), f"{second} got in while {first} was held"
        held.release.set()
    assert waiter.entered.wait(BOUND), f"{second} never got in after {first} was released"
    waiter.finish()


def assert_runs_alongside(lock: TreeLock, first: tuple[str, LockType], second: tuple[str, LockType]) -> None:
    with holding(lock, *first), holding(lock, *second):
        pass


def node_state(lock: TreeLock, path: str) -> tuple[int, bool]:
    node = lock._root
    for name in ident(path).levels:
        node = node.children[name]
    return node.lock.state()


def test_ancestors_are_read_locked_and_the_leaf_gets_the_requested_type():
    lock = TreeLock()
    with lock.locked(ident("/m/c/s/t"), WRITE):
        assert [node_state(lock, p) for p in ("/", "/m", "/m/c", "/m/c/s")] == [(1, False)] * 4
        assert node_state(lock, "/m/c/s/t") == (0, True)
    with lock.locked(ident("/m/c"), READ):
        assert [node_state(lock, p) for p in ("/", "/m", "/m/c")] == [(1, False)] * 3


def test_write_on_an_ancestor_blocks_a_read_of_a_descendant():
    assert_blocks(TreeLock(), ("/m/c", WRITE), ("/m/c/s/t", READ))


def test_read_of_a_descendant_blocks_a_write_on_an_ancestor():
    assert_blocks(TreeLock(), ("/m/c/s/t", READ), ("/m/c", WRITE))


def test_write_blocks_write_on_the_same_node():
    assert_blocks(TreeLock(), ("/m/c/s", WRITE), ("/m/c/s", WRITE))


def test_write_on_the_root_blocks_everything():
    assert_blocks(TreeLock(), ("/", WRITE), ("/m", READ))


def test_two_reads_of_the_same_node_run_together():
    lock = TreeLock()
    both_inside = threading.Barrier(2, timeout=BOUND)  # breaks unless both are inside at once
    readers = [Holder(lock, "/m/c/s/t", READ, on_enter=both_inside.wait).start() for _ in range(2)]
    for reader in readers:
        assert reader.entered.wait(BOUND)
    for reader in readers:
        reader.finish()


def test_write_on_one_catalog_does_not_block_its_sibling():
    lock = TreeLock()
    assert_runs_alongside(lock, ("/m/c1", WRITE), ("/m/c2", WRITE))
    assert_runs_alongside(lock, ("/m/c1", WRITE), ("/m/c2/s/t", READ))
    assert_runs_alongside(lock, ("/m/c/s", WRITE), ("/m/c/s2", WRITE))  # not a prefix of /m/c/s2


def test_a_waiting_writer_is_served_before_readers_that_arrive_after_it():
    lock = TreeLock()
    order: list[str] = []
    with holding(lock, "/m/c/s/t", READ) as first_reader:
        writer = Holder(lock, "/m/c", WRITE, on_enter=lambda: order.append("writer")).start()
        _wait_until(lambda: lock._root.children["m"].children["c"].lock._writers_waiting == 1)
        late_reader = Holder(lock, "/m/c/s/t2", READ, on_enter=lambda: order.append("reader")).start()
        assert not late_reader.entered.wait(PROBE), "a new reader overtook the waiting writer"
        first_reader.release.set()
    assert writer.entered.wait(BOUND)
    writer.finish()
    assert late_reader.entered.wait(BOUND)
    late_reader.finish()
    assert order == ["writer", "reader"]


def test_a_stream_of_readers_does_not_starve_a_writer():
    lock = TreeLock()
    stop = threading.Event()
    reads = [0] * 6

    def reader(i: int) -> None:
        while not stop.is_set():
            with lock.locked(ident(f"/m/c/s/t{i % 2}"), READ):
                reads[i] += 1

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(len(reads))]
    for t in threads:
        t.start()
    try:
        _wait_until(lambda: all(reads))  # the stream is flowing
        for _ in range(20):
            writer = Holder(lock, "/m/c", WRITE).start()
            assert writer.entered.wait(BOUND), "the writer was starved by readers"
            writer.finish()
    finally:
        stop.set()
        for t in threads:
            t.join(BOUND)
    assert not any(t.is_alive() for t in threads)
    assert lock.node_count() == 1


def test_random_paths_types_and_orders_never_deadlock_or_overlap():
    """16 threads x 300 operations on a small tree; every holder checks that no conflicting holder
    (a WRITE on a related path, or anything on a path related to its own WRITE) is inside."""
    lock = TreeLock()
    names = ("a", "b")
    paths = [()] + [tuple(rng) for rng in _paths(names, depth=4)]
    active: dict[int, tuple[tuple[str, ...], LockType]] = {}
    guard = threading.Lock()
    violations: list[str] = []
    errors: list[BaseException] = []

    def related(p: tuple[str, ...], q: tuple[str, ...]) -> bool:
        n = min(len(p), len(q))
        return p[:n] == q[:n]

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(300):
                path, lock_type = rng.choice(paths), rng.choice((READ, WRITE))
                with lock.locked(NameIdentifier(path), lock_type):
                    me = threading.get_ident()
                    with guard:
                        for other_path, other_type in active.values():
                            if (lock_type is WRITE or other_type is WRITE) and related(path, other_path):
                                if lock_type is WRITE and other_type is READ and len(other_path) < len(path):
                                    continue  # an ancestor READ next to a descendant WRITE is allowed...
                                if other_type is WRITE and lock_type is READ and len(path) < len(other_path):
                                    continue  # ...in either order
                                violations.append(f"{path} {lock_type} with {other_path} {other_type}")
                        active[me] = (path, lock_type)
                    with guard:
                        del active[me]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,), daemon=True) for seed in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "deadlock: threads still waiting after 30 s"
    assert not errors, errors
    assert not violations, violations[:5]
    assert lock.node_count() == 1


def test_nodes_exist_while_in_use_and_are_evicted_afterwards():
    lock = TreeLock()
    assert lock.node_count() == 1
    with lock.locked(ident("/m/c/s/t1"), READ):
        assert lock.node_count() == 5
        with holding(lock, "/m/c/s/t2", WRITE):
            assert lock.node_count() == 6
        assert lock.node_count() == 5
    assert lock.node_count() == 1


def test_a_waiting_operation_keeps_its_nodes():
    lock = TreeLock()
    with holding(lock, "/m", WRITE) as held:
        waiter = Holder(lock, "/m/c/s", READ).start()
        _wait_until(lambda: lock.node_count() == 4)
        held.release.set()
    assert waiter.entered.wait(BOUND)
    waiter.finish()
    assert lock.node_count() == 1


def test_an_exception_in_the_block_releases_every_lock():
    lock = TreeLock()
    with pytest.raises(RuntimeError, match="boom"):
        with lock.locked(ident("/m/c/s"), WRITE):
            raise RuntimeError("boom")
    assert lock.node_count() == 1
    assert_runs_alongside(lock, ("/m/c/s", WRITE), ("/m/x", WRITE))
    assert lock._root.lock.state() == (0, False)


def test_a_writer_whose_wait_is_interrupted_does_not_strand_the_readers_behind_it():
    rw = _RWLock()
    rw.acquire(READ)
    interrupt = threading.Event()
    real_wait_for = rw._cond.wait_for

    def interrupted_wait_for(predicate):
        real_wait_for(lambda: predicate() or interrupt.is_set())
        raise KeyboardInterrupt  # what an async interrupt of a waiting thread looks like

    rw._cond.wait_for = interrupted_wait_for  # type: ignore[method-assign]
    writer = threading.Thread(target=lambda: pytest.raises(KeyboardInterrupt, rw.acquire, WRITE), daemon=True)
    writer.start()
    _wait_until(lambda: rw._writers_waiting == 1)
    rw._cond.wait_for = real_wait_for  # type: ignore[method-assign]
    reader_in = threading.Event()
    reader = threading.Thread(target=lambda: (rw.acquire(READ), reader_in.set()), daemon=True)
    reader.start()
    _wait_until(lambda: len(rw._cond._waiters) == 2)  # type: ignore[attr-defined]  # reader queued too
    with rw._cond:
        interrupt.set()
        rw._cond.notify(1)  # wakes the writer only (first waiter): the reader must be woken by it
    writer.join(BOUND)
    assert reader_in.wait(BOUND), "the reader waits for a writer that gave up"
    assert rw.state() == (2, False)


# --------------------------------------------------------------------------- helpers


def _paths(names: tuple[str, ...], depth: int) -> Iterator[list[str]]:
    frontier: list[list[str]] = [[]]
    for _ in range(depth):
        frontier = [p + [n] for p in frontier for n in names]
        yield from frontier


def _wait_until(condition: Callable[[], bool], timeout: float = BOUND) -> None:
    """Bounded polling for state that no Event reports (e.g. 'a writer is now waiting')."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        threading.Event().wait(0.002)
