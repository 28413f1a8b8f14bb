"""Response shapes every part of the OpenAPI description shares: the lenient base of every answer
and the audit block. In a module of their own because openapi.py imports the attached-object and role
parts, which need them too."""

from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields


class Out(Schema):
    class Meta:
        unknown = INCLUDE  # the clients ignore fields they do not know; so may a future server


class Audit(Out):
    creator = fields.String()
    createTime = fields.String()
    lastModifier = fields.String()
    lastModifiedTime = fields.String()
