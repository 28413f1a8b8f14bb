"""Owners, users and groups through the official client (GravitinoClient.get_owner / set_owner /
add_user / add_group / ...), against a server with gravitino.authorization.enable=true on each database
backend. Each caller authenticates with the client's SimpleAuthProvider (GRAVITINO_USER), except the
users' and groups' own tests, which run as Gravitino's client tests do: without credentials, as
`anonymous`, a service admin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gravitino import Catalog, GravitinoClient, NameIdentifier
from gravitino.api.authorization.owner import Owner
from gravitino.api.metadata_object import MetadataObject
from gravitino.api.metadata_objects import MetadataObjects
from gravitino.api.rel.column import Column
from gravitino.api.rel.table_change import TableChange
from gravitino.api.rel.types.types import Types
from gravitino.exceptions.base import (
    ForbiddenException,
    GroupAlreadyExistsException,
    NoSuchGroupException,
    NoSuchMetadataObjectException,
    NoSuchUserException,
    NotFoundException,
    UnsupportedOperationException,
    UserAlreadyExistsException,
)

from tests.conformance.conftest import ADMIN, new_name


@pytest.fixture
def metalake(authorized_metalake: str) -> str:
    return authorized_metalake


def table_object(catalog: str, schema: str, table: str) -> MetadataObject:
    return MetadataObjects.of([catalog, schema, table], MetadataObject.Type.TABLE)


def test_the_creators_own_what_they_create(connect, metalake):
    admin = connect(ADMIN, metalake)
    admin.add_user("alice")
    admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    catalog_object = MetadataObjects.of(["c"], MetadataObject.Type.CATALOG)
    assert admin.get_owner(catalog_object).name() == ADMIN
    admin.set_owner(catalog_object, "alice", Owner.Type.USER)  # the owner of a catalog may create in it
    connect("alice", metalake).load_catalog("c").as_schemas().create_schema("s", None, {})
    metalake_owner = admin.get_owner(MetadataObjects.of([metalake], MetadataObject.Type.METALAKE))
    assert (metalake_owner.name(), metalake_owner.type()) == (ADMIN, Owner.Type.USER)
    assert admin.get_owner(MetadataObjects.of(["c", "s"], MetadataObject.Type.SCHEMA)).name() == "alice"
    assert sorted(admin.list_user_names()) == [ADMIN, "alice"]


def test_an_owner_can_be_set_to_a_user_or_group_of_the_metalake(connect, metalake):
    admin = connect(ADMIN, metalake)
    admin.add_user("bob")
    admin.add_group("analysts")
    admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    catalog_object = MetadataObjects.of(["c"], MetadataObject.Type.CATALOG)
    admin.set_owner(catalog_object, "bob", Owner.Type.USER)
    assert admin.get_owner(catalog_object).name() == "bob"
    admin.set_owner(catalog_object, "analysts", Owner.Type.GROUP)
    assert admin.get_owner(catalog_object).type() == Owner.Type.GROUP
    with pytest.raises(NotFoundException):
        admin.set_owner(catalog_object, "nobody", Owner.Type.USER)
    with pytest.raises(NoSuchMetadataObjectException):
        admin.get_owner(MetadataObjects.of(["ghost"], MetadataObject.Type.CATALOG))
    with pytest.raises(UserAlreadyExistsException):
        admin.add_user("bob")


def test_only_owners_change_and_without_privileges_others_do_not_even_read(connect, metalake):
    admin = connect(ADMIN, metalake)
    for user in ("alice", "bob"):
        admin.add_user(user)
    catalog = admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    catalog.as_schemas().create_schema("s", None, {})
    catalog.as_table_catalog().create_table(NameIdentifier.of("s", "t"), [Column.of("id", Types.IntegerType.get())])
    admin.set_owner(table_object("c", "s", "t"), "alice", Owner.Type.USER)
    bob = connect("bob", metalake)
    with pytest.raises(ForbiddenException, match="ANY_USE_CATALOG"):
        bob.load_catalog("c")
    with pytest.raises(ForbiddenException):
        bob.disable_catalog("c")
    admin.set_owner(MetadataObjects.of(["c"], MetadataObject.Type.CATALOG), "bob", Owner.Type.USER)
    renamed = bob.load_catalog("c").as_table_catalog().alter_table(NameIdentifier.of("s", "t"),
                                                                   TableChange.rename("t2"))
    assert renamed.name() == "t2"
    assert admin.get_owner(table_object("c", "s", "t2")).name() == "alice"  # the owner followed the rename


def test_a_drop_takes_the_owner_with_it(connect, metalake):
    admin = connect(ADMIN, metalake)
    for user in ("bob", "carol"):
        admin.add_user(user)
    catalog = admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    catalog.as_schemas().create_schema("s", None, {})
    admin.set_owner(MetadataObjects.of(["c", "s"], MetadataObject.Type.SCHEMA), "bob", Owner.Type.USER)
    assert admin.drop_catalog("c", force=True)
    admin.set_owner(MetadataObjects.of([metalake], MetadataObject.Type.METALAKE), "carol", Owner.Type.USER)
    connect("carol", metalake).create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {}) \
        .as_schemas().create_schema("s", None, {})
    assert admin.get_owner(MetadataObjects.of(["c", "s"], MetadataObject.Type.SCHEMA)).name() == "carol"


def test_removing_a_user_leaves_its_objects_without_owner(connect, metalake):
    admin = connect(ADMIN, metalake)
    admin.add_user("dave")
    admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    admin.set_owner(MetadataObjects.of(["c"], MetadataObject.Type.CATALOG), "dave", Owner.Type.USER)
    assert admin.remove_user("dave") is True
    assert admin.get_owner(MetadataObjects.of(["c"], MetadataObject.Type.CATALOG)) is None
    assert admin.remove_user("dave") is False


@pytest.mark.parametrize("kind", [MetadataObject.Type.TAG, MetadataObject.Type.ROLE])
def test_tags_and_roles_are_owned_by_their_creators_until_given_away(connect, metalake, kind):
    admin = connect(ADMIN, metalake)
    admin.add_user("bob")
    name = new_name(kind.value)
    if kind == MetadataObject.Type.TAG:
        admin.create_tag(name, "a tag", {})
    else:
        admin.create_role(name, {}, [])
    delete = {MetadataObject.Type.TAG: "delete_tag", MetadataObject.Type.ROLE: "delete_role"}[kind]
    owned = MetadataObjects.of([name], kind)
    assert admin.get_owner(owned).name() == ADMIN
    bob = connect("bob", metalake)
    with pytest.raises(ForbiddenException):
        getattr(bob, delete)(name)
    admin.set_owner(owned, "bob", Owner.Type.USER)
    owner = bob.get_owner(owned)
    assert (owner.name(), owner.type()) == ("bob", Owner.Type.USER)
    assert getattr(bob, delete)(name) is True
    with pytest.raises(NoSuchMetadataObjectException):
        admin.get_owner(owned)


#: per kind of principal: what adding it twice raises, what reading a missing one raises
PRINCIPAL_ERRORS = {"user": (UserAlreadyExistsException, NoSuchUserException),
                    "group": (GroupAlreadyExistsException, NoSuchGroupException)}


@pytest.mark.parametrize("kind", ["user", "group"])
def test_users_and_groups_are_added_read_listed_and_removed(connect, metalake, kind):
    anonymous = connect(None, metalake)
    add, get, remove = (getattr(anonymous, f"{verb}_{kind}") for verb in ("add", "get", "remove"))
    already, missing = PRINCIPAL_ERRORS[kind]
    first = [ADMIN] if kind == "user" else []  # the metalake's creator is its first user
    added = add("p1")
    assert added.name() == "p1" and added.roles() == [] and added.audit_info().creator() == "anonymous"
    add("p2")
    assert get("p2").name() == "p2"
    listed = {principal.name(): principal for principal in getattr(anonymous, f"list_{kind}s")()}
    assert sorted(listed) == [*first, "p1", "p2"]
    assert listed["p1"].audit_info().create_time() is not None
    assert sorted(getattr(anonymous, f"list_{kind}_names")()) == [*first, "p1", "p2"]
    with pytest.raises(already):
        add("p1")
    with pytest.raises(missing):
        get("ghost")
    assert remove("p1") is True
    with pytest.raises(missing):
        get("p1")
    assert remove("p1") is False
    assert remove("ghost") is False


def test_the_roles_of_groups_are_listed_with_them(connect, metalake):
    anonymous = connect(None, metalake)
    for group in ("engineers", "admins"):
        anonymous.add_group(group)
    anonymous.create_role("builders")
    anonymous.grant_roles_to_group(["builders"], "engineers")
    listed = {group.name(): group.roles() for group in anonymous.list_groups()}
    assert listed == {"engineers": ["builders"], "admins": []}
    assert anonymous.get_group("engineers").roles() == ["builders"]


def test_without_authorization_owners_are_unsupported(uri, metalake_plain):
    client = GravitinoClient(uri=uri, metalake_name=metalake_plain)
    try:
        with pytest.raises(UnsupportedOperationException):
            client.get_owner(MetadataObjects.of([metalake_plain], MetadataObject.Type.METALAKE))
    finally:
        client.close()


@pytest.fixture
def metalake_plain(admin) -> Iterator[str]:
    """A metalake on the suite's usual server (authorization off)."""
    name = new_name("ml")
    admin.create_metalake(name, "plain", {})
    yield name
    admin.drop_metalake(name, force=True)
