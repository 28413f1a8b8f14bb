"""PG_ADVISORY: shared locks on ancestors and an exclusive lock on the scope, taken inside the store
transaction, exclude related scopes only; lease claims and advisory claims exclude each other."""

from __future__ import annotations

import pytest

from gravimeta import errors
from gravimeta.concurrency.pg_advisory import AdvisoryBackend, lock_plan
from gravimeta.concurrency.scope_lease import LeaseBackend
from gravimeta.entities import NameIdentifier
from gravimeta.store.database import create_store_engine, write_session
from tests.conftest import require_backend
from tests.support.databases import fresh_database


@pytest.fixture
def pg_engine(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        engine = create_store_engine(url)
        yield engine
        engine.dispose()


def scope(path: str) -> NameIdentifier:
    return NameIdentifier(tuple(path.strip("/").split("/")) if path != "/" else ())


def guard_of(backend: AdvisoryBackend, path: str):  # type: ignore[no-untyped-def]
    return backend.claim(scope(path)).fence_guard()


@pytest.mark.parametrize("other,conflicts", [
    ("/m/c", True), ("/m/c/s", True), ("/m", True), ("/", True), ("/m/c2", False), ("/m/c/s2", False),
    ("/n", False),
])
def test_an_open_store_transaction_excludes_related_scopes_only(pg_engine, other, conflicts):
    holder, contender = AdvisoryBackend(timeout_ms=10000), AdvisoryBackend(timeout_ms=200)
    target = "/m/c" if other not in ("/m/c/s2",) else "/m/c/s"
    with write_session(pg_engine) as held:
        guard_of(holder, target)(held)
        with write_session(pg_engine) as session:
            if conflicts:
                with pytest.raises(errors.ScopeBusy):
                    guard_of(contender, other)(session)
            else:
                guard_of(contender, other)(session)
    with write_session(pg_engine) as session:  # the commit released everything
        guard_of(contender, other)(session)


def test_lease_claims_and_advisory_claims_exclude_each_other(pg_engine):
    lease = LeaseBackend(pg_engine, "n", ttl_ms=5000, timeout_ms=200, advisory_plan=lock_plan)
    advisory = AdvisoryBackend(timeout_ms=200)
    claim = lease.claim_path("/m/c")
    with pytest.raises(errors.ScopeBusy), write_session(pg_engine) as session:
        guard_of(advisory, "/m/c/s")(session)
    claim.release()
    with write_session(pg_engine) as session:
        guard_of(advisory, "/m")(session)
        with pytest.raises(errors.ScopeBusy):
            lease.claim_path("/m/c/s")
    lease.claim_path("/m/c/s").release()
