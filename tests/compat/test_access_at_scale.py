"""Access checks over big lists, on SQLite, PostgreSQL and MariaDB with authorization on: a user who is
not a service admin and holds roles lists more than 1,000 catalogs, schemas, tables, tags and roles,
and the objects of a tag on more than 1,000 tables, and sees exactly what Gravitino's rules let him
see (allows, denies winning, ownership), read with statements that do not grow with the list. One OR
term per item made SQLite refuse such lists (503, "Expression tree is too large") and made every
backend's statements grow with the list; the tag's objects were read one object at a time.

The objects are seeded straight into the store's tables (tests/support/access_seed.py); the roles
that matter are made and granted through the API where that is cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, event, select

from gravimeta.store.attached_models import TagRow
from gravimeta.store.models import MetalakeRow
from tests.api.helpers import Api, Ref, fresh, ok
from tests.compat.conftest import ADMIN, AUTHORIZED
from tests.support import access_seed

#: more items than SQLite's expression depth limit (1,000) that one OR term per item ran into
N = 1200
#: the most bound parameters one statement of a filtered list may carry (a batch of names or ids)
BATCH_PARAMETERS = 1010


@pytest.fixture
def admin(as_user) -> Api:
    return as_user(ADMIN)


@pytest.fixture
def bob(as_user) -> Api:
    return as_user("bob")


@pytest.fixture
def engine(apps) -> Engine:
    """The store engine of the app the callers use (authorization on)."""
    return apps(**AUTHORIZED).extensions["gravimeta"].store.engine


@pytest.fixture
def lake(admin) -> Ref:
    """A metalake of the admin's, with user bob."""
    metalake = admin.create_metalake()
    ok(admin.post(f"{metalake.path}/users", {"name": "bob"}))
    return metalake


_TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SET ", "SHOW ")


class Statements:
    """The statements a block of requests ran against the store, with their numbers of bound parameters."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def assert_set_based_beside(self, admin: Statements, extra: int) -> None:
        """These (a user's list) ran at most `extra` statements more than `admin`'s (the same list as a
        service admin, whom the door does not filter for), none with more than a batch of parameters
        beyond what the admin's carried."""
        listing = "".join(f"\n  {statement[:90]!r} ({count})" for statement, count in self.seen[:30])
        assert len(self.seen) - len(admin.seen) <= extra, \
            f"{len(self.seen)} statements against the admin's {len(admin.seen)}: one or more per item{listing}"
        largest = max((count for _, count in self.seen), default=0)
        assert largest <= max(BATCH_PARAMETERS, *(count for _, count in admin.seen)), \
            f"a statement carried {largest} parameters: one term per item{listing}"


@contextmanager
def statements(engine: Engine) -> Iterator[Statements]:
    found = Statements()

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if not statement.lstrip().upper().startswith(_TRANSACTION):
            found.seen.append((statement, len(parameters) if parameters else 0))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield found
    finally:
        event.remove(engine, "before_cursor_execute", record)


def role(admin: Api, metalake: Ref, *objects: dict[str, Any]) -> str:
    name = fresh("role")
    ok(admin.post(f"{metalake.path}/roles", {"name": name, "securableObjects": list(objects)}))
    return name


def securable(kind: str, full_name: str, *privileges: str, condition: str = "allow") -> dict[str, Any]:
    return {"fullName": full_name, "type": kind, "privileges": [{"name": p, "condition": condition} for p in privileges]}


def give(admin: Api, metalake: Ref, *roles: str) -> None:
    ok(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": list(roles)}))


def names(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i:05d}" for i in range(n)]


def seeded(engine: Engine, metalake: Ref, kind: str, wanted: list[str], owned_by_bob: set[int],
           parent: tuple[str, ...] = ()) -> list[int]:
    """Seed `kind` objects called `wanted` (those at the indexes `owned_by_bob` created by bob, the rest
    by the admin); their ids, in the order of `wanted`."""
    ids = access_seed.seed(engine, metalake.name, kind, [n for i, n in enumerate(wanted) if i not in owned_by_bob],
                           creator=ADMIN, parent=parent)
    ids.update(access_seed.seed(engine, metalake.name, kind, [n for i, n in enumerate(wanted) if i in owned_by_bob],
                                creator="bob", parent=parent))
    return [ids[n] for n in wanted]


def listed(api: Api, path: str) -> list[str]:
    body = ok(api.get(path))
    return sorted(i["name"] for i in body["identifiers"]) if "identifiers" in body else sorted(body["names"])


def test_a_users_list_of_more_than_a_thousand_catalogs_shows_what_its_roles_allow(admin, bob, lake, engine):
    wanted = names(N, "c")
    ids = seeded(engine, lake, "catalog", wanted, owned := {i for i in range(N) if i % 5 == 0})
    denies = role(admin, lake)
    access_seed.grant(engine, lake.name, denies, "CATALOG", ids[::7], "USE_CATALOG", "DENY")
    give(admin, lake, role(admin, lake, securable("metalake", lake.name, "USE_CATALOG")), denies)
    with statements(engine) as seen:
        shown = listed(bob, lake.children())
    with statements(engine) as unfiltered:
        everything = listed(admin, lake.children())

    assert shown == sorted(n for i, n in enumerate(wanted) if i in owned or i % 7), "an owner sees a denied catalog"
    assert everything == wanted
    seen.assert_set_based_beside(unfiltered, extra=6)


def test_a_users_list_of_more_than_a_thousand_tags_shows_what_its_roles_allow(admin, bob, lake, engine):
    wanted = names(N, "t")
    ids = seeded(engine, lake, "tag", wanted, owned := {i for i in range(N) if i % 10 == 0})
    allows, denies = role(admin, lake), role(admin, lake)
    access_seed.grant(engine, lake.name, allows, "TAG", ids[::3], "APPLY_TAG")
    access_seed.grant(engine, lake.name, denies, "TAG", ids[::9], "APPLY_TAG", "DENY")
    give(admin, lake, allows, denies)
    with statements(engine) as seen:
        shown = listed(bob, f"{lake.path}/tags")
    with statements(engine) as unfiltered:
        assert listed(admin, f"{lake.path}/tags") == wanted

    assert shown == sorted(n for i, n in enumerate(wanted) if i in owned or (i % 3 == 0 and i % 9))
    seen.assert_set_based_beside(unfiltered, extra=6)


def test_a_users_list_of_more_than_a_thousand_roles_shows_those_it_owns_or_holds(admin, bob, lake, engine):
    wanted = names(N, "r")
    ids = seeded(engine, lake, "role", wanted, owned := {i for i in range(N) if i % 4 == 0})
    access_seed.give_roles(engine, lake.name, "bob", ids[::6])
    with statements(engine) as seen:
        shown = listed(bob, f"{lake.path}/roles")
    with statements(engine) as unfiltered:
        assert listed(admin, f"{lake.path}/roles") == wanted

    assert shown == sorted(n for i, n in enumerate(wanted) if i in owned or i % 6 == 0)
    seen.assert_set_based_beside(unfiltered, extra=7)
    give(admin, lake, role(admin, lake, securable("metalake", lake.name, "MANAGE_GRANTS")))
    assert len(listed(bob, f"{lake.path}/roles")) == N + 1  # MANAGE_GRANTS on the metalake shows them all


def test_a_users_lists_of_more_than_a_thousand_schemas_and_tables_show_what_its_roles_allow(admin, bob, lake,
                                                                                            engine):
    catalog = admin.create_catalog(lake)
    schema = admin.create_schema(catalog)
    schema_names, table_names = names(N, "s"), names(N, "x")
    schemas = seeded(engine, lake, "schema", schema_names, owned_schemas := {i for i in range(N) if i % 5 == 0},
                     parent=(catalog.name,))
    tables = seeded(engine, lake, "table", table_names, owned_tables := {i for i in range(N) if i % 7 == 0},
                    parent=(catalog.name, schema.name))
    allows, denies = role(admin, lake, securable("catalog", catalog.name, "USE_CATALOG")), role(admin, lake)
    access_seed.grant(engine, lake.name, allows, "SCHEMA", schemas[::2], "USE_SCHEMA")
    access_seed.grant(engine, lake.name, denies, "SCHEMA", schemas[::8], "USE_SCHEMA", "DENY")
    ok(admin.put(f"{lake.path}/permissions/roles/{allows}/schema/{catalog.name}.{schema.name}/grant",
                 {"privileges": [{"name": "USE_SCHEMA", "condition": "allow"}]}))
    access_seed.grant(engine, lake.name, allows, "TABLE", tables[::3], "SELECT_TABLE")
    access_seed.grant(engine, lake.name, allows, "TABLE", tables[::5], "MODIFY_TABLE")
    access_seed.grant(engine, lake.name, denies, "TABLE", tables[::6], "SELECT_TABLE", "DENY")
    give(admin, lake, allows, denies)
    with statements(engine) as seen_schemas:
        shown_schemas = listed(bob, catalog.children())
    with statements(engine) as seen_tables:
        shown_tables = listed(bob, schema.children())
    with statements(engine) as all_schemas:
        assert len(listed(admin, catalog.children())) == N + 1
    with statements(engine) as all_tables:
        assert len(listed(admin, schema.children())) == N

    assert shown_schemas == sorted([schema.name] + [n for i, n in enumerate(schema_names)
                                                    if i in owned_schemas or (i % 2 == 0 and i % 8)])
    assert shown_tables == sorted(n for i, n in enumerate(table_names)
                                  if i in owned_tables or (i % 3 == 0 and i % 6) or i % 5 == 0)
    seen_schemas.assert_set_based_beside(all_schemas, extra=6)
    seen_tables.assert_set_based_beside(all_tables, extra=6)


def test_the_objects_of_a_tag_on_more_than_a_thousand_tables_are_checked_in_one_read(admin, bob, lake, engine):
    """Tables in three catalogs of four schemas each: bob may use catalogs 0 and 1, every schema but
    one (a deny), select in catalog 0 and on every 4th table; he owns catalog 2. His list of the tag's
    objects is what those grants give, and agrees with the object-by-object check of the tag."""
    tag = fresh("big")
    ok(admin.post(f"{lake.path}/tags", {"name": tag}))
    catalogs = seeded(engine, lake, "catalog", ["k0", "k1", "k2"], {2})
    schemas: dict[tuple[str, str], int] = {}
    tables: dict[str, int] = {}
    for c in ("k0", "k1", "k2"):
        for s, schema_id in zip(("s0", "s1", "s2", "s3"), seeded(engine, lake, "schema", ["s0", "s1", "s2", "s3"],
                                                                  set(), parent=(c,)), strict=True):
            schemas[(c, s)] = schema_id
            ids = seeded(engine, lake, "table", names(N // 12, "x"), set(), parent=(c, s))
            tables.update((f"{c}.{s}.x{i:05d}", t) for i, t in enumerate(ids))
    tag_id = _tag_id(engine, lake.name, tag)
    access_seed.tag_objects(engine, tag_id, "table", tables.values())
    access_seed.tag_objects(engine, tag_id, "schema", schemas.values())
    access_seed.tag_objects(engine, tag_id, "catalog", catalogs)
    uses = role(admin, lake, securable("tag", tag, "APPLY_TAG"), securable("metalake", lake.name, "USE_SCHEMA"),
                securable("catalog", "k0", "USE_CATALOG", "SELECT_TABLE"), securable("catalog", "k1", "USE_CATALOG"))
    denies = role(admin, lake, securable("schema", "k1.s3", "USE_SCHEMA", condition="deny"))
    access_seed.grant(engine, lake.name, uses, "TABLE", sorted(tables.values())[::4], "SELECT_TABLE")
    give(admin, lake, uses, denies)
    with statements(engine) as seen:
        body = ok(bob.get(f"{lake.path}/tags/{tag}/objects"))
    with statements(engine) as unfiltered:
        assert len(ok(admin.get(f"{lake.path}/tags/{tag}/objects"))["metadataObjects"]) == 3 + 12 + N
    shown = sorted((o["type"], o["fullName"]) for o in body["metadataObjects"])

    selected = set(sorted(tables.values())[::4])
    expected = [("catalog", c) for c in ("k0", "k1", "k2")] + [
        ("schema", f"{c}.{s}") for c, s in schemas if (c, s) != ("k1", "s3")] + [
        ("table", t) for t, i in tables.items()
        if t.startswith("k2.") or t.startswith("k0.") or (t.startswith("k1.") and ".s3." not in t and i in selected)]
    assert shown == sorted(expected)
    sample = [("catalog", c) for c in ("k0", "k1", "k2")] + [("schema", f"{c}.{s}") for c, s in schemas] + [
        ("table", t) for t in tables if int(t[-5:]) < 8]  # every schema's first 8: each kind of grant
    one_by_one = [(kind, name) for kind, name in sample
                  if bob.get(f"{lake.path}/objects/{kind}/{name}/tags/{tag}").status_code == 200]
    assert [o for o in shown if o in sample] == sorted(one_by_one), "the list and the one-by-one checks disagree"
    seen.assert_set_based_beside(unfiltered, extra=16)


def _tag_id(engine: Engine, metalake: str, tag: str) -> int:
    with engine.connect() as conn:
        found = conn.scalar(select(TagRow.id).join(MetalakeRow, MetalakeRow.id == TagRow.metalake_id).where(
            MetalakeRow.name == metalake, TagRow.name == tag))
    assert found is not None
    return int(found)
