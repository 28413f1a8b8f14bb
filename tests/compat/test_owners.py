"""Owners like Gravitino's (OwnerOperations, the hook dispatchers, JcasbinAuthorizer): the creator owns
what it creates; with gravitino.authorization.enable=true only the owner of an object or of an object
that contains it, or a service admin, may alter, disable or drop it or set its owner; others may read.
Owners follow renames and vanish with drops, cascades included (keyed by the object's id)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from gravimeta.ownership.models import OwnerRow
from tests.api.helpers import Ref, error, fresh, ok
from tests.compat.conftest import ADMIN


def owner_of(api, ref: Ref, kind: str | None = None) -> dict | None:
    kinds = ("metalake", "catalog", "schema", "table")
    kind = kind or kinds[len(ref.levels) - 1]
    full_name = ref.name if kind == "metalake" else ".".join(ref.levels[1:])
    return ok(api.get(f"/api/metalakes/{ref.levels[0]}/owners/{kind}/{full_name}"))["owner"]


def set_owner(api, ref: Ref, name: str, owner_type: str = "USER"):
    kinds = ("metalake", "catalog", "schema", "table")
    kind = kinds[len(ref.levels) - 1]
    full_name = ref.name if kind == "metalake" else ".".join(ref.levels[1:])
    return api.put(f"/api/metalakes/{ref.levels[0]}/owners/{kind}/{full_name}", {"name": name, "type": owner_type})


@pytest.fixture
def admin(as_user):
    return as_user(ADMIN)


@pytest.fixture
def tree(admin, as_user):
    """A metalake of the admin with users alice and bob; the admin created a catalog and gave it to
    alice, who created a schema and a table in it (the owner of a catalog may create in it)."""
    metalake = admin.create_metalake()
    for user in ("alice", "bob"):
        ok(admin.post(f"{metalake.path}/users", {"name": user}))
    catalog = admin.create_catalog(metalake)
    ok(set_owner(admin, catalog, "alice"))
    alice = as_user("alice")
    table = alice.create_table(alice.create_schema(catalog))
    return table


def owner_rows(store, **where) -> int:
    with store.snapshot() as s:
        query = select(func.count()).select_from(OwnerRow)
        for column, value in where.items():
            query = query.where(getattr(OwnerRow, column) == value)
        return s.scalar(query)


# ------------------------------------------------------------------ the creator owns what it creates


def test_the_creator_owns_each_object_it_creates(admin, tree):
    table = tree
    assert owner_of(admin, table.parent.parent.parent) == {"name": ADMIN, "type": "USER"}
    for ref in (table.parent.parent, table.parent, table):
        assert owner_of(admin, ref) == {"name": "alice", "type": "USER"}


def test_the_metalake_creator_becomes_one_of_its_users(admin, tree):
    metalake = tree.parent.parent.parent
    assert sorted(ok(admin.get(f"{metalake.path}/users"))["names"]) == [ADMIN, "alice", "bob"]


def test_anonymous_callers_own_what_they_create_as_anonymous(apps):
    from tests.api.helpers import Api

    anonymous = Api(apps(authorization_enabled=True, service_admins="anonymous").test_client())
    metalake = anonymous.create_metalake()
    assert owner_of(anonymous, metalake) == {"name": "anonymous", "type": "USER"}


# ------------------------------------------------------------------ who may change what


@pytest.mark.parametrize("action", ["alter", "disable", "drop"])
def test_only_an_owner_may_change_an_object_and_without_privileges_others_may_not_even_read(as_user, tree, action):
    table, catalog = tree, tree.parent.parent
    bob = as_user("bob")
    for ref in (catalog, table):  # Gravitino: loading needs USE_CATALOG (and more), or an owner
        error(bob.get(ref.path), 403, 1008, "ForbiddenException", in_message="ANY_USE_CATALOG")
    requests = {
        "alter": lambda api, ref: api.alter(ref, {"@type": "setProperty", "property": "k", "value": "v"}),
        "disable": lambda api, ref: api.patch(ref.path, {"inUse": False}),
        "drop": lambda api, ref: api.delete(ref.path + ("?force=true" if len(ref.levels) == 2 else "")),
    }
    targets = [catalog] if action == "disable" else [table, catalog]
    for ref in targets:
        error(requests[action](bob, ref), 403, 1008, "ForbiddenException", in_message="OWNER")
    for ref in targets:
        ok(requests[action](as_user("alice"), ref))


def test_the_owner_of_a_containing_object_and_a_service_admin_may_change_it(as_user, admin, tree):
    table = tree
    metalake = table.parent.parent.parent
    ok(set_owner(admin, metalake, "bob"))  # bob now owns the metalake, alice still owns the table
    ok(as_user("bob").alter(table, {"@type": "updateComment", "newComment": "by the metalake owner"}))
    ok(admin.alter(table, {"@type": "updateComment", "newComment": "by a service admin"}))
    error(as_user("carol").alter(table, {"@type": "updateComment", "newComment": "x"}), 403, 1008,
          "ForbiddenException")


def test_a_metalake_is_dropped_by_its_owner_or_a_service_admin(as_user, admin):
    metalake = admin.create_metalake()
    ok(admin.post(f"{metalake.path}/users", {"name": "dave"}))
    ok(set_owner(admin, metalake, "dave"))
    error(as_user("erin").delete(metalake.path + "?force=true"), 403, 1008, "ForbiddenException")
    assert ok(as_user("dave").delete(metalake.path + "?force=true"))["dropped"] is True


def test_setting_an_owner_needs_the_rights_gravitino_asks_for(as_user, admin, tree):
    """CAN_SET_OWNER: the metalake's owner, or the nearest owner above the object, which for a schema
    also needs USE_CATALOG and for a table USE_SCHEMA (roles grant those)."""
    table, catalog, metalake = tree, tree.parent.parent, tree.parent.parent.parent
    error(set_owner(as_user("bob"), table, "bob"), 403, 1008, "ForbiddenException", in_message="CAN_SET_OWNER")
    # alice owns the table itself, the nearest owned level, and has no USE_SCHEMA
    error(set_owner(as_user("alice"), table, "bob"), 403, 1008, "ForbiddenException")
    ok(set_owner(as_user("alice"), catalog, "bob"))  # the owner of a catalog may give it away
    assert owner_of(admin, catalog) == {"name": "bob", "type": "USER"}
    error(set_owner(as_user("alice"), catalog, "alice"), 403, 1008, "ForbiddenException")
    ok(admin.post(f"{metalake.path}/users", {"name": "carol"}))
    ok(set_owner(admin, metalake, "carol"))
    ok(set_owner(as_user("carol"), table, "bob"))  # the metalake's owner may set any owner
    assert owner_of(as_user("carol"), table) == {"name": "bob", "type": "USER"}
    ok(as_user("bob").alter(table, {"@type": "updateComment", "newComment": "by the owner of its catalog"}))


def test_a_group_can_own_an_object(admin, tree):
    table, metalake = tree, tree.parent.parent.parent
    ok(admin.post(f"{metalake.path}/groups", {"name": "analysts"}))
    ok(set_owner(admin, table, "analysts", "GROUP"))
    assert owner_of(admin, table) == {"name": "analysts", "type": "GROUP"}


# ------------------------------------------------------------------ owners follow renames, vanish with drops


def test_an_owner_follows_renames_of_the_object_and_of_its_parents(admin, tree):
    table = tree
    ok(set_owner(admin, table, "bob"))
    other_schema = admin.create_schema(table.parent.parent)
    moved_name = fresh("moved")
    ok(admin.alter(table, {"@type": "rename", "newName": moved_name, "newSchemaName": other_schema.name}))
    catalog_name, metalake_name = fresh("cat"), fresh("lake")
    ok(admin.alter(table.parent.parent, {"@type": "rename", "newName": catalog_name}))
    ok(admin.alter(table.parent.parent.parent, {"@type": "rename", "newName": metalake_name}))
    assert owner_of(admin, Ref((metalake_name, catalog_name, other_schema.name, moved_name))) == {
        "name": "bob", "type": "USER"}


@pytest.mark.parametrize("dropped", ["table", "schema", "catalog", "metalake"])
def test_an_owner_vanishes_with_its_object_also_in_a_cascade(admin, as_user, store, tree, dropped):
    table = tree
    schema, catalog, metalake = table.parent, table.parent.parent, table.parent.parent.parent
    for ref in (table, schema, catalog):
        ok(set_owner(admin, ref, "bob"))
    rows_before = owner_rows(store)
    target = {"table": table, "schema": schema, "catalog": catalog, "metalake": metalake}[dropped]
    query = {"schema": "?cascade=true", "catalog": "?force=true", "metalake": "?force=true"}.get(dropped, "")
    assert ok(admin.delete(target.path + query))["dropped"] is True
    assert owner_rows(store) == rows_before - {"table": 1, "schema": 2, "catalog": 3, "metalake": 3}[dropped]
    if dropped == "metalake":
        return
    ok(admin.post(f"{metalake.path}/users", {"name": "carol"}))
    ok(set_owner(admin, metalake, "carol"))  # the metalake's owner may create anything in it
    carol = as_user("carol")  # the same names again, created by another user: no inherited owner
    if dropped == "catalog":
        carol.create_catalog(metalake, catalog.name)
    if dropped in ("catalog", "schema"):
        carol.create_schema(catalog, schema.name)
    carol.create_table(schema, table.name)
    assert owner_of(admin, table) == {"name": "carol", "type": "USER"}


# ------------------------------------------------------------------ owners of tags and roles


@pytest.fixture
def tagger(admin, as_user, tree):
    """Alice (no service admin, not the metalake's owner) with CREATE_TAG and CREATE_ROLE through a
    role: she creates tag and role objects of her own."""
    metalake = tree.parent.parent.parent
    ok(admin.post(f"{metalake.path}/roles", {"name": "creators", "securableObjects": [{
        "fullName": metalake.name, "type": "metalake",
        "privileges": [{"name": p, "condition": "allow"} for p in ("CREATE_TAG", "CREATE_ROLE")]}]}))
    ok(admin.put(f"{metalake.path}/permissions/users/alice/grant", {"roleNames": ["creators"]}))
    return as_user("alice")


def owner_at(api, metalake: Ref, kind: str, name: str):
    return api.get(f"{metalake.path}/owners/{kind}/{name}")


def give_to(api, metalake: Ref, kind: str, name: str, user: str):
    return api.put(f"{metalake.path}/owners/{kind}/{name}", {"name": user, "type": "USER"})


def test_a_tags_owner_alters_and_deletes_it_and_its_old_owner_no_longer_may(admin, as_user, store, tree, tagger):
    metalake, bob = tree.parent.parent.parent, as_user("bob")
    tag = fresh("tag")
    ok(tagger.post(f"{metalake.path}/tags", {"name": tag}))
    assert ok(owner_at(admin, metalake, "tag", tag))["owner"] == {"name": "alice", "type": "USER"}
    comment = {"updates": [{"@type": "updateComment", "newComment": "x"}]}
    error(bob.put(f"{metalake.path}/tags/{tag}", comment), 403, 1008, "ForbiddenException", in_message="TAG::OWNER")
    error(give_to(bob, metalake, "tag", tag, "bob"), 403, 1008, "ForbiddenException", in_message="CAN_SET_OWNER")
    ok(give_to(tagger, metalake, "tag", tag, "bob"))  # the tag's owner may give it away
    assert ok(owner_at(bob, metalake, "tag", tag))["owner"] == {"name": "bob", "type": "USER"}
    error(tagger.put(f"{metalake.path}/tags/{tag}", comment), 403, 1008, "ForbiddenException")
    error(tagger.delete(f"{metalake.path}/tags/{tag}"), 403, 1008, "ForbiddenException")
    renamed = fresh("tag")
    ok(bob.put(f"{metalake.path}/tags/{tag}", {"updates": [{"@type": "rename", "newName": renamed}]}))
    assert ok(owner_at(admin, metalake, "tag", renamed))["owner"] == {"name": "bob", "type": "USER"}
    role = fresh("role")  # the tag's owner grants privileges on it (CAN_OPERATE_METADATA_PRIVILEGE)
    ok(admin.post(f"{metalake.path}/roles", {"name": role, "securableObjects": []}))
    apply_tag = {"privileges": [{"name": "APPLY_TAG", "condition": "allow"}]}
    error(tagger.put(f"{metalake.path}/permissions/roles/{role}/tag/{renamed}/grant", apply_tag), 403, 1008,
          "ForbiddenException")
    ok(bob.put(f"{metalake.path}/permissions/roles/{role}/tag/{renamed}/grant", apply_tag))
    rows = owner_rows(store, object_kind="TAG")
    assert ok(bob.delete(f"{metalake.path}/tags/{renamed}"))["dropped"] is True
    assert owner_rows(store, object_kind="TAG") == rows - 1  # the owner row went with the tag
    error(owner_at(admin, metalake, "tag", renamed), 404, 1003, "NoSuchMetadataObjectException")
    ok(tagger.post(f"{metalake.path}/tags", {"name": renamed}))  # a new namesake inherits no owner
    assert ok(owner_at(admin, metalake, "tag", renamed))["owner"] == {"name": "alice", "type": "USER"}


def test_a_roles_owner_reads_and_deletes_it_and_its_old_owner_no_longer_may(admin, as_user, store, tree, tagger):
    metalake, bob = tree.parent.parent.parent, as_user("bob")
    role = fresh("role")
    ok(tagger.post(f"{metalake.path}/roles", {"name": role, "securableObjects": []}))
    assert ok(owner_at(tagger, metalake, "role", role))["owner"] == {"name": "alice", "type": "USER"}
    error(bob.get(f"{metalake.path}/roles/{role}"), 403, 1008, "ForbiddenException", in_message="ROLE::OWNER")
    error(bob.delete(f"{metalake.path}/roles/{role}"), 403, 1008, "ForbiddenException", in_message="ROLE::OWNER")
    ok(give_to(tagger, metalake, "role", role, "bob"))
    assert ok(owner_at(bob, metalake, "role", role))["owner"] == {"name": "bob", "type": "USER"}
    assert ok(bob.get(f"{metalake.path}/roles/{role}"))["role"]["name"] == role
    assert role in ok(bob.get(f"{metalake.path}/roles"))["names"]
    error(tagger.get(f"{metalake.path}/roles/{role}"), 403, 1008, "ForbiddenException")
    error(tagger.delete(f"{metalake.path}/roles/{role}"), 403, 1008, "ForbiddenException")
    rows = owner_rows(store, object_kind="ROLE")
    assert ok(bob.delete(f"{metalake.path}/roles/{role}"))["deleted"] is True
    assert owner_rows(store, object_kind="ROLE") == rows - 1
    error(owner_at(admin, metalake, "role", role), 404, 1003, "NoSuchMetadataObjectException")


def test_removing_a_user_leaves_its_tags_and_roles_without_owner(admin, tree, tagger):
    metalake, tag, role = tree.parent.parent.parent, fresh("tag"), fresh("role")
    ok(tagger.post(f"{metalake.path}/tags", {"name": tag}))
    ok(tagger.post(f"{metalake.path}/roles", {"name": role, "securableObjects": []}))
    assert ok(admin.delete(f"{metalake.path}/users/alice"))["removed"] is True
    assert ok(owner_at(admin, metalake, "tag", tag))["owner"] is None
    assert ok(owner_at(admin, metalake, "role", role))["owner"] is None


# ------------------------------------------------------------------ users, groups and removal


def test_removing_a_user_leaves_what_it_owned_without_owner(admin, tree):
    table, metalake = tree, tree.parent.parent.parent
    ok(set_owner(admin, table.parent, "bob"))
    assert ok(admin.delete(f"{metalake.path}/users/bob"))["removed"] is True
    assert owner_of(admin, table.parent) is None
    assert ok(admin.delete(f"{metalake.path}/users/alice"))["removed"] is True
    for ref in (table.parent.parent, table):  # created by alice, never given another owner
        assert owner_of(admin, ref) is None
    assert ok(admin.delete(f"{metalake.path}/users/alice"))["removed"] is False


def test_the_owner_of_a_metalake_cannot_be_removed_from_it(admin, tree):
    metalake = tree.parent.parent.parent
    error(admin.delete(f"{metalake.path}/users/{ADMIN}"), 400, 1001, "IllegalArgumentException",
          in_message="is the owner of the metalake")


def test_users_and_groups_are_added_listed_loaded_and_refused_twice(admin, tree):
    metalake = tree.parent.parent.parent
    user = ok(admin.get(f"{metalake.path}/users/alice"))["user"]
    assert (user["name"], user["roles"], user["audit"]["creator"]) == ("alice", [], ADMIN)
    error(admin.post(f"{metalake.path}/users", {"name": "alice"}), 409, 1004, "UserAlreadyExistsException")
    error(admin.get(f"{metalake.path}/users/nobody"), 404, 1003, "NoSuchUserException")
    ok(admin.post(f"{metalake.path}/groups", {"name": "g1"}))
    error(admin.post(f"{metalake.path}/groups", {"name": "g1"}), 409, 1004, "GroupAlreadyExistsException")
    error(admin.get(f"{metalake.path}/groups/g2"), 404, 1003, "NoSuchGroupException")
    assert [g["name"] for g in ok(admin.get(f"{metalake.path}/groups?details=true"))["groups"]] == ["g1"]


def test_only_the_metalake_owner_or_an_admin_adds_and_removes_users(as_user, tree):
    metalake = tree.parent.parent.parent
    error(as_user("alice").post(f"{metalake.path}/users", {"name": "mallory"}), 403, 1008, "ForbiddenException")
    error(as_user("alice").delete(f"{metalake.path}/users/bob"), 403, 1008, "ForbiddenException")


# ------------------------------------------------------------------ errors as Gravitino words them


def test_owner_requests_name_their_errors_like_gravitino(admin, tree):
    table, metalake = tree, tree.parent.parent.parent
    base = f"{metalake.path}/owners"
    error(admin.get(f"{base}/table/{table.levels[1]}.{table.levels[2]}.ghost"), 404, 1003,
          "NoSuchMetadataObjectException", in_message="Failed to execute [metadata object")
    error(admin.get(f"{base}/table/only.two"), 400, 1001, "IllegalArgumentException", in_message="length of names")
    error(admin.get(f"{base}/planet/x"), 400, 1001, "IllegalArgumentException", in_message="No enum constant")
    error(admin.get(f"{base}/metalake/other"), 400, 1001, "IllegalMetadataObjectException")
    error(admin.get(f"{base}/fileset/a.b.c"), 404, 1003, "NoSuchMetadataObjectException")
    error(set_owner(admin, table, "nobody"), 404, 1003, "NotFoundException", in_message="or owner nobody")
    error(admin.put(f"{base}/table/x.y.z", {"name": "bob"}), 400, 1001, "IllegalArgumentException")
    admin.set_in_use(metalake, False)
    error(admin.get(f"{base}/metalake/{metalake.name}"), 409, 1009, "MetalakeNotInUseException")


def test_without_authorization_the_owner_and_user_interfaces_answer_405(api):
    metalake = api.create_metalake()
    for response in (api.get(f"{metalake.path}/owners/metalake/{metalake.name}"),
                     api.put(f"{metalake.path}/owners/metalake/{metalake.name}", {"name": "x", "type": "USER"}),
                     api.post(f"{metalake.path}/users", {"name": "x"}), api.get(f"{metalake.path}/groups")):
        error(response, 405, 1006, "UnsupportedOperationException", in_message="gravitino.authorization.enable")
