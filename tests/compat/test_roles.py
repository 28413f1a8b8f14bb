"""Roles and privileges like Gravitino's (RoleOperations, PermissionOperations,
MetadataObjectRoleOperations, its privileges and its authorization expressions), on SQLite, PostgreSQL
and MariaDB with gravitino.authorization.enable=true: roles hold privileges (allow or deny) on objects,
are granted to users and groups, and the door reads them on every request. Privileges granted above an
object count for it (metalake > catalog > schema > table), a deny anywhere wins, ownership implies all.
Grants are keyed by the object's id: they follow renames, go with drops, and a new object of the same
name inherits none."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.api.helpers import Api, Ref, error, fresh, ok
from tests.compat.conftest import ADMIN, AUTHORIZED
from tests.support import access_seed

ALLOW, DENY = "allow", "deny"


def privilege(name: str, condition: str = ALLOW) -> dict[str, str]:
    return {"name": name, "condition": condition}


def securable(kind: str, full_name: str, *privileges: dict[str, str]) -> dict[str, Any]:
    return {"fullName": full_name, "type": kind, "privileges": list(privileges)}


def full_name(ref: Ref) -> str:
    return ".".join(ref.levels[1:])


KINDS = ("metalake", "catalog", "schema", "table")


def kind_of(ref: Ref) -> str:
    return KINDS[len(ref.levels) - 1]


def name_of(ref: Ref) -> str:
    return ref.name if len(ref.levels) == 1 else full_name(ref)


@pytest.fixture
def admin(as_user) -> Api:
    return as_user(ADMIN)


@pytest.fixture
def tree(admin) -> Ref:
    """A metalake of the admin with user bob, and catalog c, schema s, table t of the admin's."""
    metalake = admin.create_metalake()
    ok(admin.post(f"{metalake.path}/users", {"name": "bob"}))
    return admin.create_table(admin.create_schema(admin.create_catalog(metalake)))


def metalake_of(ref: Ref) -> Ref:
    return Ref(ref.levels[:1])


def create_role(api: Api, metalake: Ref, *objects: dict[str, Any], name: str | None = None) -> str:
    name = name or fresh("role")
    ok(api.post(f"{metalake.path}/roles", {"name": name, "properties": {"k": "v"}, "securableObjects": list(objects)}))
    return name


def grant(api: Api, metalake: Ref, role: str, ref: Ref, *privileges: dict[str, str], verb: str = "grant") -> Any:
    return api.put(f"{metalake.path}/permissions/roles/{role}/{kind_of(ref)}/{name_of(ref)}/{verb}",
                   {"privileges": list(privileges)})


def give(api: Api, metalake: Ref, role: str, user: str = "bob", verb: str = "grant") -> dict[str, Any]:
    return ok(api.put(f"{metalake.path}/permissions/users/{user}/{verb}", {"roleNames": [role]}))["user"]


# ---------------------------------------------------------------------- roles


def test_a_role_is_created_read_listed_and_deleted_like_gravitinos(admin, tree):
    metalake, table = metalake_of(tree), tree
    name = create_role(admin, metalake, securable("metalake", metalake.name, privilege("USE_CATALOG")),
                       securable("table", full_name(table), privilege("select_table"), privilege("modify_table", DENY)))
    role = ok(admin.get(f"{metalake.path}/roles/{name}"))["role"]
    assert role["name"] == name and role["properties"] == {"k": "v"} and role["audit"]["creator"] == ADMIN
    assert role["securableObjects"] == [  # written in lower case, as Gravitino's JSON mapper writes enums
        securable("metalake", metalake.name, privilege("use_catalog")),
        securable("table", full_name(table), privilege("select_table"), privilege("modify_table", DENY))]
    assert name in ok(admin.get(f"{metalake.path}/roles"))["names"]
    error(admin.post(f"{metalake.path}/roles", {"name": name, "securableObjects": []}), 409, 1004,
          "RoleAlreadyExistsException")
    assert ok(admin.delete(f"{metalake.path}/roles/{name}")) == {"code": 0, "dropped": True, "deleted": True}
    error(admin.get(f"{metalake.path}/roles/{name}"), 404, 1003, "NoSuchRoleException")
    assert ok(admin.delete(f"{metalake.path}/roles/{name}"))["dropped"] is False


@pytest.mark.parametrize(("objects", "status", "kind"), [
    ([securable("catalog", "ghost", privilege("USE_CATALOG"))], 400, "IllegalMetadataObjectException"),
    ([securable("table", "{t}", privilege("CREATE_CATALOG"))], 400, "IllegalPrivilegeException"),
    ([securable("catalog", "{c}", privilege("USE_CATALOG"), privilege("USE_CATALOG", DENY))], 400,
     "IllegalPrivilegeException"),
    ([securable("catalog", "{c}", privilege("USE_CATALOG")), securable("catalog", "{c}", privilege("USE_SCHEMA"))],
     400, "IllegalArgumentException"),
    ([securable("catalog", "{c}", privilege("READ_FILESET"))], 400, "IllegalPrivilegeException"),
    ([securable("catalog", "{c}", privilege("FLY"))], 400, "IllegalArgumentException"),
    ([securable("catalog", "{c}")], 400, "IllegalArgumentException"),
])
def test_a_role_with_a_bad_securable_object_is_refused_and_not_created(admin, tree, objects, status, kind):
    metalake, names = metalake_of(tree), {"c": tree.levels[1], "t": full_name(tree)}
    objects = [{**o, "fullName": o["fullName"].format(**names)} for o in objects]
    name = fresh("role")
    error(admin.post(f"{metalake.path}/roles", {"name": name, "securableObjects": objects}), status,
          1001, kind)
    error(admin.get(f"{metalake.path}/roles/{name}"), 404, 1003, "NoSuchRoleException")


def test_privileges_are_granted_merged_and_revoked_on_an_object(admin, tree):
    metalake, catalog = metalake_of(tree), tree.parent.parent
    name = create_role(admin, metalake)
    role = ok(grant(admin, metalake, name, catalog, privilege("USE_CATALOG")))["role"]
    assert role["securableObjects"] == [securable("catalog", catalog.name, privilege("use_catalog"))]
    role = ok(grant(admin, metalake, name, catalog, privilege("USE_SCHEMA"), privilege("USE_CATALOG")))["role"]
    assert role["securableObjects"][0]["privileges"] == [privilege("use_catalog"), privilege("use_schema")]
    error(grant(admin, metalake, name, catalog, privilege("USE_SCHEMA", DENY)), 400, 1001,
          "IllegalPrivilegeException", in_message="duplicated privilege name")
    role = ok(grant(admin, metalake, name, catalog, privilege("USE_CATALOG"), verb="revoke"))["role"]
    assert role["securableObjects"] == [securable("catalog", catalog.name, privilege("use_schema"))]
    role = ok(grant(admin, metalake, name, catalog, privilege("USE_SCHEMA"), verb="revoke"))["role"]
    assert role["securableObjects"] == []  # an object without privileges is no longer the role's
    error(grant(admin, metalake, "ghost", catalog, privilege("USE_CATALOG")), 404, 1003, "NoSuchRoleException")
    error(grant(admin, metalake, name, catalog.sibling("ghost"), privilege("USE_CATALOG")), 404, 1003,
          "NoSuchMetadataObjectException")


def test_roles_are_granted_to_and_revoked_from_users_and_groups(admin, tree):
    metalake = metalake_of(tree)
    first, second = create_role(admin, metalake), create_role(admin, metalake)
    assert give(admin, metalake, first)["roles"] == [first]
    assert ok(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": [second, first]}))["user"][
        "roles"] == [first, second]
    assert ok(admin.get(f"{metalake.path}/users/bob"))["user"]["roles"] == [first, second]
    assert give(admin, metalake, first, verb="revoke")["roles"] == [second]
    ok(admin.post(f"{metalake.path}/groups", {"name": "crew"}))
    group = ok(admin.put(f"{metalake.path}/permissions/groups/crew/grant", {"roleNames": [first]}))["group"]
    assert group["roles"] == [first]
    error(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": ["ghost"]}), 400, 1001,
          "IllegalRoleException")
    error(admin.put(f"{metalake.path}/permissions/users/nobody/grant", {"roleNames": [first]}), 404, 1003,
          "NoSuchUserException")
    error(admin.put(f"{metalake.path}/permissions/groups/nobody/revoke", {"roleNames": [first]}), 404, 1003,
          "NoSuchGroupException")
    error(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": []}), 400, 1001,
          "IllegalArgumentException")
    ok(admin.delete(f"{metalake.path}/roles/{second}"))  # a deleted role is granted to nobody
    assert ok(admin.get(f"{metalake.path}/users/bob"))["user"]["roles"] == []


def test_the_roles_naming_an_object_are_listed(admin, tree):
    metalake, schema = metalake_of(tree), tree.parent
    on_schema = create_role(admin, metalake, securable("schema", full_name(schema), privilege("USE_SCHEMA")))
    create_role(admin, metalake, securable("metalake", metalake.name, privilege("USE_CATALOG")))
    assert ok(admin.get(f"{metalake.path}/objects/schema/{full_name(schema)}/roles"))["names"] == [on_schema]
    error(admin.get(f"{metalake.path}/objects/schema/{schema.levels[1]}.ghost/roles"), 404, 1003,
          "NoSuchMetadataObjectException")


# ---------------------------------------------------------------------- what privileges let a user do


@pytest.fixture
def bob(as_user) -> Api:
    return as_user("bob")


def test_use_catalog_lets_a_user_load_the_catalog_and_see_it_listed_but_not_what_is_inside(admin, bob, tree):
    metalake, catalog, schema = metalake_of(tree), tree.parent.parent, tree.parent
    error(bob.get(catalog.path), 403, 1008, "ForbiddenException")
    assert ok(bob.get(f"{metalake.path}/catalogs"))["identifiers"] == []
    give(admin, metalake, create_role(admin, metalake, securable("metalake", metalake.name, privilege("USE_CATALOG"))))
    assert bob.load(catalog)["name"] == catalog.name
    assert [i["name"] for i in ok(bob.get(f"{metalake.path}/catalogs"))["identifiers"]] == [catalog.name]
    assert ok(bob.get(catalog.children()))["identifiers"] == []  # no USE_SCHEMA: its schemas stay hidden
    error(bob.get(schema.path), 403, 1008, "ForbiddenException")


def test_modify_table_lets_a_non_owner_alter_a_table_with_use_on_the_way_down(admin, bob, tree):
    metalake, catalog, table = metalake_of(tree), tree.parent.parent, tree
    role = create_role(admin, metalake, securable("table", full_name(table), privilege("MODIFY_TABLE")))
    give(admin, metalake, role)
    change = {"@type": "updateComment", "newComment": "by bob"}
    error(bob.alter(table, change), 403, 1008, "ForbiddenException")  # no USE_CATALOG, USE_SCHEMA yet
    ok(grant(admin, metalake, role, catalog, privilege("USE_CATALOG"), privilege("USE_SCHEMA")))
    assert ok(bob.alter(table, change))["table"]["comment"] == "by bob"
    error(bob.delete(table.path), 403, 1008, "ForbiddenException")  # dropping needs ownership
    assert ok(bob.get(f"{table.path}", query_string={"privileges": "MODIFY_TABLE"}))["table"]["name"] == table.name


@pytest.mark.parametrize(("allow_on", "deny_on"), [("metalake", "catalog"), ("table", "metalake"), ("schema", "schema")])
def test_a_deny_anywhere_on_the_way_down_wins(admin, bob, tree, allow_on, deny_on):
    metalake, table = metalake_of(tree), tree
    refs = {"metalake": metalake, "catalog": tree.parent.parent, "schema": tree.parent, "table": tree}
    use = create_role(admin, metalake, securable("catalog", tree.levels[1], privilege("USE_CATALOG"),
                                                 privilege("USE_SCHEMA")))
    allows = create_role(admin, metalake)
    ok(grant(admin, metalake, allows, refs[allow_on], privilege("SELECT_TABLE")))
    for role in (use, allows):
        give(admin, metalake, role)
    assert bob.load(table)["name"] == table.name
    denies = create_role(admin, metalake)  # a second role: the deny of one role beats the allow of another
    ok(grant(admin, metalake, denies, refs[deny_on], privilege("SELECT_TABLE", DENY)))
    give(admin, metalake, denies)
    error(bob.get(table.path), 403, 1008, "ForbiddenException")


def test_privileges_granted_above_an_object_count_for_it(admin, bob, tree):
    metalake, schema, table = metalake_of(tree), tree.parent, tree
    role = create_role(admin, metalake, securable("metalake", metalake.name, privilege("USE_CATALOG"),
                                                  privilege("USE_SCHEMA"), privilege("SELECT_TABLE")))
    give(admin, metalake, role)
    assert bob.load(table)["name"] == table.name
    assert [i["name"] for i in ok(bob.get(schema.children()))["identifiers"]] == [table.name]


def test_create_catalog_lets_a_user_create_one_and_own_it(admin, bob, tree):
    metalake = metalake_of(tree)
    error(bob.post(f"{metalake.path}/catalogs", {"name": "mine", "type": "relational", "provider": "memory"}), 403,
          1008, "ForbiddenException")
    give(admin, metalake, create_role(admin, metalake, securable("metalake", metalake.name, privilege("CREATE_CATALOG"))))
    catalog = bob.create_catalog(metalake, fresh("mine"))
    ok(bob.alter(catalog, {"@type": "setProperty", "property": "k", "value": "v"}))  # its owner now
    assert ok(admin.get(f"{metalake.path}/owners/catalog/{catalog.name}"))["owner"] == {"name": "bob", "type": "USER"}


def test_a_revoke_takes_effect_on_the_next_request(admin, bob, tree):
    metalake, catalog = metalake_of(tree), tree.parent.parent
    role = create_role(admin, metalake, securable("catalog", catalog.name, privilege("USE_CATALOG")))
    give(admin, metalake, role)
    bob.load(catalog)
    give(admin, metalake, role, verb="revoke")
    error(bob.get(catalog.path), 403, 1008, "ForbiddenException")
    give(admin, metalake, role)
    bob.load(catalog)
    ok(grant(admin, metalake, role, catalog, privilege("USE_CATALOG"), verb="revoke"))
    error(bob.get(catalog.path), 403, 1008, "ForbiddenException")


def test_manage_grants_lets_a_user_grant_roles_and_privileges(admin, bob, tree):
    metalake, catalog = metalake_of(tree), tree.parent.parent
    other = create_role(admin, metalake)
    error(bob.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": [other]}), 403, 1008,
          "ForbiddenException")
    give(admin, metalake, create_role(admin, metalake, securable("metalake", metalake.name, privilege("MANAGE_GRANTS"))))
    assert give(bob, metalake, other)["roles"][-1] == other
    ok(grant(bob, metalake, other, catalog, privilege("USE_CATALOG")))


# ---------------------------------------------------------------------- keyed by id


def test_grants_follow_a_rename_and_go_with_a_drop_and_a_new_namesake_inherits_none(admin, bob, tree):
    metalake, catalog, table = metalake_of(tree), tree.parent.parent, tree
    role = create_role(admin, metalake, securable("catalog", catalog.name, privilege("USE_CATALOG"),
                                                  privilege("USE_SCHEMA")),
                       securable("table", full_name(table), privilege("SELECT_TABLE")))
    give(admin, metalake, role)
    renamed = table.sibling(fresh("renamed"))
    ok(admin.alter(table, {"@type": "rename", "newName": renamed.name}))
    objects = ok(admin.get(f"{metalake.path}/roles/{role}"))["role"]["securableObjects"]
    assert objects[1] == securable("table", full_name(renamed), privilege("select_table"))
    assert bob.load(renamed)["name"] == renamed.name
    ok(admin.delete(renamed.path))
    assert len(ok(admin.get(f"{metalake.path}/roles/{role}"))["role"]["securableObjects"]) == 1
    admin.create_table(renamed.parent, renamed.name)
    error(bob.get(renamed.path), 403, 1008, "ForbiddenException")  # the new table is another object


def test_without_authorization_the_role_and_permission_interfaces_answer_405(api):
    metalake = api.create_metalake()
    for response in (api.get(f"{metalake.path}/roles"), api.post(f"{metalake.path}/roles", {"name": "r",
                                                                                           "securableObjects": []}),
                     api.put(f"{metalake.path}/permissions/users/x/grant", {"roleNames": ["r"]}),
                     api.get(f"{metalake.path}/objects/metalake/{metalake.name}/roles")):
        error(response, 405, 1006, "UnsupportedOperationException", in_message="gravitino.authorization.enable")


def test_a_user_sees_the_roles_granted_to_it_and_an_override_replaces_every_privilege(admin, bob, tree):
    metalake, catalog, schema = metalake_of(tree), tree.parent.parent, tree.parent
    mine, other = create_role(admin, metalake), create_role(admin, metalake)
    give(admin, metalake, mine)
    assert ok(bob.get(f"{metalake.path}/roles/{mine}"))["role"]["name"] == mine  # ROLE::SELF
    error(bob.get(f"{metalake.path}/roles/{other}"), 403, 1008, "ForbiddenException")
    assert ok(bob.get(f"{metalake.path}/roles"))["names"] == [mine]
    ok(grant(admin, metalake, mine, catalog, privilege("USE_CATALOG")))
    overrides = [securable("schema", full_name(schema), privilege("USE_SCHEMA", DENY))]
    role = ok(admin.put(f"{metalake.path}/permissions/roles/{mine}", {"overrides": overrides}))["role"]
    assert role["securableObjects"] == [securable("schema", full_name(schema), privilege("use_schema", DENY))]
    error(bob.get(catalog.path), 403, 1008, "ForbiddenException")  # its USE_CATALOG went with the override


# ---------------------------------------------------------------------- caps


OBJECTS_CAP, ROLES_CAP = 1000, 1000


def test_a_role_holds_at_most_the_cap_of_securable_objects_and_a_400_names_the_cap(admin, tree, apps):
    metalake = metalake_of(tree)
    engine = apps(**AUTHORIZED).extensions["gravimeta"].store.engine
    catalogs = sorted(access_seed.seed(engine, metalake.name, "catalog", [f"k{i:04d}" for i in range(OBJECTS_CAP)]))
    at_cap = [securable("catalog", c, privilege("USE_CATALOG")) for c in catalogs]
    name = create_role(admin, metalake, *at_cap)
    assert len(ok(admin.get(f"{metalake.path}/roles/{name}"))["role"]["securableObjects"]) == OBJECTS_CAP
    message = error(grant(admin, metalake, name, metalake, privilege("CREATE_CATALOG")), 400, 1001,
                    "IllegalArgumentException", in_message=f"at most {OBJECTS_CAP} securable objects")
    assert "gravimeta.limits.role-securable-objects-max-count" in message and "would hold 1001" in message
    ok(grant(admin, metalake, name, tree.parent.parent.sibling(catalogs[0]), privilege("USE_SCHEMA")))  # not a new one
    over = [*at_cap, securable("metalake", metalake.name, privilege("CREATE_CATALOG"))]
    refused = fresh("role")
    error(admin.post(f"{metalake.path}/roles", {"name": refused, "securableObjects": over}), 400, 1001,
          "IllegalArgumentException", in_message=f"role {refused} would hold 1001")
    error(admin.get(f"{metalake.path}/roles/{refused}"), 404, 1003, "NoSuchRoleException")
    error(admin.put(f"{metalake.path}/permissions/roles/{name}", {"overrides": over}), 400, 1001,
          "IllegalArgumentException", in_message=f"at most {OBJECTS_CAP} securable objects")
    assert len(ok(admin.get(f"{metalake.path}/roles/{name}"))["role"]["securableObjects"]) == OBJECTS_CAP


def test_a_user_holds_at_most_the_cap_of_roles_and_a_400_names_the_cap(admin, tree, apps):
    metalake = metalake_of(tree)
    engine = apps(**AUTHORIZED).extensions["gravimeta"].store.engine
    roles = access_seed.seed(engine, metalake.name, "role", [f"r{i:04d}" for i in range(ROLES_CAP + 1)])
    names = sorted(roles)
    access_seed.give_roles(engine, metalake.name, "bob", [roles[n] for n in names[:ROLES_CAP - 1]])
    assert len(give(admin, metalake, names[ROLES_CAP - 1])["roles"]) == ROLES_CAP
    message = error(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": [names[ROLES_CAP]]}),
                    400, 1001, "IllegalArgumentException", in_message=f"at most {ROLES_CAP} roles")
    assert "gravimeta.limits.principal-roles-max-count" in message and "user bob would hold 1001" in message
    ok(admin.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": [names[0]]}))  # held already
    error(admin.put(f"{metalake.path}/permissions/users/carol/grant", {"roleNames": names}), 400, 1001,
          "IllegalArgumentException", in_message="user carol would hold 1001")  # before anything is read
    give(admin, metalake, names[0], verb="revoke")
    assert len(give(admin, metalake, names[ROLES_CAP])["roles"]) == ROLES_CAP


def test_the_caps_are_settings(apps, tree):
    metalake = metalake_of(tree)
    client = apps(**AUTHORIZED, max_role_securable_objects=2, max_principal_roles=1).test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(f"{ADMIN}:x".encode()).decode()
    capped = Api(client)
    three = [securable("metalake", metalake.name, privilege("CREATE_ROLE")),
             securable("catalog", tree.levels[1], privilege("USE_CATALOG")),
             securable("schema", ".".join(tree.levels[1:3]), privilege("USE_SCHEMA"))]
    error(capped.post(f"{metalake.path}/roles", {"name": fresh("role"), "securableObjects": three}), 400, 1001,
          "IllegalArgumentException", in_message="at most 2 securable objects")
    first, second = create_role(capped, metalake, *three[:2]), create_role(capped, metalake)
    give(capped, metalake, first)
    error(capped.put(f"{metalake.path}/permissions/users/bob/grant", {"roleNames": [second]}), 400, 1001,
          "IllegalArgumentException", in_message="at most 1 roles")
