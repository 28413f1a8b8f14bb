"""The OpenAPI entries of partitions, statistics and tags (merged into gravimeta/api/openapi.py): their
response shapes (tag_payloads, statistic_payloads, partitions.partition_dto), request bodies and
operations."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from gravimeta.api import statistic_payloads, tag_payloads
from gravimeta.api.openapi_shapes import Audit, Out

# ------------------------------------------------------------------ response shapes


class Tag(Out):
    name = fields.String(required=True)
    comment = fields.String(allow_none=True)
    properties = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    audit = fields.Nested(Audit, required=True)
    inherited = fields.Boolean(metadata={"description": "only when listed for an object: whether a parent has it"})


class Partition(Out):
    type = fields.String(required=True, validate=validate.OneOf(["identity", "list", "range"]))
    name = fields.String(required=True)
    fieldNames = fields.List(fields.List(fields.String()), metadata={"description": "identity"})
    values = fields.List(fields.Dict(), metadata={"description": "identity: literals"})
    lists = fields.List(fields.List(fields.Dict()), metadata={"description": "list: lists of literals"})
    upper = fields.Dict(metadata={"description": "range: a literal"})
    lower = fields.Dict(metadata={"description": "range: a literal"})
    properties = fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class Statistic(Out):
    name = fields.String(required=True)
    value = fields.Raw(required=True, metadata={"description": "boolean, number, string, list or object"})
    reserved = fields.Boolean(required=True)
    modifiable = fields.Boolean(required=True)
    audit = fields.Nested(Audit, required=True)


class MetadataObject(Out):
    fullName = fields.String(required=True)
    type = fields.String(required=True)


class _Base(Out):
    code = fields.Integer(required=True, metadata={"description": "0 on success"})


class TagResponse(_Base):
    tag = fields.Nested(Tag, required=True)


class TagListResponse(_Base):
    """names without ?details=true, tags with it."""

    names = fields.List(fields.String())
    tags = fields.List(fields.Nested(Tag))


class NameListResponse(_Base):
    names = fields.List(fields.String(), required=True)


class MetadataObjectListResponse(_Base):
    metadataObjects = fields.List(fields.Nested(MetadataObject), required=True)


class PartitionListResponse(_Base):
    """names without ?details=true, partitions with it (and after an add)."""

    names = fields.List(fields.String())
    partitions = fields.List(fields.Nested(Partition))


class PartitionResponse(_Base):
    partition = fields.Nested(Partition, required=True)


class StatisticListResponse(_Base):
    statistics = fields.List(fields.Nested(Statistic), required=True)


class _PartitionStatistics(Out):
    partitionName = fields.String(required=True)
    statistics = fields.List(fields.Nested(Statistic), required=True)


class PartitionStatisticsListResponse(_Base):
    partitionStatistics = fields.List(fields.Nested(_PartitionStatistics), required=True)


RESPONSES: list[type[Schema]] = [
    TagResponse, TagListResponse, NameListResponse, MetadataObjectListResponse, PartitionListResponse,
    PartitionResponse, StatisticListResponse, PartitionStatisticsListResponse,
]

# ------------------------------------------------------------------ request bodies


class _PartitionIn(Schema):
    type = fields.String(required=True, validate=validate.OneOf(["identity", "list", "range"]))
    name = fields.String(allow_none=True, validate=validate.Length(max=512))
    fieldNames = fields.List(fields.List(fields.String(validate=validate.Length(min=1)), validate=validate.Length(min=1)))
    values = fields.List(fields.Dict())
    lists = fields.List(fields.List(fields.Dict()))
    upper = fields.Dict()
    lower = fields.Dict()
    properties = fields.Dict(keys=fields.String(), values=fields.String(), allow_none=True)


class AddPartitions(Schema):
    """Gravitino's AddPartitionsRequest: exactly one partition."""

    partitions = fields.List(fields.Nested(_PartitionIn), required=True, validate=validate.Length(equal=1))


REQUESTS: dict[str, type[Schema]] = {
    "TagCreate": tag_payloads.TagCreate,
    "TagsAssociate": tag_payloads.TagsAssociate,
    "StatisticsUpdate": statistic_payloads.StatisticsUpdate,
    "StatisticsDrop": statistic_payloads.StatisticsDrop,
    "PartitionStatisticsUpdate": statistic_payloads.PartitionStatisticsUpdate,
    "PartitionStatisticsDrop": statistic_payloads.PartitionStatisticsDrop,
    "AddPartitions": AddPartitions,
}
UPDATES: dict[str, tuple[Any, int]] = {"Tag": (tag_payloads.TAG_UPDATES, 0)}

#: query parameters of these routes: name -> (JSON type, description)
QUERY = {
    "from": ("string", "partition statistics from this partition name (default: from the first)"),
    "to": ("string", "partition statistics up to this partition name (default: to the last)"),
    "fromInclusive": ("boolean", "include the `from` partition (default true)"),
    "toInclusive": ("boolean", "include the `to` partition (default false)"),
    "limit": ("integer", "gravimeta's paging: at most this many statistics (partition statistics: partitions), 1 to 1000; "
                         "default all (bounded by the per-table limits)"),
    "offset": ("integer", "gravimeta's paging: skip this many first (default 0)"),
}


def operations(op: Any) -> dict[str, Any]:
    """The operations, built with openapi.Op (passed in, to keep the import one way)."""
    return {
        "partitions.list_partitions": op("List a table's partition names, or partitions with ?details=true",
                                         "PartitionListResponse", query=("details",)),
        "partitions.add_partitions": op("Add one partition (a structural change: claims the table)",
                                        "PartitionListResponse", "AddPartitions"),
        "partitions.get_partition": op("Load a partition (its name may contain '/')", "PartitionResponse"),
        "partitions.drop_partition": op("Drop a partition (Hive: every partition a partial name matches)",
                                        "DropResponse", query=("purge",)),
        "statistics.list_statistics": op("List a table's statistics", "StatisticListResponse",
                                         query=("limit", "offset")),
        "statistics.update_statistics": op("Set statistics of a table (names start with custom-)", "BaseResponse",
                                           "StatisticsUpdate"),
        "statistics.drop_statistics": op("Drop statistics of a table", "DropResponse", "StatisticsDrop"),
        "statistics.list_partition_statistics": op("List the statistics of a table's partitions by name range",
                                                   "PartitionStatisticsListResponse",
                                                   query=("from", "to", "fromInclusive", "toInclusive", "limit",
                                                          "offset")),
        "statistics.update_partition_statistics": op("Set statistics of partitions", "BaseResponse",
                                                     "PartitionStatisticsUpdate"),
        "statistics.drop_partition_statistics": op("Drop statistics of partitions", "DropResponse",
                                                   "PartitionStatisticsDrop"),
        "tags.list_tags": op("List a metalake's tag names, or tags with ?details=true", "TagListResponse",
                             query=("details",)),
        "tags.create_tag": op("Create a tag", "TagResponse", "TagCreate"),
        "tags.get_tag": op("Load a tag", "TagResponse"),
        "tags.alter_tag": op("Alter a tag", "TagResponse", "TagUpdatesRequest"),
        "tags.delete_tag": op("Delete a tag and its associations", "DropResponse"),
        "tags.list_objects_for_tag": op("List the objects a tag is associated with", "MetadataObjectListResponse"),
        "tags.list_object_tags": op("List an object's tags, its parents' included (inherited)", "TagListResponse",
                                    query=("details",)),
        "tags.get_object_tag": op("Load a tag of an object (or of its nearest parent that has it)", "TagResponse"),
        "tags.associate_tags": op("Add and remove tags of an object; returns the object's own tags",
                                  "NameListResponse", "TagsAssociate"),
    }
