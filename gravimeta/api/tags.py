"""/api/metalakes/{metalake}/tags and /api/metalakes/{metalake}/objects/{type}/{fullName}/tags
(Gravitino's TagOperations and MetadataObjectTagOperations, with the deprecated object routes under
/tags/{type}/{fullName} that TagOperations still serves)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app

from gravimeta import metadata_objects
from gravimeta.access import rules
from gravimeta.access.facts import METALAKE, TAG
from gravimeta.api import dto, payloads
from gravimeta.api.door import listed, needs, visible, visible_objects
from gravimeta.api.errors import operation, operation_names
from gravimeta.api.requests import flag, json_body, user
from gravimeta.api.tag_payloads import TAG_UPDATES, TagCreate, TagsAssociate, metadata_object, tag
from gravimeta.dispatch.tags import TagDispatcher
from gravimeta.entities import Tag

blueprint = Blueprint("tags", __name__, url_prefix="/api/metalakes/<metalake>")


def tags() -> TagDispatcher:
    return current_app.extensions["gravimeta"].dispatchers.tags


@blueprint.get("/tags")
@needs(None, lists=rules.LOAD_TAG)
@operation("tag", "LIST", parent_arg="metalake")
def list_tags(metalake: str) -> Any:
    found = listed(TAG, lambda: tags().list_tags(metalake), lambda t: t.name)
    if flag("details"):
        return dto.ok(tags=[tag(t) for t in found])
    return dto.ok(names=[t.name for t in found])


@blueprint.post("/tags")
@needs(rules.CREATE_TAG, on=METALAKE)
@operation("tag", "CREATE", parent_arg="metalake")
def create_tag(metalake: str) -> Any:
    body = payloads.load(TagCreate, json_body())
    operation_names(body["name"])
    created = tags().create(metalake, Tag(body["name"], body["comment"], body["properties"] or {}), user())
    return dto.ok(tag=tag(created))


@blueprint.get("/tags/<tag_name>")
@needs(rules.LOAD_TAG, on=TAG)
@operation("tag", "GET", "tag_name", parent_arg="metalake")
def get_tag(metalake: str, tag_name: str) -> Any:
    return dto.ok(tag=tag(tags().get(metalake, tag_name)))


@blueprint.put("/tags/<tag_name>")
@needs(rules.ALTER_TAG, on=TAG)
@operation("tag", "ALTER", "tag_name", parent_arg="metalake")
def alter_tag(metalake: str, tag_name: str) -> Any:
    changes = payloads.load_updates(json_body(), TAG_UPDATES)
    return dto.ok(tag=tag(tags().alter(metalake, tag_name, changes, user())))


@blueprint.delete("/tags/<tag_name>")
@needs(rules.ALTER_TAG, on=TAG)
@operation("tag", "DELETE", "tag_name", parent_arg="metalake")
def delete_tag(metalake: str, tag_name: str) -> Any:
    return dto.ok(dropped=tags().delete(metalake, tag_name))


@blueprint.get("/tags/<tag_name>/objects")
@needs(rules.LOAD_TAG, on=TAG, lists=rules.CAN_ACCESS_METADATA)
@operation("tag", "LIST", parent_arg="tag_name")
def list_objects_for_tag(metalake: str, tag_name: str) -> Any:
    found = visible_objects(metalake, tags().objects_of(metalake, tag_name), lambda o: (o.type, o.full_name))
    return dto.ok(metadataObjects=[metadata_object(o) for o in found])


# ---------------------------------------------------------------------- tags of a metadata object


@blueprint.get("/objects/<kind>/<full_name>/tags")
@blueprint.get("/tags/<kind>/<full_name>")  # deprecated in Gravitino, still served
@needs(rules.CAN_ACCESS_METADATA, lists=rules.LOAD_TAG)
@operation("tag", "LIST", parent_arg="full_name")
def list_object_tags(metalake: str, kind: str, full_name: str) -> Any:
    found = visible(TAG, tags().tags_of(metalake, metadata_objects.parse(kind, full_name)), lambda t: t[0].name)
    if flag("details"):
        return dto.ok(tags=[tag(t, inherited) for t, inherited in found])
    return dto.ok(names=[t.name for t, _ in found])


@blueprint.get("/objects/<kind>/<full_name>/tags/<tag_name>")
@blueprint.get("/tags/<kind>/<full_name>/<tag_name>")  # deprecated in Gravitino, still served
@needs(rules.GET_OBJECT_TAG, on=TAG)
@operation("tag", "GET", "tag_name", parent_arg="full_name")
def get_object_tag(metalake: str, kind: str, full_name: str, tag_name: str) -> Any:
    found, inherited = tags().tag_of(metalake, metadata_objects.parse(kind, full_name), tag_name)
    return dto.ok(tag=tag(found, inherited))


@blueprint.post("/objects/<kind>/<full_name>/tags")
@blueprint.post("/tags/<kind>/<full_name>")  # deprecated in Gravitino, still served
@needs(rules.CAN_ACCESS_METADATA_AND_TAG, each_tag=True)
@operation("tag", "ASSOCIATE", parent_arg="full_name")
def associate_tags(metalake: str, kind: str, full_name: str) -> Any:
    body = payloads.load(TagsAssociate, json_body())
    obj = metadata_objects.parse(kind, full_name)
    names = tags().associate(metalake, obj, body["tagsToAdd"] or [], body["tagsToRemove"] or [])
    return dto.ok(names=names)
