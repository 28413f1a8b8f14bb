"""Authorization at one door (gravimeta/api/door.py): every route declares what it needs, and the app
refuses to build with one that declares nothing; this test walks the app's URL map and sends every
route, on PostgreSQL with gravitino.authorization.enable=true, as five callers:

  owner      olive, a user of the metalake and its owner (Gravitino: ownership implies all below it)
  member     nina, a user of the metalake who owns nothing and has no privilege
  granted    priya, a user of the metalake who owns nothing and holds every privilege the routes ask
             for, on the metalake (inherited by everything in it): what privileges give, and what
             only ownership does (alter, drop, set an owner, delete a tag or a role)
  admin      a service admin (gravimeta lets service admins do anything; Gravitino only lets them
             create metalakes, and refuses them inside a metalake they are not a user of)
  anonymous  no credentials: `anonymous`, not a user of the metalake

and expects Gravitino's answers (403 for the member on every change and on every read that needs a
privilege; 403 for a caller who is not a user of the metalake; 401 where only a service admin may go
and no credentials were sent). A route of the URL map without an expectation here fails the test.

Before the door, partitions, statistics and tags were never checked: the member's adds and drops of
partitions, updates and drops of statistics, tag associations, alters and deletes answered 200.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask

from gravimeta.access import rules
from gravimeta.api.door import UndeclaredRoute, needs, register_door, route_table, undeclared
from tests.api.helpers import Api, Ref, column, fresh, ok
from tests.compat.conftest import ADMIN, AUTHORIZED
from tests.conftest import require_backend
from tests.support.databases import fresh_database

OWNER, MEMBER, GRANTED = "olive", "nina", "priya"
CALLERS = ("anonymous", "member", "granted", "owner", "admin")  # refusals first


@pytest.fixture(scope="module")
def backend_url(tmp_path_factory) -> Iterator[str]:
    """This module runs on PostgreSQL only (the compat fixtures take their database from here)."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path_factory.mktemp("door")) as url:
        yield url


# ---------------------------------------------------------------------- every route declares


def test_every_route_of_the_app_declares_its_access(apps):
    assert undeclared(apps(**AUTHORIZED)) == []


def test_an_app_with_an_undeclared_route_is_refused_at_build_time(apps):
    services = apps(**AUTHORIZED).extensions["gravimeta"]
    app = Flask("undeclared")
    blueprint = Blueprint("stray", __name__)
    blueprint.add_url_rule("/api/stray", "stray", lambda: "")
    blueprint.add_url_rule("/api/declared/<metalake>", "declared", needs(rules.METALAKE_OWNER)(lambda metalake: ""))
    blueprint.add_url_rule("/api/odd/<thing>", "odd", needs(None)(lambda thing: ""))
    app.register_blueprint(blueprint)
    with pytest.raises(UndeclaredRoute) as refused:
        register_door(app, None, services.settings)  # type: ignore[arg-type]
    assert "/api/stray (stray.stray): no access declaration" in str(refused.value)
    assert "/api/odd/<thing> (stray.odd): the door cannot read ['thing']" in str(refused.value)
    assert "declared" not in str(refused.value)


def test_the_documentation_lists_each_route_with_what_it_needs(apps):
    documented = (Path(__file__).resolve().parents[2] / "docs" / "authorization.md").read_text()
    missing = [row for row in route_table(apps(**AUTHORIZED)) if row not in documented]
    assert missing == [], "docs/authorization.md lacks (or words otherwise):\n" + "\n".join(missing)


# ---------------------------------------------------------------------- the world each route acts on


PARTITIONING = [{"strategy": "identity", "fieldName": ["dt"]}]


def identity(value: str) -> dict[str, Any]:
    return {"type": "identity", "name": f"dt={value}", "fieldNames": [["dt"]],
            "values": [{"type": "literal", "dataType": "string", "value": value}], "properties": {}}


@dataclass
class World:
    """Metalake m (created by the admin, owned by olive; users olive, nina, priya, zed; group crew),
    catalog c, schema s, partitioned table t with partition dt=p0 and a statistic, tag g on t, role
    "reader" (USE_CATALOG on c): all created by olive. Priya holds role "grants", with every privilege
    these routes can ask for, on the metalake."""

    table: Ref
    tag: str

    @property
    def names(self) -> dict[str, str]:
        m, c, s, t = self.table.levels
        return {"m": m, "c": c, "s": s, "t": t, "g": self.tag}


def build_world(admin: Api, owner: Api) -> World:
    metalake = admin.create_metalake()
    for user in (OWNER, MEMBER, GRANTED, "zed"):
        ok(admin.post(f"{metalake.path}/users", {"name": user}))
    ok(admin.post(f"{metalake.path}/groups", {"name": "crew"}))
    ok(admin.put(f"{metalake.path}/owners/metalake/{metalake.name}", {"name": OWNER, "type": "USER"}))
    schema = owner.create_schema(owner.create_catalog(metalake))
    table = owner.create_table(schema, columns=[column("dt", "string"), column("v")], partitioning=PARTITIONING)
    ok(owner.post(f"{table.path}/partitions", {"partitions": [identity("p0")]}))
    m, c, s, t = table.levels
    ok(owner.put(f"/api/metalakes/{m}/objects/table/{c}.{s}.{t}/statistics", {"updates": {"custom-rows": 1}}))
    tag = fresh("tag")
    ok(owner.post(f"{metalake.path}/tags", {"name": tag}))
    ok(owner.post(f"/api/metalakes/{m}/objects/table/{c}.{s}.{t}/tags", {"tagsToAdd": [tag]}))
    use_catalog = [{"fullName": c, "type": "catalog", "privileges": [{"name": "USE_CATALOG", "condition": "ALLOW"}]}]
    ok(owner.post(f"{metalake.path}/roles", {"name": "reader", "securableObjects": use_catalog}))
    everything = [{"name": p, "condition": "ALLOW"} for p in PRIVILEGES]
    ok(owner.post(f"{metalake.path}/roles", {"name": "grants", "securableObjects": [
        {"fullName": m, "type": "metalake", "privileges": everything}]}))
    ok(owner.put(f"{metalake.path}/permissions/users/{GRANTED}/grant", {"roleNames": ["grants"]}))
    return World(table, tag)


#: what "grants" holds on the metalake: every privilege one of the routes asks for, and no ownership
PRIVILEGES = ("CREATE_CATALOG", "USE_CATALOG", "CREATE_SCHEMA", "USE_SCHEMA", "CREATE_TABLE", "SELECT_TABLE",
              "MODIFY_TABLE", "CREATE_TAG", "APPLY_TAG", "MANAGE_USERS", "MANAGE_GROUPS", "CREATE_ROLE",
              "MANAGE_GRANTS")


# ---------------------------------------------------------------------- what each route is expected to answer


def expect(owner: int, member: int, granted: int, admin: int, anonymous: int) -> dict[str, int]:
    return {"owner": owner, "member": member, "granted": granted, "admin": admin, "anonymous": anonymous}


OWNED = expect(200, 403, 403, 200, 403)  # ownership only: privileges do not help
PRIVILEGED = expect(200, 403, 200, 200, 403)  # an owner, or a holder of the privilege
MEMBERS = expect(200, 200, 200, 200, 403)
ANYONE = expect(200, 200, 200, 200, 200)
SERVICE_ADMINS = expect(403, 403, 403, 200, 401)

Body = Callable[[Api, World], Any]


@dataclass(frozen=True)
class Case:
    path: str
    expect: dict[str, int]
    body: Body | None = None
    changes: bool = False  # the route changes something: it runs on a world of its own


def unique(prefix: str) -> Body:
    return lambda admin, world: {"name": fresh(prefix)}


def new_tag_on_table(admin: Api, world: World) -> dict[str, Any]:
    """A tag of olive's for each call (an association is made once)."""
    name = fresh("tag")
    olive = _as(admin, OWNER)
    ok(olive.post(f"/api/metalakes/{world.names['m']}/tags", {"name": name}))
    return {"tagsToAdd": [name]}


def new_role(admin: Api, world: World) -> dict[str, Any]:
    return {"name": fresh("role"), "securableObjects": []}


T = "/api/metalakes/{m}/catalogs/{c}/schemas/{s}/tables/{t}"
OBJ = "/api/metalakes/{m}/objects/table/{c}.{s}.{t}"
PERMISSIONS = "/api/metalakes/{m}/permissions"
SET_PROPERTY = {"updates": [{"@type": "setProperty", "property": "k", "value": "v"}]}
TABLE_BODY: Body = lambda a, w: {"name": fresh("tbl"), "columns": [column("id")]}  # noqa: E731
READER: Body = lambda a, w: {"roleNames": ["reader"]}  # noqa: E731
SELECT: Body = lambda a, w: {"privileges": [{"name": "SELECT_TABLE", "condition": "ALLOW"}]}  # noqa: E731

CASES: dict[tuple[str, str], Case] = {
    ("version.version", "GET"): Case("/api/version", ANYONE),
    ("version.close", "CLOSE"): Case("/", ANYONE),
    ("console.index", "GET"): Case("/", ANYONE),
    ("console.asset", "GET"): Case("/console/console.js", ANYONE),
    ("health.health", "GET"): Case("/api/health", ANYONE),
    ("health.live", "GET"): Case("/api/health/live", ANYONE),
    ("health.ready", "GET"): Case("/api/health/ready", ANYONE),
    ("openapi.document", "GET"): Case("/api/openapi.json", ANYONE),
    ("admin.locks", "GET"): Case("/api/admin/locks", SERVICE_ADMINS),
    ("admin.repair_preview", "GET"): Case("/api/admin/repair-preview", SERVICE_ADMINS),
    ("admin.metrics", "GET"): Case("/metrics", SERVICE_ADMINS),
    ("metalakes.list_metalakes", "GET"): Case("/api/metalakes", ANYONE),
    ("metalakes.create_metalake", "POST"): Case("/api/metalakes", SERVICE_ADMINS, unique("lake"), True),
    ("metalakes.load_metalake", "GET"): Case("/api/metalakes/{m}", MEMBERS),
    ("metalakes.alter_metalake", "PUT"): Case("/api/metalakes/{m}", OWNED, lambda a, w: SET_PROPERTY, True),
    ("metalakes.set_metalake_in_use", "PATCH"): Case("/api/metalakes/{m}", OWNED, lambda a, w: {"inUse": True}, True),
    ("metalakes.drop_metalake", "DELETE"): Case("/api/metalakes/{m}?force=true", OWNED, None, True),
    ("catalogs.list_catalogs", "GET"): Case("/api/metalakes/{m}/catalogs", MEMBERS),
    ("catalogs.create_catalog", "POST"): Case(
        "/api/metalakes/{m}/catalogs", PRIVILEGED,
        lambda a, w: {"name": fresh("cat"), "type": "relational", "provider": "memory"}, True),
    ("catalogs.test_new_connection", "POST"): Case(
        "/api/metalakes/{m}/catalogs/testConnection", PRIVILEGED,
        lambda a, w: {"name": fresh("cat"), "type": "relational", "provider": "memory"}),
    ("catalogs.load_catalog", "GET"): Case("/api/metalakes/{m}/catalogs/{c}", PRIVILEGED),
    ("catalogs.alter_catalog", "PUT"): Case("/api/metalakes/{m}/catalogs/{c}", OWNED, lambda a, w: SET_PROPERTY, True),
    ("catalogs.set_catalog_in_use", "PATCH"): Case(  # Gravitino: the rule of a load (USE_CATALOG will do)
        "/api/metalakes/{m}/catalogs/{c}", PRIVILEGED, lambda a, w: {"inUse": True}, True),
    ("catalogs.drop_catalog", "DELETE"): Case("/api/metalakes/{m}/catalogs/{c}?force=true", OWNED, None, True),
    ("catalogs.test_connection", "POST"): Case("/api/metalakes/{m}/catalogs/{c}/testConnection", OWNED),
    ("schemas.list_schemas", "GET"): Case("/api/metalakes/{m}/catalogs/{c}/schemas", PRIVILEGED),
    ("schemas.create_schema", "POST"): Case(
        "/api/metalakes/{m}/catalogs/{c}/schemas", PRIVILEGED, unique("sch"), True),
    ("schemas.load_schema", "GET"): Case("/api/metalakes/{m}/catalogs/{c}/schemas/{s}", PRIVILEGED),
    ("schemas.alter_schema", "PUT"): Case(
        "/api/metalakes/{m}/catalogs/{c}/schemas/{s}", OWNED, lambda a, w: SET_PROPERTY, True),
    ("schemas.drop_schema", "DELETE"): Case("/api/metalakes/{m}/catalogs/{c}/schemas/{s}?cascade=true", OWNED, None, True),
    ("tables.list_tables", "GET"): Case("/api/metalakes/{m}/catalogs/{c}/schemas/{s}/tables", PRIVILEGED),
    ("tables.create_table", "POST"): Case(
        "/api/metalakes/{m}/catalogs/{c}/schemas/{s}/tables", PRIVILEGED, TABLE_BODY, True),
    ("tables.load_table", "GET"): Case(T, PRIVILEGED),
    ("tables.alter_table", "PUT"): Case(T, PRIVILEGED, lambda a, w: SET_PROPERTY, True),
    ("tables.drop_table", "DELETE"): Case(T, OWNED, None, True),
    ("partitions.list_partitions", "GET"): Case(T + "/partitions", PRIVILEGED),
    ("partitions.add_partitions", "POST"): Case(
        T + "/partitions", PRIVILEGED, lambda a, w: {"partitions": [identity(uuid.uuid4().hex[:8])]}, True),
    ("partitions.get_partition", "GET"): Case(T + "/partitions/dt=p0", PRIVILEGED),
    ("partitions.drop_partition", "DELETE"): Case(T + "/partitions/dt=p0", PRIVILEGED, None, True),
    ("statistics.list_statistics", "GET"): Case(OBJ + "/statistics", PRIVILEGED),
    ("statistics.update_statistics", "PUT"): Case(
        OBJ + "/statistics", PRIVILEGED, lambda a, w: {"updates": {"custom-rows": 2}}, True),
    ("statistics.drop_statistics", "POST"): Case(
        OBJ + "/statistics", PRIVILEGED, lambda a, w: {"names": ["custom-rows"]}, True),
    ("statistics.list_partition_statistics", "GET"): Case(OBJ + "/statistics/partitions", PRIVILEGED),
    ("statistics.update_partition_statistics", "PUT"): Case(
        OBJ + "/statistics/partitions", PRIVILEGED,
        lambda a, w: {"updates": [{"partitionName": "dt=p0", "statistics": {"custom-rows": 3}}]}, True),
    ("statistics.drop_partition_statistics", "POST"): Case(
        OBJ + "/statistics/partitions", PRIVILEGED,
        lambda a, w: {"drops": [{"partitionName": "dt=p0", "statisticNames": ["custom-rows"]}]}, True),
    ("tags.list_tags", "GET"): Case("/api/metalakes/{m}/tags", MEMBERS),
    ("tags.create_tag", "POST"): Case("/api/metalakes/{m}/tags", PRIVILEGED, unique("tag"), True),
    ("tags.get_tag", "GET"): Case("/api/metalakes/{m}/tags/{g}", PRIVILEGED),
    ("tags.alter_tag", "PUT"): Case("/api/metalakes/{m}/tags/{g}", OWNED,
                                    lambda a, w: {"updates": [{"@type": "updateComment", "newComment": "x"}]}, True),
    ("tags.delete_tag", "DELETE"): Case("/api/metalakes/{m}/tags/{g}", OWNED, None, True),
    ("tags.list_objects_for_tag", "GET"): Case("/api/metalakes/{m}/tags/{g}/objects", PRIVILEGED),
    ("tags.list_object_tags", "GET"): Case(OBJ + "/tags", PRIVILEGED),
    ("tags.get_object_tag", "GET"): Case(OBJ + "/tags/{g}", PRIVILEGED),
    ("tags.associate_tags", "POST"): Case(OBJ + "/tags", PRIVILEGED, new_tag_on_table, True),
    ("owners.get_owner", "GET"): Case("/api/metalakes/{m}/owners/table/{c}.{s}.{t}", PRIVILEGED),
    ("owners.set_owner", "PUT"): Case("/api/metalakes/{m}/owners/table/{c}.{s}.{t}", OWNED,
                                      lambda a, w: {"name": MEMBER, "type": "USER"}, True),
    ("users.add_user", "POST"): Case("/api/metalakes/{m}/users", PRIVILEGED, unique("user"), True),
    ("users.list_users", "GET"): Case("/api/metalakes/{m}/users", MEMBERS),
    ("users.get_user", "GET"): Case(f"/api/metalakes/{{m}}/users/{OWNER}", PRIVILEGED),
    ("users.remove_user", "DELETE"): Case("/api/metalakes/{m}/users/zed", PRIVILEGED, None, True),
    ("groups.add_group", "POST"): Case("/api/metalakes/{m}/groups", PRIVILEGED, unique("group"), True),
    ("groups.list_groups", "GET"): Case("/api/metalakes/{m}/groups", MEMBERS),
    ("groups.get_group", "GET"): Case("/api/metalakes/{m}/groups/crew", ANYONE),  # Gravitino declares no rule
    ("groups.remove_group", "DELETE"): Case("/api/metalakes/{m}/groups/crew", PRIVILEGED, None, True),
    ("roles.list_roles", "GET"): Case("/api/metalakes/{m}/roles", MEMBERS),
    ("roles.create_role", "POST"): Case("/api/metalakes/{m}/roles", PRIVILEGED, new_role, True),
    ("roles.get_role", "GET"): Case("/api/metalakes/{m}/roles/reader", PRIVILEGED),
    ("roles.delete_role", "DELETE"): Case("/api/metalakes/{m}/roles/reader", OWNED, None, True),
    ("permissions.grant_roles_user", "PUT"): Case(PERMISSIONS + "/users/zed/grant", PRIVILEGED, READER, True),
    ("permissions.revoke_roles_user", "PUT"): Case(PERMISSIONS + "/users/zed/revoke", PRIVILEGED, READER, True),
    ("permissions.grant_roles_group", "PUT"): Case(PERMISSIONS + "/groups/crew/grant", PRIVILEGED, READER, True),
    ("permissions.revoke_roles_group", "PUT"): Case(PERMISSIONS + "/groups/crew/revoke", PRIVILEGED, READER, True),
    ("permissions.grant_privileges", "PUT"): Case(
        PERMISSIONS + "/roles/reader/table/{c}.{s}.{t}/grant", PRIVILEGED, SELECT, True),
    ("permissions.revoke_privileges", "PUT"): Case(
        PERMISSIONS + "/roles/reader/table/{c}.{s}.{t}/revoke", PRIVILEGED, SELECT, True),
    ("permissions.override_privileges", "PUT"): Case(
        PERMISSIONS + "/roles/reader", PRIVILEGED, lambda a, w: {"overrides": []}, True),
    ("object_roles.list_object_roles", "GET"): Case(  # Gravitino declares no rule (it filters the list)
        "/api/metalakes/{m}/objects/catalog/{c}/roles", ANYONE),
}
#: the deprecated object routes under /tags/{type}/{fullName} answer as the /objects ones
DEPRECATED = {
    "/api/metalakes/<metalake>/tags/<kind>/<full_name>": "/api/metalakes/{m}/tags/table/{c}.{s}.{t}",
    "/api/metalakes/<metalake>/tags/<kind>/<full_name>/<tag_name>": "/api/metalakes/{m}/tags/table/{c}.{s}.{t}/{g}",
}
IGNORED_METHODS = {"HEAD", "OPTIONS"}


def routes(app: Flask) -> list[tuple[str, str, str]]:
    """(endpoint, method, URL rule) of every route of the app."""
    return sorted((rule.endpoint, method, rule.rule) for rule in app.url_map.iter_rules() if rule.endpoint != "static"
                  for method in (rule.methods or set()) - IGNORED_METHODS)


def case_of(endpoint: str, method: str, rule: str) -> Case:
    case = CASES[(endpoint, method)]
    return Case(DEPRECATED[rule], case.expect, case.body, case.changes) if rule in DEPRECATED else case


def _as(admin: Api, user: str | None) -> Api:
    client = admin.client.application.test_client()
    if user is not None:
        client.environ_base["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(f"{user}:x".encode()).decode()
    return Api(client)


def send(api: Api, method: str, path: str, body: Any) -> Any:
    return api.client.open(path, method=method, json=body, headers={"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def callers(apps) -> dict[str, Api]:
    admin = _as(Api(apps(**AUTHORIZED).test_client()), ADMIN)
    return {"admin": admin, "owner": _as(admin, OWNER), "member": _as(admin, MEMBER), "granted": _as(admin, GRANTED),
            "anonymous": _as(admin, None)}


@pytest.fixture(scope="module")
def shared_world(callers) -> World:
    """One world for the routes that change nothing."""
    return build_world(callers["admin"], callers["owner"])


def test_every_route_has_an_expectation_here(apps):
    missing = [f"{method} {rule} ({endpoint})" for endpoint, method, rule in routes(apps(**AUTHORIZED))
               if (endpoint, method) not in CASES]
    assert missing == [], "routes the door test does not try: " + "; ".join(missing)


@pytest.fixture(scope="module")
def app_routes(apps) -> list[tuple[str, str, str]]:
    return routes(apps(**AUTHORIZED))


@pytest.mark.slow
def test_each_caller_gets_gravitinos_answer_on_every_route(callers, shared_world, app_routes):
    """All routes in one test (each change gets a world of its own), so that one run reports every
    wrong answer at once."""
    wrong = []
    for endpoint, method, rule in app_routes:
        case = case_of(endpoint, method, rule)
        world = build_world(callers["admin"], callers["owner"]) if case.changes else shared_world
        path = case.path.format(**world.names)
        for caller in CALLERS:
            body = case.body(callers["admin"], world) if case.body else None
            response = send(callers[caller], method, path, body)
            expected = case.expect[caller]
            if response.status_code != expected:
                wrong.append(f"{method} {rule} as {caller}: {response.status_code}, expected {expected}: "
                             f"{response.get_data(as_text=True)[:200]}")
            elif expected == 403:
                assert response.get_json()["type"] == "ForbiddenException", response.get_json()
    assert wrong == [], "\n".join(wrong)


# ---------------------------------------------------------------------- lists show what the caller may see


def test_lists_show_each_caller_only_what_it_may_see(callers, shared_world):
    names = shared_world.names
    member, owner, anonymous = callers["member"], callers["owner"], callers["anonymous"]
    assert names["m"] in [m["name"] for m in ok(member.get("/api/metalakes"))["metalakes"]]
    assert names["m"] not in [m["name"] for m in ok(anonymous.get("/api/metalakes"))["metalakes"]]
    catalogs = f"/api/metalakes/{names['m']}/catalogs"
    assert [i["name"] for i in ok(owner.get(catalogs))["identifiers"]] == [names["c"]]
    assert ok(member.get(catalogs))["identifiers"] == []  # no USE_CATALOG: nothing to see
    tags = f"/api/metalakes/{names['m']}/tags"
    assert names["g"] in ok(owner.get(tags))["names"] and ok(member.get(tags))["names"] == []
    users = f"/api/metalakes/{names['m']}/users"
    assert ok(member.get(users))["names"] == [MEMBER]  # USER::SELF
    assert sorted(ok(owner.get(users))["names"]) == sorted([ADMIN, OWNER, MEMBER, GRANTED, "zed"])
    granted = callers["granted"]  # USE_CATALOG, APPLY_TAG and MANAGE_USERS on the metalake: sees them all
    assert [i["name"] for i in ok(granted.get(catalogs))["identifiers"]] == [names["c"]]
    assert names["g"] in ok(granted.get(tags))["names"]
    assert len(ok(granted.get(users))["names"]) == 5
    roles = f"/api/metalakes/{names['m']}/roles"
    assert ok(member.get(roles))["names"] == [] and sorted(ok(granted.get(roles))["names"]) == ["grants", "reader"]


def test_a_change_refused_at_the_door_leaves_the_store_untouched(callers, shared_world):
    names, member, owner = shared_world.names, callers["member"], callers["owner"]
    table = T.format(**names)
    assert send(member, "DELETE", f"{table}/partitions/dt=p0", None).status_code == 403
    assert ok(owner.get(f"{table}/partitions"))["names"] == ["dt=p0"]
    stats = OBJ.format(**names) + "/statistics"
    assert send(member, "POST", stats, {"names": ["custom-rows"]}).status_code == 403
    assert [s["name"] for s in ok(owner.get(stats))["statistics"]] == ["custom-rows"]
    tag_of_table = OBJ.format(**names) + "/tags"
    assert send(member, "POST", tag_of_table, {"tagsToRemove": [names["g"]]}).status_code == 403
    assert send(member, "DELETE", f"/api/metalakes/{names['m']}/tags/{names['g']}", None).status_code == 403
    assert ok(owner.get(tag_of_table))["names"] == [names["g"]]
