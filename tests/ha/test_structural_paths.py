"""Every structural operation reachable from the REST API goes through the coordinator: one
`Coordinator.structural` call per request, on the scope and with the lock type of Gravitino's
dispatcher table (gravitino-api.md §2.2), with the claim taken before the TreeLock and released after
it, and every store write of the request behind the claim's fence guard. Enabling or
disabling a metalake or catalog claims the metalake like a structural change (so it is ordered with the
structural changes inside it). Property changes take no claim, nor do tags and statistics; adding or
dropping a partition claims the table (test_a_hive_partition_change_claims_the_table_before_its_engine_call for the engine).

The requests run through the Flask app (flag on, LEASE_TABLE, SQLite); the coordinator of that app is
instrumented in place, so the dispatchers are exactly the ones the server uses.
Mechanism off: GRAVIMETA_HA_DISABLE=dispatch_local makes structural calls take only the local
TreeLock (as a dispatcher calling coordinator.local would), and =treelock_first takes the TreeLock
before the claim; either makes this test fail."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gravimeta.app import create_app
from gravimeta.concurrency.paths import scope_path
from gravimeta.concurrency.tree_lock import LockType
from gravimeta.config import Settings
from gravimeta.entities import NameIdentifier
from tests.ha.conftest import disabled
from tests.ha.test_claim_before_treelock import TreeLockFirstCoordinator

R, W = LockType.READ, LockType.WRITE
M, C, S = "/m", "/m/c", "/m/c/s"
COLUMNS = [{"name": "id", "type": "integer", "comment": None, "nullable": True, "autoIncrement": False}]
API = "/api/metalakes"


def rename(new: str, schema: str | None = None) -> dict[str, Any]:
    return {"updates": [{"@type": "rename", "newName": new, **({"newSchemaName": schema} if schema else {})}]}


def set_property(key: str) -> dict[str, Any]:
    return {"updates": [{"@type": "setProperty", "property": f"gravitino.test.{key}", "value": "v"}]}


def table_body(name: str) -> dict[str, Any]:
    return {"name": name, "columns": COLUMNS}


BY_ID = [{"strategy": "identity", "fieldName": ["id"]}]
PARTITION = {"type": "identity", "name": "id=1", "fieldNames": [["id"]],
             "values": [{"type": "literal", "dataType": "integer", "value": "1"}]}
CAT = f"{API}/m/catalogs"
SCH = f"{CAT}/c/schemas"
# (what, method, path, body, the structural scopes Gravitino's table gives: [(scope path, leaf lock)])
OPERATIONS: list[tuple[str, str, str, Any, list[tuple[str, LockType]]]] = [
    ("create metalake", "POST", API, {"name": "m"}, [("/", W)]),
    ("create catalog", "POST", CAT, {"name": "c", "type": "relational", "provider": "memory"}, [(M, W)]),
    ("create schema", "POST", SCH, {"name": "s"}, [(C, W)]),
    ("create schema s2", "POST", SCH, {"name": "s2"}, [(C, W)]),
    ("create table", "POST", f"{SCH}/s/tables", table_body("t"), [(S, W)]),
    ("rename table within its schema", "PUT", f"{SCH}/s/tables/t", rename("t1"), [(S, W)]),
    ("move table to another schema", "PUT", f"{SCH}/s/tables/t1", rename("t1", "s2"), [(C, W)]),
    ("set a table property", "PUT", f"{SCH}/s2/tables/t1", set_property("k"), []),
    ("drop table", "DELETE", f"{SCH}/s2/tables/t1", None, [("/m/c/s2", W)]),
    ("drop a missing table", "DELETE", f"{SCH}/s2/tables/t1", None, [("/m/c/s2", W)]),
    ("create table to purge", "POST", f"{SCH}/s2/tables", table_body("p"), [("/m/c/s2", W)]),
    ("purge table", "DELETE", f"{SCH}/s2/tables/p?purge=true", None, [("/m/c/s2", W)]),
    ("set a schema property", "PUT", f"{SCH}/s2", set_property("k"), []),
    ("drop empty schema", "DELETE", f"{SCH}/s2", None, [(C, W)]),
    ("create table t2", "POST", f"{SCH}/s/tables", table_body("t2"), [(S, W)]),
    ("cascade drop schema", "DELETE", f"{SCH}/s?cascade=true", None, [(C, W)]),
    ("create schema s3", "POST", SCH, {"name": "s3"}, [(C, W)]),
    ("create table t3", "POST", f"{SCH}/s3/tables", table_body("t3"), [("/m/c/s3", W)]),
    ("create partitioned table", "POST", f"{SCH}/s3/tables", {**table_body("pt"), "partitioning": BY_ID},
     [("/m/c/s3", W)]),
    ("add a partition", "POST", f"{SCH}/s3/tables/pt/partitions", {"partitions": [PARTITION]}, [("/m/c/s3/pt", W)]),
    ("drop a partition", "DELETE", f"{SCH}/s3/tables/pt/partitions/id=1", None, [("/m/c/s3/pt", W)]),
    ("drop a missing partition", "DELETE", f"{SCH}/s3/tables/pt/partitions/id=1", None, [("/m/c/s3/pt", W)]),
    ("create a tag", "POST", f"{API}/m/tags", {"name": "g"}, []),
    ("tag a table", "POST", f"{API}/m/objects/table/c.s3.t3/tags", {"tagsToAdd": ["g"]}, []),
    ("set a statistic", "PUT", f"{API}/m/objects/table/c.s3.t3/statistics", {"updates": {"custom-n": 1}}, []),
    ("set a catalog property", "PUT", f"{CAT}/c", set_property("k"), []),
    ("rename catalog", "PUT", f"{CAT}/c", rename("c2"), [(M, W)]),
    ("disable catalog", "PATCH", f"{CAT}/c2", {"inUse": False}, [(M, W)]),
    ("disable a disabled catalog", "PATCH", f"{CAT}/c2", {"inUse": False}, [(M, W)]),
    ("enable catalog", "PATCH", f"{CAT}/c2", {"inUse": True}, [(M, W)]),
    ("force drop catalog with a schema and table", "DELETE", f"{CAT}/c2?force=true", None, [(M, W)]),
    ("create catalog c3", "POST", CAT, {"name": "c3", "type": "relational", "provider": "memory"}, [(M, W)]),
    ("disable metalake", "PATCH", f"{API}/m", {"inUse": False}, [(M, W)]),
    ("enable metalake", "PATCH", f"{API}/m", {"inUse": True}, [(M, W)]),
    ("enable an enabled metalake", "PATCH", f"{API}/m", {"inUse": True}, [(M, W)]),
    ("set a metalake property", "PUT", f"{API}/m", set_property("k"), []),
    ("rename metalake", "PUT", f"{API}/m", rename("m2"), [("/", W)]),
    ("force drop metalake with a catalog", "DELETE", f"{API}/m2?force=true", None, [("/", W)]),
    ("drop a missing metalake", "DELETE", f"{API}/m2?force=true", None, [("/", W)]),
]


class Recorder:
    """Wraps the app's coordinator, claim backend, TreeLock and store in place and logs, in order:
    ("structural", path, type), ("claim", path), ("lock", path, type), ("unlock", path),
    ("release", path), ("write",) and ("fenced", path) when a claim's fence guard runs in a write."""

    def __init__(self, services: Any):
        self.events: list[tuple[Any, ...]] = []
        coordinator, store = services.coordinator, services.store
        claims, tree_lock = coordinator.claims, coordinator.tree_lock
        claim, locked, structural, write = claims.claim, tree_lock.locked, coordinator.structural, store.write
        log = self.events.append

        def recording_claim(scope: NameIdentifier) -> Any:
            granted = claim(scope)
            log(("claim", scope_path(scope)))
            release = granted.release

            def recording_release() -> None:
                log(("release", scope_path(scope)))
                release()

            fence_guard = granted.fence_guard

            def recording_fence_guard() -> Any:
                inner = fence_guard()

                def fenced(session: Any) -> None:
                    log(("fenced", scope_path(scope)))
                    if inner is not None:
                        inner(session)

                return fenced

            granted.release, granted.fence_guard = recording_release, recording_fence_guard
            return granted

        @contextmanager
        def recording_locked(ident: NameIdentifier, lock_type: LockType) -> Iterator[None]:
            with locked(ident, lock_type):
                log(("lock", scope_path(ident), lock_type))
                try:
                    yield
                finally:
                    log(("unlock", scope_path(ident)))

        def recording(structural: Any) -> Any:
            @contextmanager
            def recording_structural(scope: NameIdentifier, lock_type: LockType = LockType.WRITE) -> Iterator[None]:
                log(("structural", scope_path(scope), lock_type))
                with structural(scope, lock_type):
                    yield

            return recording_structural

        def recording_write(work: Any, prelude: Any = None) -> Any:
            log(("write",))
            return write(work, prelude)

        claims.claim, tree_lock.locked, coordinator.structural, store.write = (
            recording_claim, recording_locked, recording(structural), recording_write,
        )
        if disabled("dispatch_local"):  # structural calls become local ones (not recorded as structural)
            coordinator.structural = coordinator.local
        if disabled("treelock_first"):  # the wrong order: TreeLock, then claim
            coordinator.structural = recording(TreeLockFirstCoordinator.structural.__get__(coordinator))


def check_structural(events: list[tuple[Any, ...]], expected: list[tuple[str, LockType]], changes: bool) -> list[str]:
    """Problems with one request's events (empty when it went through the coordinator correctly)."""
    problems = []
    calls = [(e[1], e[2]) for e in events if e[0] == "structural"]
    if calls != expected:
        problems.append(f"structural calls {calls}, Gravitino's table says {expected}")
    for i, event in enumerate(events):
        if event[0] != "structural":
            continue
        path, lock_type = event[1], event[2]
        rest = events[i + 1:]
        claim = _index(rest, ("claim", path))
        lock = _index(rest, ("lock", path, lock_type))
        if claim is None:
            problems.append(f"no claim on {path}")
        if lock is None:
            problems.append(f"no TreeLock {lock_type.value} on {path}")
        if claim is None or lock is None:
            continue
        if not claim < lock:
            problems.append(f"TreeLock on {path} taken before its claim")
        unlock = _index(rest, ("unlock", path), after=lock)
        release = _index(rest, ("release", path), after=claim)
        if unlock is None or release is None or not unlock < release:
            problems.append(f"claim on {path} released before its TreeLock (unlock {unlock}, release {release})")
        locked_at_lock = sum(1 for e in rest[:lock] if e[0] == "lock") - sum(1 for e in rest[:lock] if e[0] == "unlock")
        if locked_at_lock > 0:
            problems.append(f"a TreeLock was held while claiming {path}")
    writes = [i for i, e in enumerate(events) if e[0] == "write"]
    if expected and changes and not writes:
        problems.append("no store write")
    unfenced = [i for i, end in zip(writes, [*writes[1:], len(events)], strict=False)
                if not any(e[0] == "fenced" for e in events[i + 1:end])]
    if expected and unfenced:
        problems.append(f"{len(unfenced)} of {len(writes)} store writes did not run the claim's fence guard")
    if not expected and any(e[0] == "claim" for e in events):
        problems.append("a non-structural operation took a claim")
    return problems


def _index(events: list[tuple[Any, ...]], wanted: tuple[Any, ...], after: int = -1) -> int | None:
    return next((i for i, e in enumerate(events) if i > after and e == wanted), None)


@pytest.fixture
def recorded_app(sqlite_url):
    settings = Settings(store_url=sqlite_url, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE")
    app = create_app(settings)
    services = app.extensions["gravimeta"]
    yield app, Recorder(services)
    services.coordinator.runtime.heartbeat.stop()
    services.store.engine.dispose()


def test_every_structural_request_claims_its_gravitino_scope_before_the_tree_lock(recorded_app):
    app, recorder = recorded_app
    client = app.test_client()
    problems = {}
    for what, method, path, body, expected in OPERATIONS:
        recorder.events.clear()
        response = client.open(path, method=method, json=body)
        assert response.status_code == 200 and response.get_json()["code"] == 0, (what, response.get_data(True))
        found = check_structural(list(recorder.events), expected, changes="missing" not in what)
        if found:
            problems[what] = found
    assert not problems, "\n".join(f"{what}: {p}" for what, p in problems.items())


def test_a_hive_partition_change_claims_the_table_before_its_engine_call(recorded_app, hive_stub, monkeypatch):
    """The metastore keeps a hive table's partitions: the add/drop claims the table scope, runs the claim's
    fence guard in a store transaction, and calls the engine while it still holds the claim."""
    from connectors.hive import HiveConnector

    app, recorder = recorded_app
    client = app.test_client()
    for method in ("add_partition", "drop_partition"):
        original = getattr(HiveConnector, method)

        def engine_call(self, *args, _original=original, _method=method, **kwargs):  # type: ignore[no-untyped-def]
            recorder.events.append(("engine", _method))
            assert kwargs["fence"].token is not None, "a claimed engine call carries the claim's fence"
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(HiveConnector, method, engine_call)
    for path, body in [(API, {"name": "m"}),
                       (CAT, {"name": "h", "type": "relational", "provider": "hive",
                              "properties": {"metastore.uris": hive_stub.uri}}),
                       (f"{CAT}/h/schemas", {"name": "s"}),
                       (f"{CAT}/h/schemas/s/tables", {**table_body("pt"), "partitioning": BY_ID})]:
        assert client.post(path, json=body).status_code == 200
    partitions = f"{CAT}/h/schemas/s/tables/pt/partitions"
    for what, method, path, body, engine in [
        ("add", "POST", partitions, {"partitions": [PARTITION]}, "add_partition"),
        ("drop", "DELETE", f"{partitions}/id=1", None, "drop_partition"),
    ]:
        recorder.events.clear()
        response = client.open(path, method=method, json=body)
        assert response.status_code == 200, response.get_data(True)
        events = list(recorder.events)
        assert check_structural(events, [("/m/h/s/pt", W)], changes=True) == [], what
        claim, call, release = (_index(events, e) for e in (("claim", "/m/h/s/pt"), ("engine", engine),
                                                           ("release", "/m/h/s/pt")))
        fenced = _index(events, ("fenced", "/m/h/s/pt"))
        assert None not in (claim, call, release, fenced) and claim < fenced < call < release, (what, events)
