"""A write whose COMMIT loses its connection gets a true answer (gravimeta/store/commit_check.py).

The server reaches the database through a TCP proxy that cuts one connection at the COMMIT of the
request's write transaction (tests/support/tcp_proxy.py, lose_commit): after the server received and
answered it (the transaction committed; the reply never arrives), or before it reaches the server (the
server rolls back), or after it was answered with the database unreachable afterwards. Before, every one
of them was answered 503 "The metadata database failed; nothing was changed": also when the change had
been made, which a GET then showed, and a retry met with 409.

Each operation is one kind of store write that is not journalled: a table in a memory catalog (one
transaction with the catalog's in-process mirror), a metalake, a tag, a property update; catalog create,
rename, disable and drop; metalake disable and drop; schema create and drop, table alter and drop, a
partition (memory catalog); tag alter, delete and association; with authorization on, a user, a group's
removal, an owner, a role, a role granted to a user, a privilege granted to a role; table and partition
statistics. The 502 case (it waits out the check's bound) runs for one write of each family. With the
lock on, a table created under a PostgreSQL advisory claim, whose transaction the coordinator commits.
SQLite is not tested: its database is a file this process opens, there is no connection to cut.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url

from connectors.base import CatalogContext
from connectors.sqlite import ROOT_ENV
from connectors.sqlite.connector import SQLiteCatalogConnector
from gravimeta.app import create_app
from gravimeta.config import Settings
from gravimeta.entities import Column, Table
from tests.conftest import require_backend
from tests.support.databases import fresh_database
from tests.support.tcp_proxy import TcpProxy

CHECK_TIMEOUT_S = 1.5  # the commit check's bound (5 s in service): the 502 cases wait it out
NOTHING_CHANGED = "nothing was changed"
ADMIN = "admin"


@dataclass
class Store:
    url: str  # through the proxy
    proxy: TcpProxy


@pytest.fixture(scope="module", params=["postgresql", "mysql"])
def store(request, tmp_path_factory) -> Iterator[Store]:
    """One database per backend for the module (names are unique per test), reached through a proxy."""
    require_backend(request.param)
    with fresh_database(request.param, tmp_path_factory.mktemp("lost-commits")) as url:
        parsed = make_url(url)
        proxy = TcpProxy(parsed.host or "127.0.0.1", parsed.port or (5432 if request.param == "postgresql" else 3306))
        proxy.start()
        try:
            yield Store(parsed.set(port=proxy.port).render_as_string(hide_password=False), proxy)
        finally:
            proxy.stop()


@pytest.fixture
def client(request, store):
    """A server on the proxied store, with a short commit-check bound; the proxy is restored after. For
    the writes that only exist with authorization on (users, groups, owners, roles), it is on and the
    client authenticates as its service admin."""
    make = getattr(request.node, "callspec", None) and request.node.callspec.params.get("make")
    if make not in AUTHORIZED:
        yield from _client(Settings(store_url=store.url), store)
        return
    settings = Settings(store_url=store.url, authorization_enabled=True, service_admins=ADMIN)
    for test_client in _client(settings, store):
        test_client.environ_base["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(f"{ADMIN}:x".encode()).decode()
        yield test_client


@pytest.fixture
def advisory_client(store):
    if not store.url.startswith("postgresql"):
        pytest.skip("PostgreSQL advisory claims")
    yield from _client(Settings(store_url=store.url, distributed_lock_enabled=True,
                                distributed_lock_backend="PG_ADVISORY"), store)


def _client(settings: Settings, store: Store) -> Iterator:
    app = create_app(settings)
    app.extensions["gravimeta"].store.commits.timeout_s = 1.5  # the lookup's bound (5 s in a server)
    try:
        yield app.test_client()
    finally:
        store.proxy.restore()
        app.extensions["gravimeta"].store.engine.dispose()


@dataclass
class Write:
    """One request whose write transaction sends `statement`; `seen()` is the GET that shows its effect."""

    statement: bytes
    send: Callable[[], object]
    seen: Callable[[], bool]
    metalake: str = ""


def name() -> str:
    return f"n{uuid.uuid4().hex[:10]}"


def metalake_with_schema(client) -> str:
    m = name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    catalog = {"name": "c", "type": "relational", "provider": "memory", "properties": {}}
    assert client.post(f"/api/metalakes/{m}/catalogs", json=catalog).status_code == 200
    assert client.post(f"/api/metalakes/{m}/catalogs/c/schemas", json={"name": "s"}).status_code == 200
    return m


def table_create(client) -> Write:
    m, t = metalake_with_schema(client), name()
    tables = f"/api/metalakes/{m}/catalogs/c/schemas/s/tables"
    body = {"name": t, "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    return Write(b"INSERT INTO gm_table", lambda: client.post(tables, json=body),
                 lambda: client.get(f"{tables}/{t}").status_code == 200)


def metalake_create(client) -> Write:
    m = name()
    return Write(b"INSERT INTO gm_metalake", lambda: client.post("/api/metalakes", json={"name": m}),
                 lambda: client.get(f"/api/metalakes/{m}").status_code == 200)


def tag_create(client) -> Write:
    m, tag = name(), name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    return Write(b"INSERT INTO gm_tag", lambda: client.post(f"/api/metalakes/{m}/tags", json={"name": tag}),
                 lambda: client.get(f"/api/metalakes/{m}/tags/{tag}").status_code == 200)


def property_update(client) -> Write:
    m, value = name(), name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    update = {"updates": [{"@type": "setProperty", "property": "k", "value": value}]}
    return Write(b"UPDATE gm_metalake", lambda: client.put(f"/api/metalakes/{m}", json=update),
                 lambda: client.get(f"/api/metalakes/{m}").get_json()["metalake"]["properties"].get("k") == value)


def metalake(client) -> str:
    m = name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    return m


def memory_table(client) -> str:
    """A metalake with memory catalog c, schema s and table t; the table's path."""
    m = metalake_with_schema(client)
    tables = f"/api/metalakes/{m}/catalogs/c/schemas/s/tables"
    body = {"name": "t", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    assert client.post(tables, json=body).status_code == 200
    return f"{tables}/t"


def catalog_create(client) -> Write:
    m = metalake(client)
    catalog = {"name": "c", "type": "relational", "provider": "memory", "properties": {}}
    return Write(b"INSERT INTO gm_catalog", lambda: client.post(f"/api/metalakes/{m}/catalogs", json=catalog),
                 lambda: client.get(f"/api/metalakes/{m}/catalogs/c").status_code == 200)


def catalog_rename(client) -> Write:
    m, new = metalake_with_schema(client), name()
    update = {"updates": [{"@type": "rename", "newName": new}]}
    return Write(b"UPDATE gm_catalog", lambda: client.put(f"/api/metalakes/{m}/catalogs/c", json=update),
                 lambda: client.get(f"/api/metalakes/{m}/catalogs/{new}").status_code == 200)


def catalog_disable(client) -> Write:
    m = metalake_with_schema(client)
    catalog = f"/api/metalakes/{m}/catalogs/c"
    return Write(b"UPDATE gm_catalog", lambda: client.patch(catalog, json={"inUse": False}),
                 lambda: client.get(catalog).get_json()["catalog"]["properties"]["in-use"] == "false")


def deletion(client, statement: bytes, path: str, query: str = "") -> Write:
    """The DELETE of `path`; seen once it is gone."""
    return Write(statement, lambda: client.delete(path + query), lambda: client.get(path).status_code == 404)


def catalog_drop(client) -> Write:
    return deletion(client, b"DELETE FROM gm_catalog", f"/api/metalakes/{metalake_with_schema(client)}/catalogs/c",
                    "?force=true")


def metalake_disable(client) -> Write:
    m = metalake(client)
    return Write(b"UPDATE gm_metalake", lambda: client.patch(f"/api/metalakes/{m}", json={"inUse": False}),
                 lambda: client.get(f"/api/metalakes/{m}").get_json()["metalake"]["properties"]["in-use"] == "false")


def metalake_drop(client) -> Write:
    return deletion(client, b"DELETE FROM gm_metalake", f"/api/metalakes/{metalake_with_schema(client)}", "?force=true")


def schema_create(client) -> Write:
    m = metalake_with_schema(client)
    schemas = f"/api/metalakes/{m}/catalogs/c/schemas"
    return Write(b"INSERT INTO gm_schema", lambda: client.post(schemas, json={"name": "s2"}),
                 lambda: client.get(f"{schemas}/s2").status_code == 200)


def schema_drop(client) -> Write:
    return deletion(client, b"DELETE FROM gm_schema",
                    f"/api/metalakes/{metalake_with_schema(client)}/catalogs/c/schemas/s", "?cascade=true")


def table_alter(client) -> Write:
    table, value = memory_table(client), name()
    update = {"updates": [{"@type": "setProperty", "property": "k", "value": value}]}
    return Write(b"UPDATE gm_table", lambda: client.put(table, json=update),
                 lambda: client.get(table).get_json()["table"]["properties"].get("k") == value)


def table_drop(client) -> Write:
    return deletion(client, b"DELETE FROM gm_table", memory_table(client))


def added(client, collection: str) -> str:
    """A new item (a tag, a user) added to `collection` by its name alone; its name."""
    item = name()
    assert client.post(collection, json={"name": item}).status_code == 200
    return item


def tag_alter(client) -> Write:
    m, value = metalake(client), name()
    tag = added(client, f"/api/metalakes/{m}/tags")
    update = {"updates": [{"@type": "setProperty", "property": "k", "value": value}]}
    return Write(b"UPDATE gm_tag", lambda: client.put(f"/api/metalakes/{m}/tags/{tag}", json=update),
                 lambda: client.get(f"/api/metalakes/{m}/tags/{tag}").get_json()["tag"]["properties"].get("k") == value)


def removal(client, collection: str, statement: bytes) -> Write:
    """Add an item named by its name alone to `collection`; the Write that deletes it."""
    return deletion(client, statement, f"{collection}/{added(client, collection)}")


def tag_delete(client) -> Write:
    return removal(client, f"/api/metalakes/{metalake(client)}/tags", b"DELETE FROM gm_tag")


def tag_associate(client) -> Write:
    m = metalake_with_schema(client)
    tag, tags = added(client, f"/api/metalakes/{m}/tags"), f"/api/metalakes/{m}/objects/catalog/c/tags"
    return Write(b"INSERT INTO gm_tag_relation", lambda: client.post(tags, json={"tagsToAdd": [tag]}),
                 lambda: tag in client.get(tags).get_json()["names"])


def user_add(client) -> Write:
    m, user = metalake(client), name()
    return Write(b"INSERT INTO gm_principal", lambda: client.post(f"/api/metalakes/{m}/users", json={"name": user}),
                 lambda: client.get(f"/api/metalakes/{m}/users/{user}").status_code == 200)


def group_remove(client) -> Write:
    return removal(client, f"/api/metalakes/{metalake(client)}/groups", b"DELETE FROM gm_principal")


def owner_set(client) -> Write:
    m = metalake_with_schema(client)
    user, owner = added(client, f"/api/metalakes/{m}/users"), f"/api/metalakes/{m}/owners/catalog/c"
    return Write(b"gm_owner", lambda: client.put(owner, json={"name": user, "type": "USER"}),
                 lambda: (client.get(owner).get_json()["owner"] or {}).get("name") == user)


def role_create(client) -> Write:
    m, role = metalake(client), name()
    body = {"name": role, "properties": {}, "securableObjects": []}
    return Write(b"INSERT INTO gm_role", lambda: client.post(f"/api/metalakes/{m}/roles", json=body),
                 lambda: client.get(f"/api/metalakes/{m}/roles/{role}").status_code == 200)


def role_grant(client) -> Write:
    m, role, user = metalake(client), name(), name()
    body = {"name": role, "properties": {}, "securableObjects": []}
    assert client.post(f"/api/metalakes/{m}/roles", json=body).status_code == 200
    assert client.post(f"/api/metalakes/{m}/users", json={"name": user}).status_code == 200
    grant = f"/api/metalakes/{m}/permissions/users/{user}/grant"
    return Write(b"INSERT INTO gm_role_member", lambda: client.put(grant, json={"roleNames": [role]}),
                 lambda: role in client.get(f"/api/metalakes/{m}/users/{user}").get_json()["user"]["roles"])


def privilege_grant(client) -> Write:
    m, role = metalake_with_schema(client), name()
    body = {"name": role, "properties": {}, "securableObjects": []}
    assert client.post(f"/api/metalakes/{m}/roles", json=body).status_code == 200
    grant = f"/api/metalakes/{m}/permissions/roles/{role}/catalog/c/grant"
    privileges = {"privileges": [{"name": "USE_CATALOG", "condition": "allow"}]}
    return Write(b"INSERT INTO gm_role_privilege", lambda: client.put(grant, json=privileges),
                 lambda: bool(client.get(f"/api/metalakes/{m}/roles/{role}").get_json()["role"]["securableObjects"]))


def statistics_update(client) -> Write:
    table = memory_table(client)
    stats = table.replace("/catalogs/c/schemas/s/tables/t", "/objects/table/c.s.t/statistics")
    return Write(b"gm_table_statistic", lambda: client.put(stats, json={"updates": {"custom-n": 1}}),
                 lambda: "custom-n" in {s["name"] for s in client.get(stats).get_json()["statistics"]})


def partition_statistics_update(client) -> Write:
    table = memory_table(client)
    stats = table.replace("/catalogs/c/schemas/s/tables/t", "/objects/table/c.s.t/statistics/partitions")
    body = {"updates": [{"partitionName": "p1", "statistics": {"custom-n": 1}}]}
    return Write(b"gm_partition_statistic", lambda: client.put(stats, json=body),
                 lambda: bool(client.get(stats).get_json()["partitionStatistics"]))


def partition_add(client) -> Write:
    m = metalake_with_schema(client)
    tables = f"/api/metalakes/{m}/catalogs/c/schemas/s/tables"
    body = {"name": "t", "columns": [{"name": "dt", "type": "string", "nullable": True}], "properties": {},
            "partitioning": [{"strategy": "identity", "fieldName": ["dt"]}]}
    assert client.post(tables, json=body).status_code == 200
    partitions = f"{tables}/t/partitions"
    partition = {"type": "identity", "name": "dt=a", "fieldNames": [["dt"]], "properties": {},
                 "values": [{"type": "literal", "dataType": "string", "value": "a"}]}
    return Write(b"INSERT INTO gm_partition", lambda: client.post(partitions, json={"partitions": [partition]}),
                 lambda: client.get(partitions).get_json()["names"] == ["dt=a"])


AUTHORIZED = {user_add, group_remove, owner_set, role_create, role_grant, privilege_grant}
WRITES = [table_create, metalake_create, tag_create, property_update, catalog_create, catalog_rename,
          catalog_disable, catalog_drop, metalake_disable, metalake_drop, schema_create, schema_drop, table_alter,
          table_drop, tag_alter, tag_delete, tag_associate, user_add, group_remove, owner_set, role_create,
          role_grant, privilege_grant, statistics_update, partition_statistics_update, partition_add]
#: the 502 case waits out the check's bound: one write of each family
UNKNOWN_WRITES = [table_create, metalake_create, tag_create, property_update, catalog_drop, metalake_drop,
                  tag_associate, owner_set, role_grant, statistics_update]


def lose(store: Store, write: Write, deliver: bool, then_cut: bool = False):
    """Send the write with its COMMIT cut as asked; the response, once the cut is known to have happened."""
    cut = store.proxy.lose_commit(write.statement, deliver=deliver, then_cut=then_cut)
    response = write.send()
    assert cut.is_set(), "the proxy never saw the write's COMMIT"
    return response


@pytest.mark.parametrize("make", WRITES)
def test_a_commit_whose_reply_is_lost_answers_the_real_success(store, client, make):
    write = make(client)
    response = lose(store, write, deliver=True)
    assert response.status_code == 200, response.get_json()
    assert write.seen()


@pytest.mark.parametrize("make", WRITES)
def test_a_commit_that_never_reached_the_server_answers_nothing_was_changed(store, client, make):
    write = make(client)
    response = lose(store, write, deliver=False)
    body = response.get_json()
    assert response.status_code == 503 and NOTHING_CHANGED in body["message"], body
    assert body["type"] == "RuntimeException" and body["code"] == 1002, body
    assert not write.seen()


@pytest.mark.parametrize("make", UNKNOWN_WRITES)
def test_a_lost_commit_that_cannot_be_looked_up_answers_outcome_unknown_with_its_operation_id(store, client, make):
    write = make(client)
    response = lose(store, write, deliver=True, then_cut=True)
    body = response.get_json()
    assert response.status_code == 502, body
    assert body["code"] == 1007 and body["type"] == "ConnectionFailedException", body
    assert "outcome is unknown" in body["message"] and NOTHING_CHANGED not in body["message"], body
    operation = body["message"].split("commit of operation ")[1].split(",")[0]
    assert len(operation) == 32, body["message"]
    store.proxy.restore()
    assert write.seen(), "it had committed: 'unknown' was the truth, 'nothing was changed' would not have been"


@pytest.mark.parametrize("then_cut", [False, True], ids=["looked-up", "unreachable"])
def test_a_journalled_store_step_answers_its_success_or_keeps_its_pending_operation(
        store, client, tmp_path, monkeypatch, then_cut):
    """A table of a sqlite catalog: intent, engine call, then the store step whose COMMIT is lost. Found
    committed: 200 (before: 502 'pending operation N', although it was done). Not found out: the journal's
    own answer, 502 naming its pending operation, which a repair will settle."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    m, t = name(), name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    catalog = {"name": "c", "type": "relational", "provider": "sqlite", "properties": {"path": f"{m}.db"}}
    assert client.post(f"/api/metalakes/{m}/catalogs", json=catalog).status_code == 200
    assert client.post(f"/api/metalakes/{m}/catalogs/c/schemas", json={"name": "s"}).status_code == 200
    tables = f"/api/metalakes/{m}/catalogs/c/schemas/s/tables"
    body = {"name": t, "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    write = Write(b"INSERT INTO gm_table", lambda: client.post(tables, json=body),
                  lambda: client.get(f"{tables}/{t}").status_code == 200)
    response = lose(store, write, deliver=True, then_cut=then_cut)
    if not then_cut:
        assert response.status_code == 200, response.get_json()
    else:
        assert response.status_code == 502 and "pending operation" in response.get_json()["message"], \
            response.get_json()
        store.proxy.restore()
    assert write.seen()


@pytest.mark.parametrize("deliver", [True, False], ids=["committed", "not-committed"])
def test_the_commit_of_an_advisory_claim_is_checked_too(store, advisory_client, deliver):
    write = table_create(advisory_client)
    response = lose(store, write, deliver=deliver)
    assert response.status_code == (200 if deliver else 503), response.get_json()
    assert write.seen() is deliver


# ---------------------------------------------------------------------- journalled operations


def sqlite_schema(client, tmp_path, monkeypatch) -> tuple[str, Callable[[], list[str]]]:
    """A metalake with sqlite catalog c and schema s; (the tables path, what the engine's schema s has)."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    m = name()
    assert client.post("/api/metalakes", json={"name": m}).status_code == 200
    properties = {"path": f"{m}.db"}
    catalog = {"name": "c", "type": "relational", "provider": "sqlite", "properties": properties}
    assert client.post(f"/api/metalakes/{m}/catalogs", json=catalog).status_code == 200
    assert client.post(f"/api/metalakes/{m}/catalogs/c/schemas", json={"name": "s"}).status_code == 200
    engine = SQLiteCatalogConnector(CatalogContext(m, "c", properties))
    return f"/api/metalakes/{m}/catalogs/c/schemas/s/tables", lambda: engine.list_tables("s")


def journalled_create(client, tmp_path, monkeypatch) -> tuple[Write, Callable[[], list[str]]]:
    tables, engine_tables = sqlite_schema(client, tmp_path, monkeypatch)
    body = {"name": "t", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    return Write(b"", lambda: client.post(tables, json=body),
                 lambda: client.get(f"{tables}/t").status_code == 200, tables.split("/")[3]), engine_tables


def journalled_drop(client, tmp_path, monkeypatch) -> tuple[Write, Callable[[], list[str]]]:
    tables, engine_tables = sqlite_schema(client, tmp_path, monkeypatch)
    body = {"name": "t", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    assert client.post(tables, json=body).status_code == 200
    return Write(b"", lambda: client.delete(f"{tables}/t"),
                 lambda: client.get(f"{tables}/t").status_code == 404, tables.split("/")[3]), engine_tables


def journalled_rename(client, tmp_path, monkeypatch) -> tuple[Write, Callable[[], list[str]]]:
    tables, engine_tables = sqlite_schema(client, tmp_path, monkeypatch)
    body = {"name": "u", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    assert client.post(tables, json=body).status_code == 200
    rename = {"updates": [{"@type": "rename", "newName": "t"}]}
    return Write(b"", lambda: client.put(f"{tables}/u", json=rename),
                 lambda: client.get(f"{tables}/t").status_code == 200, tables.split("/")[3]), engine_tables


#: (the operation, the statement of its store step); its intent's transaction inserts the journal row
JOURNALLED = {"create": (journalled_create, b"INSERT INTO gm_table"),
              "drop": (journalled_drop, b"DELETE FROM gm_table"),
              "rename": (journalled_rename, b"UPDATE gm_table")}


@pytest.mark.parametrize("mode", ["committed", "not-committed", "unreachable"])
@pytest.mark.parametrize("step", ["intent", "store"])
@pytest.mark.parametrize("kind", list(JOURNALLED))
def test_a_journalled_operation_answers_truly_when_the_commit_of_either_of_its_transactions_is_lost(
        store, client, tmp_path, monkeypatch, kind, step, mode):
    """A table of a sqlite catalog (intent, engine call, store step): the COMMIT of the intent's record or
    of the store step is lost. Whatever the answer, it is true of the store and the engine right after,
    and a repair then leaves them agreeing with no intent open."""
    journalled_commit_lost(store, client, tmp_path, monkeypatch, kind, step, mode)


@pytest.fixture
def short_lease_client(store):
    """Lease claims with a short lease (3 s): a claim whose release was lost with the database expires
    within the repair's claim timeout (5 s)."""
    settings = Settings(store_url=store.url, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE",
                        lease_ttl_ms=3000, claim_timeout_ms=5000)
    for test_client in _client(settings, store):
        yield test_client
        test_client.application.extensions["gravimeta"].coordinator.runtime.heartbeat.stop()


@pytest.mark.parametrize("mode", ["committed", "not-committed", "unreachable"])
@pytest.mark.parametrize("step", ["intent", "store"])
def test_a_journalled_operation_under_a_lease_claim_answers_truly_when_a_commit_is_lost(
        store, short_lease_client, tmp_path, monkeypatch, step, mode):
    """The same under a lease claim: the intent's transaction checks the fence first, the store step
    deletes the claim row with its check (the claim ends with that commit), and the release runs after."""
    journalled_commit_lost(store, short_lease_client, tmp_path, monkeypatch, "create", step, mode)


def journalled_commit_lost(store, client, tmp_path, monkeypatch, kind: str, step: str, mode: str) -> None:
    make, store_statement = JOURNALLED[kind]
    write, engine_tables = make(client, tmp_path, monkeypatch)
    write.statement = b"INSERT INTO gm_operation_journal" if step == "intent" else store_statement
    response = lose(store, write, deliver=mode != "not-committed", then_cut=mode == "unreachable")
    store.proxy.restore()
    status, body = response.status_code, response.get_json()
    done_in_engine = ("t" in engine_tables()) is (kind != "drop")
    if status == 200:
        assert write.seen() and done_in_engine, body
    elif status == 503:
        assert NOTHING_CHANGED in body["message"], body
        assert not write.seen() and not done_in_engine, body
    else:
        assert status == 502 and "outcome" in body["message"] and NOTHING_CHANGED not in body["message"], body
        if step == "store":  # the engine call was made: the journal's answer, naming the intent
            assert "pending operation" in body["message"], body
    expected = {("intent", "committed"): 200, ("intent", "not-committed"): 503, ("intent", "unreachable"): 502,
                ("store", "committed"): 200, ("store", "not-committed"): 502, ("store", "unreachable"): 502}
    assert status == expected[step, mode], body
    reconciler = client.application.extensions["gravimeta"].reconciler
    metalake = f"/{write.metalake}"
    reconciler.repairer.repair_pending(0, scopes={i.scope_path for i in reconciler.journal.pending(metalake)})
    assert reconciler.journal.pending(metalake) == []
    assert write.seen() is (("t" in engine_tables()) is (kind != "drop")), "the repair left store and engine apart"


# ---------------------------------------------------------------------- the claim's own transactions


@pytest.fixture
def lease_client(store):
    """Lease claims (LEASE_TABLE) with the default TTL (15 s) and a claim timeout well below it."""
    settings = Settings(store_url=store.url, distributed_lock_enabled=True, distributed_lock_backend="LEASE_TABLE",
                        claim_timeout_ms=2000)
    for test_client in _client(settings, store):
        yield test_client
        test_client.application.extensions["gravimeta"].coordinator.runtime.heartbeat.stop()


def test_a_claim_whose_grant_reply_is_lost_answers_503_and_does_not_hold_its_scope_until_the_lease_expires(
        store, lease_client):
    """The grant is one call that commits by itself (PostgreSQL's function gm_claim_scope, MariaDB's
    procedure): its reply lost, the claim row may be there, and nobody renews it. The request answers
    503 (nothing was done: the operation never ran), and the attempt's row is deleted by its own holder
    id, so the retry is granted at once. Before: the scope stayed busy until the lease expired (15 s),
    and the retry answered 503 ScopeBusy after its 2 s claim timeout."""
    m = metalake(lease_client)
    catalog = {"name": "c", "type": "relational", "provider": "memory", "properties": {}}
    cut = store.proxy.lose_reply(b"gm_claim_scope")
    response = lease_client.post(f"/api/metalakes/{m}/catalogs", json=catalog)
    assert cut.is_set(), "the proxy never saw the claim's call"
    assert response.status_code == 503 and response.get_json()["type"] == "RuntimeException", response.get_json()
    assert lease_client.get(f"/api/metalakes/{m}/catalogs/c").status_code == 404
    retry = lease_client.post(f"/api/metalakes/{m}/catalogs", json=catalog)
    assert retry.status_code == 200, retry.get_json()


def test_a_release_whose_commit_is_lost_does_not_hold_the_scope_until_the_lease_expires(store, lease_client):
    """A catalog create ends with the release of its claim (DELETE of the claim row, a transaction of its
    own after the store write). Its COMMIT lost before the server: the request's answer stands (200, the
    catalog is there), and the release is sent again on a new connection, so the next claim on the scope
    is granted at once. Before: the row stayed until the lease expired (15 s), and the next operation on
    the metalake answered 503 ScopeBusy after its 2 s claim timeout."""
    m = metalake(lease_client)
    catalogs = f"/api/metalakes/{m}/catalogs"
    cut = store.proxy.lose_commit(b"DELETE FROM gm_scope_lease", deliver=False)
    response = lease_client.post(catalogs, json={"name": "c", "type": "relational", "provider": "memory",
                                                 "properties": {}})
    assert cut.is_set(), "the proxy never saw the release's COMMIT"
    assert response.status_code == 200, response.get_json()
    following = lease_client.post(catalogs, json={"name": "c2", "type": "relational", "provider": "memory",
                                                  "properties": {}})
    assert following.status_code == 200, following.get_json()


@pytest.mark.parametrize("mode", ["not-committed", "unreachable"])
def test_an_engine_refusal_whose_withdrawal_is_lost_answers_that_the_operation_is_pending(
        store, client, tmp_path, monkeypatch, mode):
    """The engine refuses a create (its table t exists there, of another shape) and the intent is withdrawn
    in a transaction of its own, whose COMMIT is lost. The intent stays open, so the answer must not be
    'nothing was changed' (before: 503); it is the journal's 502 'pending operation N'. (Unreachable:
    before, 502 naming the withdrawal's store operation; now the same journal answer.) The repair must not
    take the engine's t for this create's: the store never gets t(id) over the engine's t(other); the
    intent is left stuck for an operator, with a note naming both shapes."""
    tables, _ = sqlite_schema(client, tmp_path, monkeypatch)
    m = tables.split("/")[3]
    engine = SQLiteCatalogConnector(CatalogContext(m, "c", {"path": f"{m}.db"}))
    engine.create_table("s", Table("t", [Column("other", "string")]))
    body = {"name": "t", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
    write = Write(b"DELETE FROM gm_operation_journal", lambda: client.post(tables, json=body),
                  lambda: client.get(f"{tables}/t").status_code == 200, m)
    response = lose(store, write, deliver=mode == "unreachable", then_cut=mode == "unreachable")
    store.proxy.restore()
    status, answer = response.status_code, response.get_json()
    assert status == 502 and NOTHING_CHANGED not in answer["message"], answer
    reconciler = client.application.extensions["gravimeta"].reconciler
    open_intents = reconciler.journal.pending(f"/{m}")
    assert "pending operation" in answer["message"], answer  # still open, or (unreachable) withdrawn after all
    if mode == "not-committed":
        [intent] = open_intents
        assert f"pending operation {intent.id}" in answer["message"], answer
    reconciler.repairer.repair_pending(0, scopes={i.scope_path for i in open_intents})
    in_engine = [c.name for c in engine.load_table("s", "t").columns]
    stored = client.get(f"{tables}/t")
    if stored.status_code == 200:
        in_store = [c["name"] for c in stored.get_json()["table"]["columns"]]
        assert in_store == in_engine, f"the repair left store and engine apart: store t{in_store}, engine t{in_engine}"
    left = reconciler.journal.pending(f"/{m}")
    if mode == "not-committed":
        [intent] = left
        assert intent.state == "stuck", intent
        assert "other" in intent.detail and "id" in intent.detail, intent.detail
    else:
        assert left == []


def test_a_commit_found_committed_counts_as_a_commit_for_the_claim(store, lease_client, tmp_path, monkeypatch):
    """The store step of a journalled create under a lease claim also deletes the claim row (its claim ends
    with that commit). Its COMMIT's reply lost and the transaction found committed: the claim knows it is
    released, as after any commit, and sends no release of its own. Before: the commit hooks never ran, so
    a second DELETE of the claim row followed (harmless here; for the intent's transaction the same gap
    made the claim send one more durable write before its engine call, which could fail on its own)."""
    tables, _ = sqlite_schema(lease_client, tmp_path, monkeypatch)
    engine = lease_client.application.extensions["gravimeta"].store.engine
    releases: list[str] = []

    def note(conn, cursor, statement, *args) -> None:
        if "DELETE FROM gm_scope_lease" in statement:
            releases.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        body = {"name": "t", "columns": [{"name": "id", "type": "integer", "nullable": True}], "properties": {}}
        write = Write(b"INSERT INTO gm_table", lambda: lease_client.post(tables, json=body),
                      lambda: lease_client.get(f"{tables}/t").status_code == 200)
        response = lose(store, write, deliver=True)
    finally:
        event.remove(engine, "before_cursor_execute", note)
    assert response.status_code == 200 and write.seen(), response.get_json()
    assert len(releases) == 1, releases  # the store step's check-and-release only


def test_an_advisory_claim_whose_reply_is_lost_answers_503_and_holds_nothing(store, advisory_client):
    """A PostgreSQL advisory claim is a transaction of the operation's own: its locks end with its session,
    which the lost reply ends, so the retry is granted at once."""
    write = table_create(advisory_client)
    cut = store.proxy.lose_reply(b"gm_advisory_claim")
    response = write.send()
    assert cut.is_set(), "the proxy never saw the claim's call"
    assert response.status_code == 503 and not write.seen(), response.get_json()
    assert write.send().status_code == 200 and write.seen()
