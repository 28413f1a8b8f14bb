"""Tags over REST on SQLite, PostgreSQL and MariaDB: the tags of a metalake, their associations with
catalogs, schemas, tables and columns, inherited tags, and how associations follow renames and go
with drops (Gravitino's TagOperations, MetadataObjectTagOperations and TagManager)."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import Api, Ref, bad_request, column, error, fresh, ok
from tests.attached.conftest import orphan_associations


def tags_path(metalake: Ref) -> str:
    return f"{metalake.path}/tags"


def object_path(metalake: Ref, kind: str, full_name: str) -> str:
    return f"{metalake.path}/objects/{kind}/{full_name}/tags"


def full_name(ref: Ref) -> str:
    return ".".join(ref.levels[1:])


def create_tag(api: Api, metalake: Ref, name: str | None = None, **body: Any) -> str:
    name = name or fresh("tag")
    ok(api.post(tags_path(metalake), {"name": name, **body}))
    return name


def associate(api: Api, metalake: Ref, kind: str, name: str, add: list[str] = (), remove: list[str] = ()) -> list[str]:
    body = ok(api.post(object_path(metalake, kind, name), {"tagsToAdd": list(add), "tagsToRemove": list(remove)}))
    return body["names"]


def object_tags(api: Api, metalake: Ref, kind: str, name: str) -> dict[str, bool]:
    """name -> inherited, as the object lists them with details."""
    body = ok(api.get(object_path(metalake, kind, name), query_string={"details": "true"}))
    return {t["name"]: t["inherited"] for t in body["tags"]}


def objects_of(api: Api, metalake: Ref, tag: str) -> list[tuple[str, str]]:
    body = ok(api.get(f"{tags_path(metalake)}/{tag}/objects"))
    return [(o["type"], o["fullName"]) for o in body["metadataObjects"]]


# ---------------------------------------------------------------------- the tags themselves


def test_a_tag_is_created_listed_loaded_altered_and_deleted(api, metalake):
    created = ok(api.post(tags_path(metalake), {"name": "pii", "comment": "personal", "properties": {"level": "3"}}))
    assert created["tag"]["name"] == "pii" and created["tag"]["audit"]["creator"] == "anonymous"
    assert "inherited" not in created["tag"]
    create_tag(api, metalake, "gold")
    assert ok(api.get(tags_path(metalake)))["names"] == ["gold", "pii"]
    listed = ok(api.get(tags_path(metalake), query_string={"details": "true"}))["tags"]
    assert [(t["name"], t["comment"], t["properties"]) for t in listed] == [
        ("gold", None, {}), ("pii", "personal", {"level": "3"})]

    altered = ok(api.put(f"{tags_path(metalake)}/pii", {"updates": [
        {"@type": "rename", "newName": "sensitive"},
        {"@type": "updateComment", "newComment": "handle with care"},
        {"@type": "setProperty", "property": "owner", "value": "dpo"},
        {"@type": "removeProperty", "property": "level"},
    ]}))["tag"]
    assert (altered["name"], altered["comment"], altered["properties"]) == ("sensitive", "handle with care", {"owner": "dpo"})
    assert altered["audit"]["lastModifier"] == "anonymous"
    assert ok(api.get(f"{tags_path(metalake)}/sensitive"))["tag"] == altered
    error(api.get(f"{tags_path(metalake)}/pii"), 404, 1003, "NoSuchTagException", in_message="pii")

    assert ok(api.delete(f"{tags_path(metalake)}/sensitive"))["dropped"] is True
    assert ok(api.delete(f"{tags_path(metalake)}/sensitive"))["dropped"] is False
    assert ok(api.get(tags_path(metalake)))["names"] == ["gold"]


def test_tag_names_are_unique_in_a_metalake_on_create_and_on_rename(api, metalake):
    create_tag(api, metalake, "a")
    create_tag(api, metalake, "b")
    error(api.post(tags_path(metalake), {"name": "a"}), 409, 1004, "TagAlreadyExistsException",
          in_message="Failed to operate tag(s) [a] operation [CREATE] under object")
    error(api.put(f"{tags_path(metalake)}/b", {"updates": [{"@type": "rename", "newName": "a"}]}),
          409, 1004, "TagAlreadyExistsException")
    other = api.create_metalake()
    create_tag(api, other, "a")  # another metalake has its own names


def test_tag_requests_are_checked_as_gravitino_checks_them(api, metalake):
    bad_request(api.post(tags_path(metalake), {"comment": "no name"}), "name")
    bad_request(api.post(tags_path(metalake), {"name": "  "}), "name")
    tag = create_tag(api, metalake)
    bad_request(api.put(f"{tags_path(metalake)}/{tag}", {"updates": [{"@type": "setProperty", "property": "k",
                                                                      "value": " "}]}), "value")
    bad_request(api.put(f"{tags_path(metalake)}/{tag}", {"updates": [{"@type": "addColumn"}]}), "unknown @type")
    error(api.put(f"{tags_path(metalake)}/missing", {"updates": []}), 404, 1003, "NoSuchTagException")
    catalog = api.create_catalog(metalake)
    bad_request(api.post(object_path(metalake, "catalog", catalog.name), {}), "cannot both be null")
    bad_request(api.post(object_path(metalake, "catalog", catalog.name), {"tagsToAdd": [""]}), "blank")
    bad_request(api.get(object_path(metalake, "gadget", catalog.name)), "Unknown metadata object type")
    bad_request(api.get(object_path(metalake, "table", catalog.name)), "the length of names must be 3")
    bad_request(api.get(object_path(metalake, "schema", f"{catalog.name}.*")), "`*`")
    bad_request(api.post(object_path(metalake, "metalake", metalake.name), {"tagsToAdd": [tag]}),
                "unsupported metadata object type METALAKE")


def test_tags_of_a_missing_or_disabled_metalake(api, metalake):
    error(api.get("/api/metalakes/nowhere/tags"), 404, 1003, "NoSuchMetalakeException")
    error(api.post("/api/metalakes/nowhere/tags", {"name": "x"}), 404, 1003, "NoSuchMetalakeException")
    tag = create_tag(api, metalake)
    api.set_in_use(metalake, False)
    error(api.get(tags_path(metalake)), 409, 1009, "MetalakeNotInUseException")
    error(api.post(tags_path(metalake), {"name": "x"}), 409, 1009, "MetalakeNotInUseException")
    error(api.delete(f"{tags_path(metalake)}/{tag}"), 409, 1009, "MetalakeNotInUseException")
    api.set_in_use(metalake, True)
    assert ok(api.get(tags_path(metalake)))["names"] == [tag]


# ---------------------------------------------------------------------- associations


def test_every_kind_of_object_is_tagged_and_untagged(api, metalake, schema):
    table = api.create_table(schema)
    one, two, three = (create_tag(api, metalake) for _ in range(3))
    objects = [("catalog", full_name(schema.parent)), ("schema", full_name(schema)), ("table", full_name(table)),
               ("column", f"{full_name(table)}.id")]
    for kind, name in objects:
        assert associate(api, metalake, kind, name, add=[three, one]) == sorted([one, three])
        # one call adds and removes; a name in both lists is neither added nor removed
        assert associate(api, metalake, kind, name, add=[two, one], remove=[three, one]) == sorted([one, two])
        assert ok(api.get(object_path(metalake, kind, name)))["names"][:2] == sorted([one, two])
        assert associate(api, metalake, kind, name, remove=[one, two]) == []
    assert objects_of(api, metalake, one) == []


def test_unknown_tags_are_ignored_and_a_second_association_is_refused(api, metalake, catalog):
    tag = create_tag(api, metalake)
    assert associate(api, metalake, "catalog", catalog.name, add=[tag, "no_such_tag"]) == [tag]
    message = error(api.post(object_path(metalake, "catalog", catalog.name), {"tagsToAdd": [tag]}),
                    409, 1004, "TagAlreadyAssociatedException")
    assert "already associated" in message
    assert associate(api, metalake, "catalog", catalog.name, remove=["no_such_tag"]) == [tag]


def test_an_object_inherits_the_tags_of_its_parents(api, metalake, schema):
    table = api.create_table(schema)
    on_catalog, on_schema, on_table, on_column = (create_tag(api, metalake, f"t{i}_{fresh('x')}") for i in range(4))
    associate(api, metalake, "catalog", full_name(schema.parent), add=[on_catalog])
    associate(api, metalake, "schema", full_name(schema), add=[on_schema])
    associate(api, metalake, "table", full_name(table), add=[on_table, on_schema])  # also on its parent
    associate(api, metalake, "column", f"{full_name(table)}.name", add=[on_column])

    assert object_tags(api, metalake, "column", f"{full_name(table)}.name") == {
        on_column: False, on_table: True, on_schema: True, on_catalog: True}
    # a tag the object has itself is listed once, as its own
    assert object_tags(api, metalake, "table", full_name(table)) == {on_table: False, on_schema: False, on_catalog: True}
    assert object_tags(api, metalake, "column", f"{full_name(table)}.id") == {on_table: True, on_schema: True,
                                                                              on_catalog: True}
    names = ok(api.get(object_path(metalake, "column", f"{full_name(table)}.name")))["names"]
    # own first, then the nearest parent's (the table has on_table and on_schema), each level by name
    assert names == [on_column, on_schema, on_table, on_catalog]

    got = ok(api.get(f"{object_path(metalake, 'column', full_name(table) + '.name')}/{on_catalog}"))["tag"]
    assert (got["name"], got["inherited"]) == (on_catalog, True)
    got = ok(api.get(f"{object_path(metalake, 'table', full_name(table))}/{on_schema}"))["tag"]
    assert (got["name"], got["inherited"]) == (on_schema, False)
    error(api.get(f"{object_path(metalake, 'schema', full_name(schema))}/{on_table}"), 404, 1003,
          "NoSuchTagException", in_message=f"Tag not found: {on_table}")


def test_a_tag_lists_the_objects_it_is_associated_with(api, metalake, schema):
    table = api.create_table(schema)
    tag = create_tag(api, metalake)
    for kind, name in [("column", f"{full_name(table)}.id"), ("table", full_name(table)),
                       ("schema", full_name(schema)), ("catalog", full_name(schema.parent))]:
        associate(api, metalake, kind, name, add=[tag])
    assert objects_of(api, metalake, tag) == [
        ("catalog", full_name(schema.parent)), ("schema", full_name(schema)), ("table", full_name(table)),
        ("column", f"{full_name(table)}.id")]
    error(api.get(f"{tags_path(metalake)}/missing/objects"), 404, 1003, "NoSuchTagException")


def test_objects_that_do_not_exist_answer_as_gravitino_does(api, metalake, schema):
    tag = create_tag(api, metalake)
    catalog = full_name(schema.parent)
    cases = [
        ("catalog", "no_cat", 404, "NoSuchMetadataObjectException"),
        ("schema", "no_cat.s", 404, "NoSuchCatalogException"),
        ("schema", f"{catalog}.no_schema", 404, "NoSuchMetadataObjectException"),
        ("table", f"{catalog}.no_schema.t", 404, "NoSuchSchemaException"),
        ("table", f"{full_name(schema)}.no_table", 404, "NoSuchMetadataObjectException"),
        ("column", f"{full_name(schema)}.no_table.c", 404, "NoSuchMetadataObjectException"),
        ("fileset", f"{full_name(schema)}.files", 404, "NoSuchMetadataObjectException"),
    ]
    for kind, name, status, type_name in cases:
        error(api.get(object_path(metalake, kind, name)), status, 1003, type_name)
        error(api.post(object_path(metalake, kind, name), {"tagsToAdd": [tag]}), status, 1003, type_name)
    table = api.create_table(schema)
    error(api.post(object_path(metalake, "column", f"{full_name(table)}.no_column"), {"tagsToAdd": [tag]}),
          404, 1003, "NoSuchMetadataObjectException")


def test_a_disabled_catalog_can_be_tagged_but_not_what_it_holds(api, metalake, schema):
    tag = create_tag(api, metalake)
    api.set_in_use(schema.parent, False)
    assert associate(api, metalake, "catalog", full_name(schema.parent), add=[tag]) == [tag]
    error(api.post(object_path(metalake, "schema", full_name(schema)), {"tagsToAdd": [tag]}),
          409, 1009, "CatalogNotInUseException")
    api.set_in_use(schema.parent, True)


def test_the_deprecated_object_routes_still_answer(api, metalake, catalog):
    tag = create_tag(api, metalake)
    assert ok(api.post(f"{tags_path(metalake)}/catalog/{catalog.name}", {"tagsToAdd": [tag]}))["names"] == [tag]
    assert ok(api.get(f"{tags_path(metalake)}/catalog/{catalog.name}"))["names"] == [tag]
    assert ok(api.get(f"{tags_path(metalake)}/catalog/{catalog.name}/{tag}"))["tag"]["inherited"] is False


# ---------------------------------------------------------------------- renames and drops


def test_associations_follow_renames_of_tables_columns_and_catalogs_and_moves(api, metalake, schema):
    table = api.create_table(schema)
    other_schema = api.create_schema(schema.parent)
    on_table, on_column, on_catalog = (create_tag(api, metalake) for _ in range(3))
    associate(api, metalake, "table", full_name(table), add=[on_table])
    associate(api, metalake, "column", f"{full_name(table)}.name", add=[on_column])
    associate(api, metalake, "catalog", full_name(schema.parent), add=[on_catalog])

    api.altered(table, {"@type": "renameColumn", "oldFieldName": ["name"], "newFieldName": "label"},
                {"@type": "addColumn", "fieldName": ["added"], "type": "integer", "position": "first"},
                {"@type": "updateColumnPosition", "fieldName": ["label"], "newPosition": "first"})
    moved = other_schema.child("renamed")
    api.altered(table, {"@type": "rename", "newName": "renamed", "newSchemaName": other_schema.name})
    renamed_catalog = fresh("cat")
    api.altered(schema.parent, {"@type": "rename", "newName": renamed_catalog})
    moved = Ref((metalake.name, renamed_catalog, other_schema.name, "renamed"))

    assert objects_of(api, metalake, on_table) == [("table", full_name(moved))]
    assert objects_of(api, metalake, on_column) == [("column", f"{full_name(moved)}.label")]
    assert objects_of(api, metalake, on_catalog) == [("catalog", renamed_catalog)]
    assert object_tags(api, metalake, "column", f"{full_name(moved)}.label") == {
        on_column: False, on_table: True, on_catalog: True}


def test_a_new_object_under_an_old_name_does_not_inherit_its_tags(api, metalake, schema, sql):
    table = api.create_table(schema, columns=[column("id"), column("name")])
    tag = create_tag(api, metalake)
    associate(api, metalake, "table", full_name(table), add=[tag])
    associate(api, metalake, "column", f"{full_name(table)}.name", add=[tag])
    api.altered(table, {"@type": "rename", "newName": "elsewhere"})
    api.create_table(schema, name=table.name, columns=[column("id"), column("name")])
    assert object_tags(api, metalake, "table", full_name(table)) == {}
    assert object_tags(api, metalake, "column", f"{full_name(table)}.name") == {}
    assert objects_of(api, metalake, tag) == [("table", f"{full_name(schema)}.elsewhere"),
                                              ("column", f"{full_name(schema)}.elsewhere.name")]
    # a column deleted and added again under the same name is a new column too
    elsewhere = schema.child("elsewhere")
    api.altered(elsewhere, {"@type": "deleteColumn", "fieldName": ["name"]},
                {"@type": "addColumn", "fieldName": ["name"], "type": "string", "position": "default"})
    assert objects_of(api, metalake, tag) == [("table", full_name(elsewhere))]
    assert orphan_associations(sql) == []


def test_associations_go_with_drops_and_cascades(api, metalake, sql):
    tag = create_tag(api, metalake)
    catalog = api.create_catalog(metalake)
    kept_schema, dropped_schema = api.create_schema(catalog), api.create_schema(catalog)
    dropped_table, kept_table = api.create_table(kept_schema), api.create_table(kept_schema)
    cascaded = api.create_table(dropped_schema)
    for kind, name in [("table", full_name(dropped_table)), ("column", f"{full_name(dropped_table)}.id"),
                       ("column", f"{full_name(kept_table)}.name"), ("schema", full_name(dropped_schema)),
                       ("table", full_name(cascaded)), ("column", f"{full_name(cascaded)}.id"),
                       ("catalog", catalog.name)]:
        associate(api, metalake, kind, name, add=[tag])

    api.altered(kept_table, {"@type": "deleteColumn", "fieldName": ["name"]})
    ok(api.delete(dropped_table.path))
    ok(api.delete(dropped_schema.path, query_string={"cascade": "true"}))
    assert objects_of(api, metalake, tag) == [("catalog", catalog.name)]
    ok(api.delete(catalog.path, query_string={"force": "true"}))
    assert objects_of(api, metalake, tag) == []
    assert orphan_associations(sql) == []


def test_deleting_a_tag_or_its_metalake_removes_its_associations(api, metalake, catalog, sql):
    tag, kept = create_tag(api, metalake), create_tag(api, metalake)
    associate(api, metalake, "catalog", catalog.name, add=[tag, kept])
    ok(api.delete(f"{tags_path(metalake)}/{tag}"))
    assert ok(api.get(object_path(metalake, "catalog", catalog.name)))["names"] == [kept]
    create_tag(api, metalake, tag)  # a new tag of the same name is not associated with anything
    assert objects_of(api, metalake, tag) == []

    tags_before = sql("SELECT count(*) FROM gm_tag")[0][0]
    assert ok(api.delete(metalake.path, query_string={"force": "true"}))["dropped"] is True  # foreign keys allow it
    assert sql("SELECT count(*) FROM gm_tag")[0][0] == tags_before - 2
    recreated = api.create_metalake(metalake.name)
    assert ok(api.get(tags_path(recreated)))["names"] == []
    assert orphan_associations(sql) == []


def test_tags_and_associations_follow_a_renamed_metalake(api, metalake):
    catalog = api.create_catalog(metalake)
    tag = create_tag(api, metalake)
    associate(api, metalake, "catalog", catalog.name, add=[tag])
    renamed = Ref((fresh("lake"),))
    api.altered(metalake, {"@type": "rename", "newName": renamed.name})
    assert ok(api.get(tags_path(renamed)))["names"] == [tag]
    assert objects_of(api, renamed, tag) == [("catalog", catalog.name)]
    error(api.get(tags_path(metalake)), 404, 1003, "NoSuchMetalakeException")
