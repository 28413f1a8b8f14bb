"""Tag request bodies (Gravitino's TagCreateRequest, TagUpdatesRequest, TagsAssociateRequest) and the
shapes of tag responses (TagDTO, MetadataObjectDTO)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, validate, validates_schema

from gravimeta.api import payloads
from gravimeta.api.dto import audit
from gravimeta.entities import Tag
from gravimeta.metadata_objects import MetadataObject

_NOT_BLANK = validate.Regexp(r"\s*\S", error="must not be blank")


class TagCreate(payloads.Base):
    name = payloads.Name(required=True)
    comment = fields.String(allow_none=True, load_default=None)
    properties = fields.Dict(keys=fields.String(validate=validate.Length(min=1)), values=fields.String(),
                             load_default=dict, allow_none=True)


class TagRename(payloads.Base):
    newName = payloads.Name(required=True)  # Gravitino checks no pattern on tag names


#: TagUpdateRequest's kinds and their checks (setProperty's value must not be blank, as for metalakes)
TAG_UPDATES = {
    "rename": TagRename,
    "updateComment": payloads.UpdateComment,
    "setProperty": payloads.SetProperty,
    "removeProperty": payloads.RemoveProperty,
}


def _tag_names(**kwargs: Any) -> fields.List:
    return fields.List(fields.String(validate=_NOT_BLANK), allow_none=True, load_default=None, **kwargs)


class TagsAssociate(payloads.Base):
    tagsToAdd = _tag_names()
    tagsToRemove = _tag_names()

    @validates_schema
    def _one_of_them(self, data: dict[str, Any], **_: Any) -> None:
        if data.get("tagsToAdd") is None and data.get("tagsToRemove") is None:
            raise ValidationError("tagsToAdd and tagsToRemove cannot both be null")


def tag(t: Tag, inherited: bool | None = None) -> dict[str, Any]:
    """TagDTO; `inherited` only when the tag is listed for an object (Gravitino omits it otherwise)."""
    out: dict[str, Any] = {"name": t.name, "comment": t.comment, "properties": dict(t.properties),
                           "audit": audit(t.audit)}
    if inherited is not None:
        out["inherited"] = inherited
    return out


def metadata_object(o: MetadataObject) -> dict[str, Any]:
    """MetadataObjectDTO: its full name and its kind (lowercase, as Gravitino's mapper writes enums)."""
    return {"fullName": o.full_name, "type": o.type}
