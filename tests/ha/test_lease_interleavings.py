"""The lease claim (LEASE_TABLE) under the interleavings of a steal and a renewal, each forced with failpoints
(gravimeta/failpoints.py) on two real processes (tests/ha/lease_child.py) sharing one database.

A steal racing an in-flight renewal, at the grain of SQL statements (H holds /m/c; S claims /m):

  H  UPDATE gm_scope_lease SET lease_expires_at = now+TTL WHERE /m/c, H, fence AND unexpired  (row locked)
     -- paused at renew.before_commit until the committed lease has expired --
  S  anchors locked; reads the related claims: /m/c, committed, expired
  S  (before the fix) DELETE /m/c WHERE expired   -> waits for H's row lock
  H  COMMIT                                       -> /m/c live for another TTL
  S  the DELETE re-checks the new row version (PostgreSQL EvalPlanQual, InnoDB's locking read of the
     latest version): not expired, 0 rows deleted; S inserted its grant anyway: two live related claims,
     both fence guards pass.

The fix reads the related rows with a lock (SELECT ... FOR UPDATE after the anchor locks), so S waits
for H's renewal to commit, sees /m/c live and waits (ScopeBusy at its timeout) instead.

PostgreSQL and MariaDB only: on SQLite every write transaction (renewal and claim) is BEGIN IMMEDIATE,
so S cannot start its claim transaction while H's renewal is open.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select, text

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.concurrency.tables import scope_lease
from gravimeta.entities import Catalog, Metalake
from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from tests.conftest import require_backend
from tests.engine.conftest import wait_until
from tests.support.databases import fresh_database
from tests.support.failpoints import Failpoints

TTL_MS = 3000
RENEW_BEFORE_MS = 600  # H's renewal UPDATE runs this long before its lease expires


@pytest.fixture(params=["postgresql", "mysql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    require_backend(request.param)
    with fresh_database(request.param, tmp_path) as url:
        engine = create_store_engine(url)
        store = EntityStore(engine)
        store.create_metalake(Metalake("m"), "test")
        store.create_catalog(Catalog("m", "c", "relational", "memory"), "test")
        yield engine
        engine.dispose()


@pytest.fixture
def fp(tmp_path) -> Iterator[Failpoints]:
    points = Failpoints(tmp_path / "fp")
    yield points
    points.clear()


def cfg(engine: Engine, fp: Failpoints, tag: str, path: str, **more: object) -> dict:
    url = engine.url.render_as_string(hide_password=False)
    return {"url": url, "fp_dir": str(fp.dir), "tag": tag, "path": path, "ttl_ms": TTL_MS, **more}


def committed_lease_expired(engine: Engine, path: str) -> bool:
    lease = scope_lease.c
    with engine.connect() as conn:
        return bool(conn.execute(select(lease.lease_expires_at <= db_now(dialect_of(engine)))
                                 .where(lease.scope_path == path)).scalar())


def someone_waits_on_a_row_lock(engine: Engine) -> bool:
    """Whether a session of this test's database is waiting for a row lock (MariaDB: a statement on
    gm_scope_lease has been running for 300 ms, which only a lock wait makes it do)."""
    if dialect_of(engine) == "postgresql":
        query = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND wait_event_type = 'Lock'")
    else:  # MariaDB lists a waiting transaction that has written nothing yet in no innodb_trx row
        query = ("SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() "
                 "AND id <> CONNECTION_ID() AND info LIKE '%gm_scope_lease%' AND time_ms > 300")
    with engine.connect() as conn:
        return bool(conn.execute(text(query)).scalar())


def test_a_steal_waits_for_an_in_flight_renewal_and_then_finds_the_claim_live(engine, fp, children):
    # S's process starts first and claims on "go": its start-up (seconds on a loaded machine) must not eat
    # into H's leases, the renewed one of which has to outlast S's claim and reach H's guard below
    s = children("claim", cfg(engine, fp, "s", "/m", timeout_ms=800, ready_first=True), "tests.ha.lease_child")
    s.expect("READY")
    h = children("hold", cfg(engine, fp, "h", "/m/c", renew_before_ms=RENEW_BEFORE_MS), "tests.ha.lease_child")
    h.expect("CLAIMED")
    fp.arm("renew.before_commit", tag="h")
    h.send("go")
    renewing = fp.wait_reached("renew.before_commit", tag="h", timeout=TTL_MS / 1000 + 10)
    wait_until("H's committed lease on /m/c has expired while its renewal is uncommitted",
               lambda: committed_lease_expired(engine, "/m/c"), timeout=10)

    s.send("go")
    wait_until("S's claim transaction waits on H's row lock", lambda: someone_waits_on_a_row_lock(engine), timeout=10)
    fp.resume(renewing)
    assert h.expect("") == "RENEWED"

    s_answer = s.expect("", timeout=20)
    s_guard = s.expect("") if s_answer.startswith("CLAIMED") else None
    h.send("go")
    h_guard = h.expect("")
    assert not (s_guard == "GUARD OK" and h_guard == "GUARD OK"), (
        f"S was granted /m ({s_answer}) while H's renewed claim on /m/c was live: both fence guards passed")
    assert h_guard == "GUARD OK", h_guard
    assert s_answer == "BUSY", s_answer
