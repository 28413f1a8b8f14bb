"""Claim before TreeLock: a thread waiting for a claim that another process holds does not hold the
local TreeLock, so local readers of the same path are not blocked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.concurrency.tree_lock import LockType, TreeLock
from gravimeta.entities import NameIdentifier
from gravimeta.store import guard
from gravimeta.store.database import create_store_engine
from tests.ha.conftest import disabled

SCOPE = NameIdentifier.of("m", "c")


class TreeLockFirstCoordinator(Coordinator):
    """The wrong order, for showing that the test catches it."""

    @contextmanager
    def structural(self, scope: NameIdentifier, lock_type: LockType = LockType.WRITE) -> Iterator[None]:
        with self.tree_lock.locked(scope, lock_type):
            assert self.claims is not None
            claim = self.claims.claim(scope)
            try:
                with guard.installed(claim.fence_guard()):
                    yield
            finally:
                claim.release()


class WatchedLeaseBackend(LeaseBackend):
    """Signals when a claim attempt found the scope busy (the caller is now waiting on the database)."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.waiting = threading.Event()

    def _try_claim(self, path: str, holder: str, *rest):  # type: ignore[no-untyped-def]
        fence = super()._try_claim(path, holder, *rest)
        if fence is None:
            self.waiting.set()
        return fence


def test_a_thread_waiting_for_a_remote_claim_does_not_block_local_readers(db_url, children):
    remote = children("hold", {"url": db_url, "path": "/m/c", "ttl_ms": 5000, "node": "remote"})
    remote.expect("CLAIMED")
    engine = create_store_engine(db_url)
    claims = WatchedLeaseBackend(engine, "local", ttl_ms=5000, timeout_ms=15000)
    coordinator = (TreeLockFirstCoordinator if disabled("treelock_first") else Coordinator)(TreeLock(), claims)

    outcome: list[str] = []

    def structural_change() -> None:
        with coordinator.structural(SCOPE):
            outcome.append("changed")

    writer = threading.Thread(target=structural_change, daemon=True)
    writer.start()
    assert claims.waiting.wait(10), "the local structural change never had to wait for the remote claim"

    read_done = threading.Event()

    def local_read() -> None:
        with coordinator.local(SCOPE, LockType.READ):
            read_done.set()

    threading.Thread(target=local_read, daemon=True).start()
    read_unblocked = read_done.wait(2)
    remote.send("go")
    remote.expect("RELEASED")
    writer.join(15)
    engine.dispose()
    assert read_unblocked, "a local reader was blocked by a thread that was waiting for a remote claim"
    assert outcome == ["changed"]
