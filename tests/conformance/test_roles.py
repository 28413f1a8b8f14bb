"""Roles and privileges through the official client (GravitinoClient.create_role / get_role /
grant_roles_to_user / grant_privileges_to_role / ...), against a server with
gravitino.authorization.enable=true on each database backend; every answer is parsed by the client's
own DTOs and error handlers, and what a role grants is seen on the next call."""

from __future__ import annotations

import pytest
from gravitino import Catalog
from gravitino.api.authorization.privileges import Privileges
from gravitino.api.authorization.securable_objects import SecurableObjects
from gravitino.exceptions.base import (
    ForbiddenException,
    IllegalPrivilegeException,
    IllegalRoleException,
    NoSuchRoleException,
    NoSuchUserException,
    RoleAlreadyExistsException,
)

from tests.conformance.conftest import ADMIN


@pytest.fixture
def metalake(authorized_metalake: str) -> str:
    return authorized_metalake


def names_of(role) -> list[tuple[str, list[str]]]:
    """(full name, sorted privilege names) per securable object (the client may send them in any order)."""
    return [(o.full_name(), sorted(p.name().name for p in o.privileges())) for o in role.securable_objects()]


def test_roles_are_created_read_listed_and_deleted(connect, metalake):
    admin = connect(ADMIN, metalake)
    objects = [SecurableObjects.of_metalake(metalake, [Privileges.allow("USE_CATALOG"),
                                                       Privileges.deny("CREATE_CATALOG")])]
    created = admin.create_role("analysts", properties={"k": "v"}, securable_objects=objects)
    assert created.name() == "analysts" and created.properties() == {"k": "v"}
    loaded = admin.get_role("analysts")
    assert names_of(loaded) == [(metalake, ["CREATE_CATALOG", "USE_CATALOG"])]
    conditions = {p.name().name: p.condition().name for p in loaded.securable_objects()[0].privileges()}
    assert conditions == {"USE_CATALOG": "ALLOW", "CREATE_CATALOG": "DENY"}
    admin.create_role("empty")
    assert sorted(admin.list_role_names()) == ["analysts", "empty"]
    with pytest.raises(RoleAlreadyExistsException):
        admin.create_role("empty")
    assert admin.delete_role("empty") is True
    assert admin.delete_role("empty") is False
    with pytest.raises(NoSuchRoleException):
        admin.get_role("empty")


def test_roles_are_granted_to_users_and_groups_and_privileges_to_roles(connect, metalake):
    admin = connect(ADMIN, metalake)
    admin.create_role("r")
    admin.add_user("alice")
    admin.add_group("crew")
    assert admin.grant_roles_to_user(["r"], "alice").roles() == ["r"]
    assert admin.get_user("alice").roles() == ["r"]
    assert admin.revoke_roles_from_user(["r"], "alice").roles() == []
    assert admin.grant_roles_to_group(["r"], "crew").roles() == ["r"]
    assert admin.revoke_roles_from_group(["r"], "crew").roles() == []
    with pytest.raises(IllegalRoleException):
        admin.grant_roles_to_user(["ghost"], "alice")
    with pytest.raises(NoSuchUserException):
        admin.grant_roles_to_user(["r"], "nobody")
    on_metalake = SecurableObjects.of_metalake(metalake, [])
    granted = admin.grant_privileges_to_role("r", on_metalake, [Privileges.allow("USE_CATALOG")])
    assert names_of(granted) == [(metalake, ["USE_CATALOG"])]
    with pytest.raises(IllegalPrivilegeException):
        admin.grant_privileges_to_role("r", on_metalake, [Privileges.deny("USE_CATALOG")])
    revoked = admin.revoke_privileges_from_role("r", on_metalake, [Privileges.allow("USE_CATALOG")])
    assert revoked.securable_objects() == []


def test_a_privilege_granted_through_a_role_is_used_at_once_and_gone_with_its_revoke(connect, metalake):
    admin = connect(ADMIN, metalake)
    admin.create_catalog("c", Catalog.Type.RELATIONAL, "memory", None, {})
    admin.add_user("bob")
    admin.create_role("readers", securable_objects=[
        SecurableObjects.of_catalog("c", [Privileges.allow("USE_CATALOG")])])
    bob = connect("bob", metalake)
    with pytest.raises(ForbiddenException):
        bob.load_catalog("c")
    admin.grant_roles_to_user(["readers"], "bob")
    assert bob.load_catalog("c").name() == "c"
    assert bob.list_catalogs() == ["c"]
    admin.revoke_roles_from_user(["readers"], "bob")
    with pytest.raises(ForbiddenException):
        bob.load_catalog("c")


def test_privileges_are_granted_and_revoked_with_the_object_that_names_them(connect, metalake):
    """As Gravitino's own client test does: `anonymous` (a service admin, no credentials) passes the same
    privileges in the securable object and in the call; a group's roles read back through get_group."""
    anonymous = connect(None, metalake)
    anonymous.create_role("priv_role")
    privileges = [Privileges.allow("USE_CATALOG")]
    on_metalake = SecurableObjects.of_metalake(metalake, privileges)
    granted = anonymous.grant_privileges_to_role("priv_role", on_metalake, privileges)
    assert names_of(granted) == [(metalake, ["USE_CATALOG"])]
    assert names_of(anonymous.get_role("priv_role")) == [(metalake, ["USE_CATALOG"])]
    assert anonymous.revoke_privileges_from_role("priv_role", on_metalake, privileges).securable_objects() == []
    anonymous.add_group("engineers")
    assert anonymous.grant_roles_to_group(["priv_role"], "engineers").roles() == ["priv_role"]
    assert anonymous.get_group("engineers").roles() == ["priv_role"]
    assert anonymous.revoke_roles_from_group(["priv_role"], "engineers").roles() == []
    assert anonymous.get_group("engineers").roles() == []
