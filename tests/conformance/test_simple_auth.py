"""Simple authentication through the official client's SimpleAuthProvider on a server with the access
settings of Gravitino's shipped gravitino.conf (authorization off, `anonymous` its service admin): a
named user may create a metalake (Gravitino's PassThroughAuthorizer lets anyone), and the user the
client names is the creator of everything it creates; a client without credentials is `anonymous`."""

from __future__ import annotations

import pytest
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient, NameIdentifier
from gravitino.api.rel.column import Column
from gravitino.api.rel.types.types import Types
from gravitino.auth.simple_auth_provider import SimpleAuthProvider

from tests.conformance.conftest import new_name


@pytest.mark.parametrize("user", ["test", None])
def test_the_named_user_creates_a_metalake_and_is_the_creator_of_everything_below(uri, monkeypatch, user):
    kwargs = {}
    if user is not None:
        monkeypatch.setenv("GRAVITINO_USER", user)
        kwargs["auth_data_provider"] = SimpleAuthProvider()
    creator = user or "anonymous"
    admin = GravitinoAdminClient(uri=uri, **kwargs)
    name = new_name("ml")
    admin.create_metalake(name, "", {})
    client = GravitinoClient(uri=uri, metalake_name=name, **kwargs)
    try:
        catalog = client.create_catalog("c", Catalog.Type.RELATIONAL, "memory", "", {})
        catalog.as_schemas().create_schema("s", "", {})
        catalog.as_table_catalog().create_table(NameIdentifier.of("s", "t"), [Column.of("id", Types.IntegerType.get())])
        loaded = client.load_catalog("c")
        creators = [
            admin.load_metalake(name).audit_info().creator(),
            loaded.audit_info().creator(),
            loaded.as_schemas().load_schema("s").audit_info().creator(),
            loaded.as_table_catalog().load_table(NameIdentifier.of("s", "t")).audit_info().creator(),
        ]
        assert creators == [creator] * 4
    finally:
        admin.drop_metalake(name, force=True)
        client.close()
        admin.close()
