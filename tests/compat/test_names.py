"""New names follow Gravitino's rules (gravimeta/names.py): metalake ^\\w{1,64}$, catalog
^\\w[\\w-]{0,63}$, schema/table/column ^\\w[\\w/=-]{0,63}$ (no '/' in schema and table names here: they
are URL segments), ASCII word characters, reserved `system` and `*`. Rows stored before the rules keep
working: load, list, alter, drop and a rename to a legal name."""

from __future__ import annotations

import pytest

from gravimeta.entities import Catalog, Column, Metalake, Schema, Table
from tests.api.helpers import Ref, bad_request, column, fresh, ok


@pytest.fixture
def schema(api):
    return api.create_schema(api.create_catalog(api.create_metalake()))


def suffix() -> str:
    return fresh("n").removeprefix("n_")


LEGAL = {
    "metalake": ["m_" + "x" * 62, "_", "0day", "UPPER_lower_9"],
    "catalog": ["c-1", "c--", "_-_", "c" * 64],
    "schema": ["s=1", "s-=x", "_"],
    "table": ["t=1", "dt=2026-01-01", "t" * 64],
    "column": ["p=1/q=2", "a/b", "c-d="],
}
ILLEGAL = {
    "metalake": ["a-b", "a=b", "é", "a b", "m" * 65, "", "system"],
    "catalog": ["-c", "c=1", "c/d", "ü", "c" * 65, "*", "system", "SYSTEM"],
    "schema": ["-s", "s/t", "s.t", "s t", "名前", "*", "s" * 65],
    "table": ["=t", "t/u", "t;", "t" * 65, "*"],
    "column": ["/a", "a.b", "a b", "a" * 65, "*", "ünï"],
}


def create(api, schema: Ref, kind: str, name: str):
    catalog, metalake = schema.parent, schema.parent.parent
    return {
        "metalake": lambda: api.post("/api/metalakes", {"name": name}),
        "catalog": lambda: api.post(metalake.children(), {"name": name, "type": "relational", "provider": "memory"}),
        "schema": lambda: api.post(catalog.children(), {"name": name}),
        "table": lambda: api.post(schema.children(), {"name": name, "columns": [column("id")]}),
        "column": lambda: api.post(schema.children(), {"name": fresh("t"), "columns": [column(name)]}),
    }[kind]()


@pytest.mark.parametrize("kind", list(LEGAL))
def test_legal_names_are_accepted_at_every_level(api, schema, kind):
    for name in LEGAL[kind]:  # each under the test's own metalake, catalog and schema (metalakes: one database)
        ok(create(api, schema, kind, name))


@pytest.mark.parametrize("kind", list(ILLEGAL))
def test_illegal_and_reserved_names_are_refused_at_every_level(api, schema, kind):
    for name in ILLEGAL[kind]:
        message = bad_request(create(api, schema, kind, name))
        assert "reserved" in message or "illegal" in message, message


def test_rename_targets_follow_the_rules(api, schema):
    table = api.create_table(schema)
    catalog, metalake = schema.parent, schema.parent.parent
    bad_request(api.alter(metalake, {"@type": "rename", "newName": "has-dash"}), in_message="illegal")
    bad_request(api.alter(catalog, {"@type": "rename", "newName": "system"}), in_message="reserved")
    bad_request(api.alter(table, {"@type": "rename", "newName": "t.1"}), in_message="illegal")
    bad_request(api.alter(table, {"@type": "renameColumn", "oldFieldName": ["id"], "newFieldName": "x y"}),
                in_message="illegal")
    bad_request(api.alter(table, {"@type": "addColumn", "fieldName": ["*"], "type": "integer"}), in_message="reserved")
    ok(api.alter(table, {"@type": "renameColumn", "oldFieldName": ["id"], "newFieldName": "k=v/w"}))


def test_rows_stored_before_the_rules_load_alter_rename_and_drop(api, store):
    """Names an older gravimeta accepted: spaces, dots, non-ASCII letters, 128 characters."""
    m, c, s, t = f"lake {suffix()}", f"cat.{suffix()}", f"sché ma {suffix()}", "t" * 120 + suffix()[:8]
    store.create_metalake(Metalake(m, "old", {}), "old-server")
    store.create_catalog(Catalog(m, c, "relational", "memory", "old", {}), "old-server")
    store.create_schema(m, c, Schema(s), "old-server")
    store.create_table(m, c, s, Table(t, [Column("a column", "integer"), Column("id", "integer")]), "old-server")
    table = Ref((m, c, s, t))
    assert api.load(table)["name"] == t
    assert api.names(table.parent.children()) == [t]
    ok(api.alter(table, {"@type": "updateColumnComment", "fieldName": ["a column"], "newComment": "kept"}))
    ok(api.alter(table.parent, {"@type": "setProperty", "property": "k", "value": "v"}))
    legal_table = f"t_{suffix()}"
    ok(api.alter(table, {"@type": "rename", "newName": legal_table}))
    legal_catalog, legal_metalake = f"c_{suffix()}", f"m_{suffix()}"
    ok(api.alter(table.parent.parent, {"@type": "rename", "newName": legal_catalog}))
    ok(api.alter(Ref((m,)), {"@type": "rename", "newName": legal_metalake}))
    moved = Ref((legal_metalake, legal_catalog, s, legal_table))
    first = api.load(moved)["columns"][0]
    assert (first["name"], first["comment"]) == ("a column", "kept")
    assert ok(api.delete(moved.parent.path + "?cascade=true"))["dropped"] is True
    assert ok(api.delete(f"/api/metalakes/{legal_metalake}?force=true"))["dropped"] is True


def test_an_old_metalake_is_dropped_under_its_own_name(api, store):
    name = f"old lake {suffix()}"
    store.create_metalake(Metalake(name), "old-server")
    assert ok(api.delete(f"/api/metalakes/{name}?force=true"))["dropped"] is True
    assert api.get(f"/api/metalakes/{name}").status_code == 404
