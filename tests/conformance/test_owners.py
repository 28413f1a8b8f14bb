"""Owners, users and groups through the official client (GravitinoClient.get_owner / set_owner /
add_user / ...), against a server with gravitino.authorization.enable=true on each database backend.
Each caller authenticates with the client's SimpleAuthProvider (GRAVITINO_USER)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient, NameIdentifier
from gravitino.api.authorization.owner import Owner
from gravitino.api.metadata_object import MetadataObject
from gravitino.api.metadata_objects import MetadataObjects
from gravitino.api.rel.column import Column
from gravitino.api.rel.table_change import TableChange
from gravitino.api.rel.types.types import Types
from gravitino.auth.simple_auth_provider import SimpleAuthProvider
from gravitino.exceptions.base import (
    ForbiddenException,
    NoSuchMetadataObjectException,
    NotFoundException,
    UnsupportedOperationException,
    UserAlreadyExistsException,
)

from tests.conformance.conftest import new_name
from tests.conftest import require_backend
from tests.support.databases import BACKENDS, fresh_database
from tests.support.servers import ServerProcess

ADMIN = "admin"


@pytest.fixture(scope="module", params=BACKENDS)
def authorized_uri(request, tmp_path_factory) -> Iterator[str]:
    """A `gravimeta serve` with authorization on (service admin `admin`) on a fresh database."""
    require_backend(request.param)
    tmp = tmp_path_factory.mktemp(f"owners-{request.param}")
    with fresh_database(request.param, tmp) as url:
        env = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": ADMIN,
               "GRAVIMETA_SQLITE_CATALOG_ROOT": str(tmp / "sqlite-catalogs")}
        with ServerProcess(url, workers=2, log_path=tmp / "server.log", env=env) as process:
            yield process.url


@pytest.fixture
def connect(authorized_uri, monkeypatch) -> Iterator:
    """connect(user, metalake=None): an admin client (no metalake) or a metalake client acting as `user`."""
    opened: list = []

    def open_as(user: str, metalake: str | None = None):
        monkeypatch.setenv("GRAVITINO_USER", user)
        if metalake is None:
            client = GravitinoAdminClient(uri=authorized_uri, auth_data_provider=SimpleAuthProvider())
        else:
            client = GravitinoClient(uri=authorized_uri, metalake_name=metalake, auth_data_provider=SimpleAuthProvider())
        opened.append(client)
        return client

    yield open_as
    for client in opened:
        client.close()


@pytest.fixture
def metalake(connect) -> Iterator[str]:
    name = new_name("ml")
    admin = connect(ADMIN)
    admin.create_metalake(name, "owners", {})
    yield name
    admin.drop_metalake(name, force=True)


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
