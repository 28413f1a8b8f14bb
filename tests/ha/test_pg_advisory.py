"""PG_ADVISORY: a claim is a transaction holding shared locks on the ancestors and an exclusive lock on
the scope; it excludes related scopes only; lease claims and advisory claims exclude each other; the
operation's store writes run in the claim's transaction and end with it (pg_advisory.py)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from gravimeta import errors
from gravimeta.concurrency.coordinator import Coordinator
from gravimeta.concurrency.pg_advisory import AdvisoryBackend, lock_plan
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.concurrency.tree_lock import TreeLock
from gravimeta.entities import Metalake, NameIdentifier
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine, write_session
from gravimeta.store.migrations import upgrade
from tests.conftest import require_backend
from tests.support.databases import downgrade, fresh_database


@pytest.fixture
def pg_engine(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url)
        yield engine
        engine.dispose()


def scope(path: str) -> NameIdentifier:
    return NameIdentifier(tuple(path.strip("/").split("/")) if path != "/" else ())


@pytest.mark.parametrize("other,conflicts", [
    ("/m/c", True), ("/m/c/s", True), ("/m", True), ("/", True), ("/m/c2", False), ("/m/c/s2", False),
    ("/n", False),
])
def test_an_open_claim_excludes_related_scopes_only(pg_engine, other, conflicts):
    holder, contender = AdvisoryBackend(pg_engine, timeout_ms=10000), AdvisoryBackend(pg_engine, timeout_ms=200)
    target = "/m/c" if other not in ("/m/c/s2",) else "/m/c/s"
    held = holder.claim(scope(target))
    try:
        if conflicts:
            with pytest.raises(errors.ScopeBusy):
                contender.claim(scope(other))
        else:
            contender.claim(scope(other)).release()
    finally:
        held.release()
    contender.claim(scope(other)).release()  # the rollback released everything


def test_lease_claims_and_advisory_claims_exclude_each_other(pg_engine):
    lease = LeaseBackend(pg_engine, "n", ttl_ms=5000, timeout_ms=200, advisory_plan=lock_plan)
    advisory = AdvisoryBackend(pg_engine, timeout_ms=200)
    claim = lease.claim_path("/m/c")
    with pytest.raises(errors.ScopeBusy):
        advisory.claim(scope("/m/c/s"))
    claim.release()
    held = advisory.claim(scope("/m"))
    with pytest.raises(errors.ScopeBusy):
        lease.claim_path("/m/c/s")
    held.release()
    lease.claim_path("/m/c/s").release()


def test_an_expired_lease_row_locked_by_its_holder_keeps_an_advisory_claim_waiting(pg_engine):
    """The locking read of 0011 in two connections: the holder's fence guard holds its (expired) row
    FOR UPDATE; the advisory claim waits for it and is refused when its time is up."""
    lease = LeaseBackend(pg_engine, "n", ttl_ms=200, timeout_ms=1000, advisory_plan=lock_plan)
    claim = lease.claim_path("/m/c/s")
    with write_session(pg_engine) as holder:
        claim.fence_guard()(holder)  # the row is locked FOR UPDATE until this transaction ends
        with pg_engine.connect() as conn:
            conn.execute(text("SELECT pg_sleep(0.3)"))  # the lease expires meanwhile
        with pytest.raises(errors.ScopeBusy):
            AdvisoryBackend(pg_engine, timeout_ms=300).claim(scope("/m"))
    AdvisoryBackend(pg_engine, timeout_ms=300).claim(scope("/m")).release()  # expired, not locked: granted


def test_the_operations_writes_commit_with_the_claim_and_roll_back_with_it(pg_engine):
    store = EntityStore(pg_engine)
    coordinator = Coordinator(TreeLock(), AdvisoryBackend(pg_engine, timeout_ms=2000))
    with coordinator.structural(scope("/")):
        store.create_metalake(Metalake("kept"), "u")
        with pytest.raises(errors.MetalakeAlreadyExists):  # a later write that fails undoes only itself
            store.create_metalake(Metalake("kept"), "u")
        store.create_metalake(Metalake("also"), "u")
        assert [m.name for m in store.list_metalakes()] == []  # not committed before the operation ends
    assert [m.name for m in store.list_metalakes()] == ["also", "kept"]
    with pytest.raises(RuntimeError), coordinator.structural(scope("/")):
        store.create_metalake(Metalake("lost"), "u")
        raise RuntimeError("the operation fails after its write")
    assert [m.name for m in store.list_metalakes()] == ["also", "kept"]


def test_a_write_after_a_failed_first_write_takes_the_locks_again_only_if_free(pg_engine):
    store = EntityStore(pg_engine)
    store.create_metalake(Metalake("kept"), "u")
    coordinator = Coordinator(TreeLock(), AdvisoryBackend(pg_engine, timeout_ms=2000))
    other = AdvisoryBackend(pg_engine, timeout_ms=2000)
    with coordinator.structural(scope("/m")):
        with pytest.raises(errors.MetalakeAlreadyExists):
            store.create_metalake(Metalake("kept"), "u")  # the first write fails: its transaction ends
        taken = threading.Event()
        done = threading.Event()

        def hold() -> None:
            claim = other.claim(scope("/m"))
            taken.set()
            done.wait(10)
            claim.release()

        threading.Thread(target=hold, daemon=True).start()
        assert taken.wait(10)
        with pytest.raises(errors.ScopeBusy):
            store.create_metalake(Metalake("m2"), "u")
        done.set()


def test_0011_downgrade_restores_the_0006_function(pg_engine):
    def advisory_claim_source() -> str:
        with pg_engine.connect() as conn:
            return str(conn.execute(text("SELECT prosrc FROM pg_proc WHERE proname = 'gm_advisory_claim'")).scalar_one())

    assert "FOR SHARE" in advisory_claim_source()
    downgrade(pg_engine, "0010")
    assert "FOR SHARE" not in advisory_claim_source() and "EXISTS" in advisory_claim_source()
    upgrade(pg_engine)
    assert "FOR SHARE" in advisory_claim_source()
