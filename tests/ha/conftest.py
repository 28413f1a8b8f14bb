"""HA test support: child processes driven line by line, and the switch that disables one safety
mechanism so that a run can show the test fails without it.

GRAVIMETA_HA_DISABLE (test-only) names one mechanism, or several separated by commas:
  naive_claim       claims check, then insert, in separate transactions, without anchor rows (test a)
  no_fence          the fence guard does nothing (test b; the replicas read it too, scope_lease.py)
  no_local_deadline a lease claim is trusted, with a whole lease left, whatever its clock and renewals say:
                    only the database's fence guard refuses a stale holder (test_steal_and_fence.py's
                    db_only case; with no_fence, tests/chaos/test_paused_claimant_order.py's holder
                    commits under its stolen claim: a ZOMBIE COMMIT)
  treelock_first    the coordinator takes the TreeLock before the claim (test c)
  flag_gate         the flag-off services get a claim backend anyway (test d)
  no_snapshot       EntityStore.snapshot() runs each read statement on its own: READ COMMITTED on
                    PostgreSQL/MariaDB, autocommit on SQLite (gravimeta/store/database.py;
                    test_snapshot_reads.py)
  no_row_lock       updates read the entity row without FOR UPDATE (entity_store._locked;
                    test_lost_update.py; the replicas inherit the variable. SQLite still passes: its
                    BEGIN IMMEDIATE write transactions never overlap)
  advisory_leaf_only  PG advisory claims lock only their own key, no shared locks on the ancestors
                    (patched in the child process, tests/ha/advisory_child.py; test_advisory_race.py)
  dispatch_local    structural calls take only the local TreeLock, as a dispatcher calling
                    coordinator.local would (test_structural_paths.py; treelock_first fails it too)
  lasting_claim_check  a journalled operation runs under a one-transaction (advisory) claim instead of
                    asking for the lease (patched in the test, test_claim_kind.py)
  advisory_queue    an advisory guard polls a taken lock with backoff instead of waiting in
                    PostgreSQL's lock queue (pg_advisory.py; test_advisory_queue.py)
  location_lock     sqlite catalog creates check that no other catalog owns the path without the
                    catalog root's lock (connectors/sqlite/paths.py, read from the environment there:
                    connectors do not import the store; tests/connectors/test_sqlite_locations.py)
  no_owner_lock     a change of owner reads the object's row without FOR UPDATE (ownership/store.py;
                    test_owner_races.py)
  tag_object_lock   a tag association reads its object's row without FOR SHARE (store/tags.py;
                    test_tag_races.py: a racing drop leaves an association to a deleted row)
  statistics_row_lock  a statistics update reads the table's row without FOR UPDATE (store/statistics.py;
                    test_statistics_race.py: two first writes of one statistic, one fails)
  engine_fence      engine calls carry no fencing token, and repairs, imports and catalog drops never
                    fence the old holder out (gravimeta/dispatch/engine_door.py;
                    tests/engine/test_zombie_engine_calls.py, test_engine_identity_races.py)
  identity_keys     engine fences are keyed by the claim's name path instead of the objects' identity
                    (dispatch/engine_keys.py; test_engine_identity_races.py, the catalog rename)
  import_barrier    an import reads the engine without raising its barrier first (dispatch/imports.py)
  engine_only_intent  the drop of a table only the engine has is sent without a journal intent
                    (dispatch/imports.py). Either of these two alone closes the import race (the intent
                    is repaired, behind a barrier, before the import reads; the model's BUG_IMPORT_INTENT
                    and BUG_IMPORT_BARRIER configurations are verified): test_engine_identity_races.py's
                    import race fails only with both, GRAVIMETA_HA_DISABLE=import_barrier,engine_only_intent
  retire            a catalog drop does not retire the catalog's key in its engine (dispatch/retirement.py;
                    test_engine_identity_races.py, the dropped catalog's namesake)
  retire_delivery   a retirement recorded at a drop the engine missed is never delivered
                    (dispatch/retirement.py; test_engine_identity_races.py, the missed retirement)
  retire_moved      a change of a catalog's properties that moves it to another engine does not retire its
                    key in the engine it leaves (dispatch/catalogs.py; test_engine_identity_races.py, the
                    moved catalog: a drop held in the old metastore lands after the next catalog there
                    imported the table)
  retire_lasting    a catalog or metalake drop (or a catalog's move) under an advisory claim (AUTO,
                    PG_ADVISORY), which has no token, does not ask for the lease, and so retires nothing
                    (dispatch/retirement.py; test_engine_identity_races.py, the postgresql-auto cases)
  retirement_per_engine  a pending retirement is recorded as the only one of its catalog key, replacing the
                    record of another engine the catalog left before (store/retirements.py, as the
                    upsert of one gm_server_setting row per key did; tests/engine/test_catalog_moves.py:
                    the first engine is never told, the held drop lands)
  retirement_compare_delete  a delivered retirement's record is deleted by its catalog key, not by its id
                    and token (store/retirements.py, as by name before; test_catalog_moves.py: a newer
                    record made while the delivery was on its way goes undelivered, the held drop lands)
  identity_in_claim a change of a catalog's properties records its engine identity after its claim
                    ended, asking the engine of the properties it wrote (dispatch/catalogs.py;
                    test_catalog_moves.py: two changes interleave and the record names the engine the
                    catalog left)
  identity_reverify a catalog's first use in a process asks its engine who it is only when no identity
                    is recorded (dispatch/retirement.py; test_catalog_moves.py: a record naming another
                    engine stays)
  retirement_watermark  a cached connector is handed out without looking for retirements recorded after
                    it was made (dispatch/connector_cache.py; test_catalog_moves.py: a catalog sharing
                    the metastore of one dropped meanwhile imports, the held drop lands)
  engine_calls_before_write  the connector cache makes a new connector (asking its engine, delivering
                    retirements) inside the journal's store write transaction, the question bounded by
                    the client's timeout alone (dispatch/connector_cache.py ready; test_catalog_moves.py:
                    on a SQLite store a frozen engine holds another replica's unrelated write past its
                    claim timeout)
  connector_identity  the connector cache knows a catalog by id, provider and properties, not also its create
                    time (dispatch/connector_cache.py; test_partition_races.py, the namesake on a SQLite
                    store: the dropped catalog's connector is handed out, its retirement never delivered;
                    fails only on a store before alembic 0019, since which SQLite reuses no id either)
  endpoint_addresses  a hive catalog's engine locations are its metastore endpoints as written, not also
                    by the addresses they resolve to (connectors/hive.py endpoint_places, read from the
                    environment there; test_engine_identity_races.py, a namesake that spells the
                    metastore otherwise: the missed retirement is not delivered, the held drop lands)
  engine_identity   the engines gravimeta owns report no identity (connectors/hive.py and
                    connectors/sqlite/connector.py engine_identity, read from the environment there), so
                    a catalog's engine is known by its places alone (test_engine_identity_races.py, a
                    namesake that reaches the metastore at no place the dropped catalog named: the missed
                    retirement is not delivered, the held drop lands)
  request_buffering `gravimeta serve` runs plain gthread instead of the buffering worker
                    (gravimeta/cli.py; tests/ops/test_slow_clients.py)
  response_buffering  the buffering worker's threads write whole answers on blocking sockets instead of
                    leaving what the client does not take at once to the event loop
                    (gravimeta/serving/buffering_worker.py; tests/ops/test_slow_readers.py)
  commit_session_end  the check of a lost COMMIT takes a missing write marker as "did not commit"
                    without ending the old session and waiting for it to go (store/commit_check.py;
                    tests/store/test_commit_check.py: a COMMIT still on its way then commits after the
                    answer "nothing was changed")
  no_access_recheck a structural operation does not check the caller's access again once it holds its
                    claim (gravimeta/api/door.py; tests/ha/test_access_races.py)
  access_cache      the door keeps each caller's facts (roles, privileges, owners) per process for a
                    minute, as a per-replica authorization cache would (gravimeta/access/reader.py;
                    tests/ha/test_access_races.py: a revoke is outlived)
  no_role_lock      role grants read the role, user and object rows without row locks
                    (gravimeta/roles/store.py; tests/ha/test_access_races.py: a 500 where a racing
                    deletion or drop committed first)
  role_resolve_in_write  a role create or override resolves its securable objects one by one inside its
                    write transaction instead of in a snapshot before it (gravimeta/roles/store.py;
                    test_role_resolution.py: on a SQLite store every other write waits for it)
  role_verify       a role create or override writes the ids its snapshot resolved without verifying them
                    in the write (gravimeta/roles/store.py; test_role_resolution.py: a table dropped in
                    between fails the create with a 500, one renamed in between gets the privilege)
  root_fence        an advisory claim on the root (a metalake create, rename or drop under AUTO or
                    PG_ADVISORY) leaves the fence counters as they were (pg_advisory.py;
                    test_fence_order.py, tests/engine/test_metalake_rename_fences.py: a renamed
                    metalake's catalogs get fences their engines refuse as stale)
  dropped_schema    the repair judges an intent whose schema was dropped (its key's schema identity is
                    gone from the store) by its names alone (dispatch/repair.py;
                    tests/engine/test_dropped_schema_intents.py: the intent is marked stuck)
  node_revision_fallback  a worker on a store before the node registry's schema_revision column (alembic
                    0018) does not register without it (concurrency/node_registry.py;
                    tests/store/test_migrations.py, the 0018 case: the worker does not register)
  durable_fence     the engine door sends a claim's fence to an engine without making its grant durable
                    first (dispatch/engine_door.py, concurrency/lease_claim.py make_durable;
                    tests/ha/test_durable_fence.py: after a failover the new primary grants the fence
                    the engine saw again)
  repair_preview    the repair's dry run runs the real repair first (dispatch/repair_preview.py;
                    tests/engine/test_repair_preview.py: the store and the engine's files change)
  fresh_grant       a claim whose attempt waited on a row lock past its TTL is handed to the operation
                    with its lease already run out (concurrency/scope_lease.py _born_spent;
                    test_spent_grant.py: its fence guard answers FENCELOST)
  create_shape      the repair takes any engine table of a create's name for the create's, whatever its
                    columns (dispatch/intents.py; tests/connectors/test_failure_matrix.py and
                    tests/hardening/test_lost_commits.py: a refused create whose intent stayed open is
                    rolled forward onto the engine's other table)
  root_hold_back    a busy lease root claim records nothing, so nothing holds new claims back while it
                    waits (concurrency/root_wait.py; test_root_claim_fairness.py: a metalake create
                    answers 503 ScopeBusy while m1 always holds a live claim)
  root_wait_expiry  a waiting root claim's record lives until its end (a quarter of the root claim's
                    timeout), not 500 ms past its last attempt (root_wait.py; test_root_claim_fairness.py:
                    a frozen or dead waiter holds a create in m1 back for about 3 s)
  root_hold_cap     a waiting root claim's record may last until the root claim's deadline
                    (root_wait.py; test_root_claim_behind_a_frozen_holder.py: behind a frozen holder in
                    m4, a create in m1 answers 503 after its own claim timeout)
  jdbc_fence_check  the JDBC engines neither check nor record fences (connectors/jdbc/pgfences.py and
                    myfences.py, read from the environment there). Alone it shows the engine's check is the
                    one that refuses: tests/engine/test_jdbc_zombie_calls.py's before-check case then gets the
                    client's own refusal instead (its message is not the engine's); with
                    jdbc_statement_deadline too, the zombie's drop lands
  jdbc_statement_deadline  a JDBC call does not look at its deadline again once it has started (each
                    statement still carries its timeouts; connectors/jdbc/common.py Deadline.left_now)
  jdbc_session_timeout  a JDBC call leaves its session's idle limits to the server (no
                    idle_in_transaction_session_timeout on PostgreSQL, no wait_timeout on MySQL): a holder
                    paused inside its call keeps its locks (the zombie tests' before-commit and after-check
                    cases: the next holder's barrier waits until its own claim runs out)
  jdbc_named_lock   jdbc-mysql calls and barriers take no named lock, the fence check alone
                    (connectors/jdbc/mysql.py; tests/connectors/test_jdbc_mysql_window.py: barriers
                    complete between a call's check and its DDL's effect)
The switches read by the server itself (no_fence, no_local_deadline, no_snapshot, no_row_lock, advisory_queue, no_owner_lock,
tag_object_lock, statistics_row_lock, engine_fence, identity_keys, import_barrier, retire, retire_delivery,
retire_moved, retire_lasting, connector_identity, request_buffering, response_buffering, commit_session_end,
no_access_recheck, access_cache, no_role_lock, role_resolve_in_write, role_verify, root_fence, dropped_schema,
node_revision_fallback, durable_fence, repair_preview, fresh_grant, create_shape, root_hold_back, root_wait_expiry,
root_hold_cap) go through gravimeta.store.database.disabled_for_test (root_wait.py: gravimeta.failpoints.disabled_for_test,
the same function) and are marked TEST-ONLY where they act.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import Cluster

REPO = Path(__file__).resolve().parents[2]
DISABLED = os.environ.get("GRAVIMETA_HA_DISABLE", "")


def disabled(mechanism: str) -> bool:
    return mechanism in DISABLED.split(",")


class Child:
    """A `python -m tests.ha.child` process (or another `module` with the same protocol); `expect`
    reads its next status line with a deadline."""

    def __init__(self, mode: str, cfg: dict, module: str = "tests.ha.child"):
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, mode, json.dumps(cfg)],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.strip())
        self._lines.put(None)

    def expect(self, prefix: str, timeout: float = 20.0) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"child said nothing for {timeout}s (waiting for {prefix})") from None
        if line is None:
            err = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"child exited before {prefix}: {err[-3000:]}")
        assert line.startswith(prefix), f"expected {prefix}, child said {line!r}"
        return line[len(prefix):].strip()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def signal(self, sig: int) -> None:
        os.killpg(self.process.pid, sig)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGCONT)
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(10)


@pytest.fixture
def children():
    """Start children with children(mode, cfg[, module]); all are killed at the end of the test."""
    started: list[Child] = []

    def start(mode: str, cfg: dict, module: str = "tests.ha.child") -> Child:
        child = Child(mode, cfg, module)
        started.append(child)
        return child

    yield start
    for child in started:
        child.stop()


@pytest.fixture
def clusters() -> Iterator[list[Cluster]]:
    """A list to append gunicorn clusters (tests/engine/conftest.py) to; each is stopped at the end of the test."""
    made: list[Cluster] = []
    try:
        yield made
    finally:
        for cluster in made:
            cluster.stop()


def race_together(racers: list[Child], timeout: float) -> None:
    """Let racer children start at the same moment (all READY, then go) and wait until each is DONE."""
    for racer in racers:
        racer.expect("READY")
    for racer in racers:
        racer.send("go")
    for racer in racers:
        racer.expect("DONE", timeout=timeout)
