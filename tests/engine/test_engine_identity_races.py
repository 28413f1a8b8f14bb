"""Engine calls in flight across a catalog rename, an import and a catalog re-creation (real replicas).

Each case leaves one engine call of replica A held inside the hive stub (a `hang` fault on drop_table)
past the catalog's client timeout, so A answers 502 without knowing whether the drop happened. Replica B
then changes the tree so that the same table is reached under another name or as another object:

- the catalog is renamed, and B's next operation under the new name repairs A's intent;
- the table existed only in the engine, and B's load imports it into the store;
- the catalog is force-dropped, re-created under its old name on the same metastore, and B's load
  imports the table again.

Then the held drop is released. Whatever the stub does with it, the store and the engine must agree
about the table afterwards (A's drop was never acknowledged, so either outcome is right as long as both
sides show it), and B's acknowledged changes must all be in both. Before every engine call is fenced by
the object's identity, A's late drop carries the old name path, nothing on that path was ever fenced, and
the engine applies it: the store keeps t, the engine has lost it, and nothing is left to repair.

The checks use no engine-call internals: B's REST answers, the store's own read of the schema's tables
(a REST list is the union of the store's and the engine's names, so it cannot show a store row the
engine lacks by itself), and the metastore's own HTTP API.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from gravimeta.store import EntityStore
from gravimeta.store.retirements import retirement
from tests.conftest import require_backend
from tests.engine.conftest import Api, Cluster, hive_properties, ok, path_of, wait_until
from tests.support.databases import fresh_database

H, S, T = "h", "s", "t"
HOLD_S = 30  # the held call waits at most this long; every test releases it explicitly
DIVERGE = "the store and the engine disagree once the held drop was released"


@pytest.fixture(params=[("postgresql", "LEASE_TABLE"), ("mysql", "LEASE_TABLE"), ("postgresql", "AUTO")],
                ids=["postgresql-lease", "mysql-lease", "postgresql-auto"])
def lock_db(request, tmp_path) -> Iterator[tuple[str, str]]:
    """A fresh migrated PostgreSQL or MariaDB database and the claim backend to run on it."""
    backend, lock = request.param
    require_backend(backend)
    with fresh_database(backend, tmp_path) as url:
        yield url, lock


@pytest.fixture
def lock_cluster(lock_db, cluster_of) -> Cluster:
    """Replicas of lock_db with its claim backend (stopped before the database is dropped)."""
    url, lock = lock_db
    return cluster_of(url, GRAVIMETA_DISTRIBUTED_LOCK_BACKEND=lock)


def engine_tables(stub: Any, schema: str = S) -> list[str]:
    """What the metastore itself lists in `schema` (its own API, no gravimeta code)."""
    status, body = stub.raw("GET", f"/databases/{schema}/tables")
    assert status == 200, body
    return sorted(body["tables"])


def hold_drop(stub: Any, drop: Any) -> tuple[int, dict[str, Any]]:
    """Run `drop` with the stub holding its drop_table call; its answer comes once the client gives up."""
    stub.fault("hang", seconds=HOLD_S, ops=["drop_table"])
    answer = drop()
    stub.wait_hung()  # the call is still inside the stub, before its work, after the replica answered
    return answer


def release(stub: Any) -> None:
    """Let the held call go on and wait until the stub has judged it (applied or refused)."""
    stub.release()
    stub.wait_idle()


def store_tables(cluster: Cluster, c: str, schema: str = S) -> list[str]:
    """The tables the store itself has in m.c.schema (its rows, not the REST union with the engine)."""
    return EntityStore(cluster.engine).list_tables("m", c, schema)


def assert_agree(cluster: Cluster, api: Api, stub: Any, c: str, acknowledged: list[str]) -> None:
    """The store and the engine list the same tables, the REST list shows them, and every table whose
    creation or import was acknowledged is among them."""
    store, engine = store_tables(cluster, c), engine_tables(stub)
    assert store == engine, f"{DIVERGE}: store {store}, engine {engine}"
    assert api.tables(c=c) == engine
    assert set(acknowledged) <= set(store), f"acknowledged tables {acknowledged} lost: store {store}"


def hive_catalog_with_table(b: Api, stub: Any) -> dict[str, str]:
    properties = hive_properties(stub)
    ok(b.metalake())
    ok(b.catalog("hive", properties, c=H))
    ok(b.schema(c=H))
    ok(b.table(T, c=H))
    return properties


def test_a_catalog_rename_does_not_unfence_a_drop_in_flight(lock_cluster, stub):
    a, b = (Api(replica) for replica in lock_cluster.replicas("a", "b"))
    hive_catalog_with_table(b, stub)
    try:
        status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
        assert status == 502, (status, body)  # outcome unknown: A's intent stays open
        ok(b.r.request("PUT", path_of("m", H), {"updates": [{"@type": "rename", "newName": "h2"}]}))
        ok(b.table("u", c="h2"))  # repairs A's intent (now under h2) first: t is still in the engine
    finally:
        release(stub)
    ok(b.table("v", c="h2"))  # whatever is still open under the scope is settled first
    assert b.r.request("GET", path_of("m", H))[0] == 404
    assert_agree(lock_cluster, b, stub, "h2", ["u", "v"])


def test_an_import_does_not_race_an_engine_only_drop_in_flight(cluster, stub):
    """Two mechanisms close this window, each alone: the engine-only drop is journalled (so the import
    repairs its intent, behind the repair's barrier, before it reads) and the import raises a barrier of its
    own. It fails with both off: GRAVIMETA_HA_DISABLE=import_barrier,engine_only_intent."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog("hive", hive_properties(stub), c=H))
    ok(b.schema(c=H))
    status, body = stub.raw("POST", f"/databases/{S}/tables",
                            {"name": T, "comment": None, "columns": [{"name": "id", "type": "integer"}]})
    assert status == 200, body  # made in the engine, outside gravimeta
    assert (store_tables(cluster, H), engine_tables(stub)) == ([], [T])
    try:
        status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
        assert status == 502, (status, body)
        imported = ok(b.r.request("GET", path_of("m", H, S, T)))
        assert imported["table"]["name"] == T
    finally:
        release(stub)
    ok(b.table("v", c=H))
    assert_agree(cluster, b, stub, H, ["v"])


def recreate_under_a_held_drop(cluster: Cluster, stub: Any, between: Any = lambda b: None,
                               uris: tuple[str, str] | None = None, dropped: str = "catalog") -> None:
    """A's drop of h.s.t is held in the stub; B force-drops h (or its whole metalake, `dropped`), creates
    it again on the same metastore, runs `between(b)`, and its load imports s.t; then the held drop is
    released. `uris`: how the dropped catalog and its namesake spell the metastore's address (both
    stub.uri by default)."""
    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    first, namesake = uris or (stub.uri, stub.uri)
    properties = {**hive_properties(stub), "metastore.uris": first}
    ok(b.catalog("hive", properties, c=H))
    ok(b.schema(c=H))
    ok(b.table(T, c=H))
    try:
        status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
        assert status == 502, (status, body)
        if dropped == "metalake":
            assert ok(b.r.request("DELETE", f"{path_of('m')}?force=true"))["dropped"] is True
            ok(b.metalake())
        else:
            ok(b.r.request("PATCH", path_of("m", H), {"inUse": False}))
            assert ok(b.drop_catalog(c=H))["dropped"] is True
        ok(b.catalog("hive", {**properties, "metastore.uris": namesake}, c=H))  # the same metastore: s.t is there
        between(b)
        imported = ok(b.r.request("GET", path_of("m", H, S, T)))
        assert imported["table"]["name"] == T
    finally:
        release(stub)
    ok(b.table("v", c=H))
    assert_agree(cluster, b, stub, H, [T, "v"])


@pytest.mark.parametrize("dropped", ["catalog", "metalake"])
def test_a_drop_in_flight_of_a_dropped_catalog_cannot_touch_its_namesake(lock_cluster, stub, dropped):
    """Also under AUTO, where a drop of a catalog or a metalake first claims its parent with advisory locks,
    which carry no token: the retirement needs one, so the drop runs under the lease instead. Before, it
    retired nothing there, and the held drop landed after the namesake had imported t."""
    recreate_under_a_held_drop(lock_cluster, stub, dropped=dropped)


def closed_port() -> int:
    """A local port nothing listens on (a metastore endpoint that refuses every connection)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


#: (the dropped catalog's metastore.uris, its namesake's): one metastore, spelled alike or not
SPELLINGS = {
    "host-name": lambda stub: (stub.uri, f"http://localhost:{stub.port}"),
    "upper-case-slash": lambda stub: (f"http://LocalHost:{stub.port}/", stub.uri),
    "more-endpoints": lambda stub: (f"{stub.uri},http://127.0.0.1:{closed_port()}", f"http://localhost:{stub.port}"),
    "fewer-endpoints": lambda stub: (stub.uri, f"http://127.0.0.1:{closed_port()},http://localhost:{stub.port}/"),
}


@pytest.mark.parametrize("dropped", ["catalog", "metalake"])
def test_a_retirement_the_engine_missed_at_the_drop_is_delivered_before_the_namesake_imports(cluster, stub, dropped):
    """As above, but the metastore refuses the drop's retirement barrier (and once more the first delivery):
    the drop goes on and records the retirement; the re-created catalog's first use of the same metastore
    delivers it first (502 while it cannot, nothing imported), so A's held drop is refused all the same.
    A metalake drop answers 200: it made a new connector for each dropped catalog to close it, whose
    delivery of the retirement just recorded failed, and the drop, done, answered 502."""
    stub.fault("fail", count=2, mode="500", ops=["fence"])  # the first two barriers: the drop's, then the delivery

    def undelivered(b: Api) -> None:
        status, body = b.r.request("GET", path_of("m", H, S, T))
        assert status == 502 and "not yet been told" in body["message"], (status, body)
        assert EntityStore(cluster.engine).list_schemas("m", H) == []  # nothing imported while undelivered

    recreate_under_a_held_drop(cluster, stub, undelivered, dropped=dropped)


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_missed_retirement_reaches_the_metastore_however_the_namesake_spells_it(cluster, stub, spelling):
    """The metastore refuses the drop's retirement barrier only; the namesake names the same metastore
    otherwise (by host name instead of address, in other letters, with a trailing slash, among other
    endpoints, or the dropped catalog did). Its first use delivers the retirement all the same, so A's held
    drop, released after the namesake imported s.t, is refused. Before the delivery matched a location by
    its text, nothing was delivered, the drop landed, and the store kept a table the engine had lost."""
    stub.fault("fail", count=1, mode="500", ops=["fence"])  # the drop's barrier
    recreate_under_a_held_drop(cluster, stub, uris=SPELLINGS[spelling](stub))


@pytest.mark.parametrize("old_address", ["gone", "still-answers"])
def test_a_missed_retirement_reaches_the_metastore_by_its_identity_where_no_place_is_shared(
        cluster, stub, old_address):
    """The dropped catalog reached the metastore through a forwarded address (a NAT, another listening
    address: tests/support/tcp_proxy.py), its namesake names the metastore's own: one metastore, no
    place in common. The metastore refuses the drop's retirement barrier; the drop records the retirement
    with the metastore's identity, recorded while it answered, and the namesake's first use, whose
    metastore says it is that one, delivers it (through the namesake's connector: the old address may lead
    nowhere now, `gone`), so A's held drop, released after the namesake imported s.t, is refused. Before
    engines reported an identity (GRAVIMETA_HA_DISABLE=engine_identity), nothing was delivered, the drop
    landed, and the store kept t while the engine had lost it."""
    from tests.support.tcp_proxy import TcpProxy

    with TcpProxy("127.0.0.1", stub.port) as forwarded:
        stub.fault("fail", count=1, mode="500", ops=["fence"])  # the drop's barrier

        def address_changed(b: Api) -> None:
            if old_address == "gone":
                forwarded.cut()  # also resets A's held call's connection: the stub goes on with it all the same

        recreate_under_a_held_drop(cluster, stub, address_changed,
                                   uris=(f"http://127.0.0.1:{forwarded.port}", stub.uri))


def test_a_catalogs_engine_identity_is_recorded_while_it_answers_and_forgotten_with_the_catalog(
        cluster, stub, tmp_path):
    """The create records the metastore's identity (what a drop that cannot reach it retires by); a
    catalog without the record (made before engines reported one) gets it at its first use in a process;
    a change of its properties records the identity of the metastore they name now; the drop removes it."""
    import time

    from gravimeta.dispatch.retirement import identity_name
    from gravimeta.store.database import write_session
    from gravimeta.store.server_settings import read, server_setting
    from tests.connectors.stub_process import StubProcess

    a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
    ok(b.metalake())
    ok(b.catalog("hive", hive_properties(stub), c=H))
    name = identity_name(EntityStore(cluster.engine).get_catalog("m", H))
    identity = stub.raw("GET", "/identity")[1]["identity"]
    assert read(cluster.engine, name) == identity
    with write_session(cluster.engine) as s:
        s.execute(server_setting.delete().where(server_setting.c.name == name))
    ok(a.schema(c=H))  # A's first use of h
    deadline = time.monotonic() + 10
    while read(cluster.engine, name) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read(cluster.engine, name) == identity
    other = StubProcess(tmp_path / "hive-stub-2").start()
    try:
        ok(b.r.request("PUT", path_of("m", H), {"updates": [
            {"@type": "setProperty", "property": "metastore.uris", "value": other.uri}]}))
        assert read(cluster.engine, name) == other.raw("GET", "/identity")[1]["identity"] != identity
    finally:
        other.stop()
    ok(b.r.request("PATCH", path_of("m", H), {"inUse": False}))
    assert ok(b.drop_catalog(c=H))["dropped"] is True
    assert read(cluster.engine, name) is None


def move_under_a_held_drop(cluster: Cluster, stub: Any, tmp_path: Any, retirement: str) -> None:
    """A's drop of h.s.t is held in metastore 1; B moves catalog h to metastore 2 (metastore.uris), creates
    catalog h2 on metastore 1, and h2's load imports s.t from it; then the held drop is released.
    `retirement` "missed": metastore 1 refuses the move's retirement barrier."""
    from tests.connectors.stub_process import StubProcess

    other = StubProcess(tmp_path / "hive-stub-2").start()
    try:
        a, b = (Api(replica) for replica in cluster.replicas("a", "b"))
        properties = hive_catalog_with_table(b, stub)
        try:
            status, body = hold_drop(stub, lambda: a.drop_table(T, c=H))
            assert status == 502, (status, body)
            if retirement == "missed":
                stub.fault("fail", count=1, mode="500", ops=["fence"])
            ok(b.r.request("PUT", path_of("m", H), {"updates": [
                {"@type": "setProperty", "property": "metastore.uris", "value": other.uri}]}))
            ok(b.catalog("hive", properties, c="h2"))  # metastore 1, where s.t still is
            assert ok(b.r.request("GET", path_of("m", "h2", S, T)))["table"]["name"] == T
        finally:
            release(stub)
        ok(b.table("v", c="h2"))
        assert_agree(cluster, b, stub, "h2", [T, "v"])
    finally:
        other.stop()


@pytest.mark.parametrize("retirement", ["told", "missed"])
def test_a_drop_in_flight_on_a_metastore_its_catalog_moved_off_cannot_touch_the_next_catalog_there(
        lock_cluster, stub, tmp_path, retirement):
    """h's key is never seen on metastore 1 again once h moved off it, as if h had been dropped, so the
    move retires it there first (`missed`: metastore 1 refuses that barrier, and h2's first use delivers
    it). Before, a move retired nothing: the held drop landed, and h2's store kept a table metastore 1 had
    lost."""
    move_under_a_held_drop(lock_cluster, stub, tmp_path, retirement)


def test_a_move_retires_on_a_sqlite_store(sqlite_db_cluster, stub, tmp_path):
    """The move, on replicas sharing one SQLite store. (The namesake cases need no SQLite variant: ids are
    never handed out again there either (revision 0019), so the namesake is another catalog, as on
    PostgreSQL and MariaDB.)"""
    move_under_a_held_drop(sqlite_db_cluster, stub, tmp_path, "told")


def pending_retirements(cluster: Cluster) -> list[str]:
    """The catalog keys of the pending retirements (one per catalog key and engine)."""
    with cluster.engine.connect() as conn:
        return list(conn.execute(select(retirement.c.catalog_key).order_by(retirement.c.id)).scalars())


def test_a_missed_retirement_delivered_by_a_journalled_first_use_on_a_sqlite_store(sqlite_db_cluster, stub):
    """On replicas sharing one SQLite store, the namesake's first use is a journalled create, whose connector
    is made inside the journal's store write transaction: the delivery's own bookkeeping (the pending row's
    deletion) must not wait for that transaction. It did: SQLite has one writer, so the create waited out
    the busy timeout and answered 503 after 30 s, and so did every retry (the connector is not kept when
    its first use fails)."""
    b = Api(sqlite_db_cluster.replica("b"))
    ok(b.metalake())
    ok(b.catalog("hive", hive_properties(stub), c=H))
    ok(b.schema(c=H))
    stub.fault("fail", count=1, mode="500", ops=["fence"])  # the drop's retirement barrier
    ok(b.r.request("PATCH", path_of("m", H), {"inUse": False}))
    assert ok(b.drop_catalog(c=H))["dropped"] is True
    assert len(pending_retirements(sqlite_db_cluster)) == 1
    ok(b.catalog("hive", hive_properties(stub), c=H))
    began = time.monotonic()
    ok(b.schema("s2", c=H))  # the first use: delivers the retirement, then creates
    assert time.monotonic() - began < 10, "the first use waited for its own store transaction"
    wait_until("the delivered retirement's record is deleted", lambda: pending_retirements(sqlite_db_cluster) == [])
