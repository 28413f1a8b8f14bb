"""Marshmallow schemas for every request body. Loading returns plain dicts in wire form; any
problem becomes IllegalArgument (HTTP 400, code 1001) with a message naming the field."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from marshmallow import (
    EXCLUDE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates,
    validates_schema,
)

from gravimeta import names, shape_limits
from gravimeta.api import limits
from gravimeta.errors import IllegalArgument
from gravimeta.partitioning import normalize_partitioning
from gravimeta.types import TypeError_, normalize_type, validate_expression

NAME_MAX = 128
_BAD_NAME = re.compile(r"[/\x00-\x1f\x7f]")


def validate_name(value: str, what: str = "name") -> str:
    """A name that refers to something that may exist already (rows stored before Gravitino's name rules
    included): not blank, at most 128 characters, no '/' (it cannot be addressed in a URL) and no
    control characters. New names use NewName."""
    if not isinstance(value, str) or not value.strip():
        raise IllegalArgument(f"{what} must not be blank")
    if len(value) > NAME_MAX:
        raise IllegalArgument(f"{what} is {len(value)} characters long; the limit is {NAME_MAX}")
    if _BAD_NAME.search(value):
        raise IllegalArgument(f"{what} {value!r} contains '/' or a control character")
    return value


class Name(fields.String):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return validate_name(text)
        except IllegalArgument as exc:
            raise ValidationError(exc.message) from None


class NewName(fields.String):
    """The name a request gives to something new (a create, a rename target, an added column):
    Gravitino's rules for its kind (gravimeta/names.py). Names that are references to existing
    entities use Name, so rows named before these rules stay reachable."""

    def __init__(self, kind: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.kind = kind

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return names.CHECKS[self.kind](text)
        except IllegalArgument as exc:
            raise ValidationError(exc.message) from None


class TypeField(fields.Field):
    """A Gravitino type JSON, normalised."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return normalize_type(value, attr or "type")
        except TypeError_ as exc:
            raise ValidationError(str(exc)) from None


class ExpressionField(fields.Field):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return validate_expression(value, attr or "expression")
        except TypeError_ as exc:
            raise ValidationError(str(exc)) from None


class PositionField(fields.Field):
    """"first", "default" or {"after": "col"}."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, str) and value.lower() in ("first", "default"):
            return value.lower()
        if isinstance(value, dict) and isinstance(value.get("after"), str) and value["after"]:
            return {"after": value["after"]}
        raise ValidationError('a position is "first", "default" or {"after": "<column>"}')


def _properties() -> fields.Dict:
    return fields.Dict(keys=fields.String(validate=validate.Length(min=1)), values=fields.String(), load_default=dict, allow_none=True)


def _field_path(**kwargs: Any) -> fields.List:
    return fields.List(fields.String(validate=validate.Length(min=1)),
                       validate=_length(shape_limits.FIELD_PATH, "names in a field path", 1), **kwargs)


class _length(validate.Length):  # noqa: N801 - used like marshmallow's validate.Length
    """A list length bound (gravimeta/shape_limits.py) whose message names the limit; a Length, so the
    OpenAPI document shows it as minItems/maxItems."""

    def __init__(self, limit: int, what: str, minimum: int | None = None):
        super().__init__(min=minimum, max=limit)
        self.limit, self.what, self.minimum = limit, what, minimum

    def __call__(self, value: Any) -> Any:
        if self.minimum is not None and len(value) < self.minimum:
            raise ValidationError(f"Shorter than minimum length {self.minimum}.")
        if len(value) > self.limit:
            raise ValidationError(f"{len(value)} {self.what}; the limit is {self.limit}")
        return value


class Base(Schema):
    class Meta:
        unknown = EXCLUDE  # like Jackson's ignoreUnknown: extra keys are ignored


# Metalakes report their enabled state as the `in-use` property; it is changed only with PATCH
# {"inUse": ...}. Setting it as a property would be silently overridden, so it is rejected. (Catalogs
# refuse it through their provider's reserved properties: connectors/properties.py.)
RESERVED_PROPERTIES = ("in-use", "metalake-in-use")


def _not_reserved(key: str) -> None:
    if key in RESERVED_PROPERTIES:
        raise ValidationError(f"property {key} is reserved; enable or disable with PATCH {{\"inUse\": ...}}")


def _user_properties() -> fields.Dict:
    """Properties of a metalake or catalog: no reserved keys."""
    return fields.Dict(
        keys=fields.String(validate=[validate.Length(min=1), _not_reserved]),
        values=fields.String(), load_default=dict, allow_none=True,
    )


class MetalakeCreate(Base):
    name = NewName("metalake", required=True)
    comment = fields.String(allow_none=True, load_default=None)
    properties = _user_properties()


class InUseRequest(Base):
    inUse = fields.Boolean(load_default=False)


CATALOG_TYPES = ("relational", "fileset", "messaging", "model")


def _catalog_type(value: str) -> None:
    if value.lower() not in CATALOG_TYPES:
        raise ValidationError(f"unknown catalog type {value!r}; must be one of {', '.join(CATALOG_TYPES)}")


#: catalog types whose provider may be omitted: it then defaults to the type's name (Gravitino's
#: Catalog.Type.supportsManagedCatalog and CatalogProvider.shortNameForManagedCatalog)
MANAGED_CATALOG_TYPES = ("fileset", "model")


class CatalogCreate(Base):
    name = NewName("catalog", required=True)
    # Gravitino's Catalog.Type, case-insensitive: an unknown type is a malformed request (400); a known
    # type gravimeta does not serve is an unsupported operation (405, decided by the dispatcher).
    type = fields.String(required=True, validate=_catalog_type)
    provider = fields.String(load_default=None, allow_none=True)
    comment = fields.String(allow_none=True, load_default=None)
    properties = _properties()  # reserved keys are refused by the provider's checks (connectors/properties.py)

    @post_load
    def _default_provider(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        """As Gravitino's CatalogCreateRequest: a blank provider is the type's own name for fileset and
        model catalogs and an error for the others; the legacy provider `hadoop` means the type's own."""
        provider, kind = data.get("provider"), data["type"].lower()
        if provider is None or not provider.strip():
            if kind not in MANAGED_CATALOG_TYPES:
                raise ValidationError(f"Provider cannot be null for catalog type {kind} that doesn't "
                                      "support managed catalog", "provider")
            provider = kind
        elif provider.lower() == "hadoop":
            provider = kind
        return {**data, "provider": provider}


class SchemaCreate(Base):
    name = NewName("schema", required=True)
    comment = fields.String(allow_none=True, load_default=None)
    properties = _properties()


def check_not_null_default(data: dict[str, Any]) -> None:
    """A non-nullable column cannot default to a null literal (Gravitino's ColumnDTO.validate)."""
    default = data.get("defaultValue")
    if not data.get("nullable", True) and default and default.get("type") == "literal" and default.get("value") is None:
        raise ValidationError("a non-nullable column cannot default to null", "defaultValue")


class ColumnPayload(Base):
    name = NewName("column", required=True)
    type = TypeField(required=True)
    comment = fields.String(allow_none=True, load_default=None)
    nullable = fields.Boolean(load_default=True)
    autoIncrement = fields.Boolean(load_default=False)
    defaultValue = ExpressionField(allow_none=True, load_default=None)

    @validates_schema
    def _not_null_default(self, data: dict[str, Any], **_: Any) -> None:
        check_not_null_default(data)


class IndexPayload(Base):
    indexType = fields.String(required=True, validate=validate.OneOf(["PRIMARY_KEY", "UNIQUE_KEY", "primary_key", "unique_key"]))
    name = fields.String(allow_none=True, load_default=None)
    fieldNames = fields.List(_field_path(), required=True, validate=_length(shape_limits.INDEX_FIELDS, "fields", 1))
    properties = _properties()

    @post_load
    def _upper_type(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**data, "indexType": data["indexType"].upper()}  # Gravitino writes the enum name


class DistributionPayload(Base):
    # Gravitino's DistributionDTO defaults the strategy to hash; number -1 means "decided by the engine"
    strategy = fields.String(load_default="hash", validate=validate.OneOf(["none", "hash", "range", "even", "random", "NONE", "HASH", "RANGE", "EVEN", "RANDOM"]))
    number = fields.Integer(load_default=0, validate=validate.Range(min=-1))
    funcArgs = fields.List(ExpressionField(), load_default=list,
                           validate=_length(shape_limits.FUNCTION_ARGUMENTS, "arguments"))


class SortOrderPayload(Base):
    sortTerm = ExpressionField(required=True)
    direction = fields.String(load_default="asc", validate=validate.OneOf(["asc", "desc", "ASC", "DESC"]))
    nullOrdering = fields.String(
        load_default=None, validate=validate.OneOf(["nulls_first", "nulls_last", "NULLS_FIRST", "NULLS_LAST"])
    )

    @post_load
    def _default_null_ordering(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        """Like Gravitino's SortOrderDTO: without nullOrdering, asc sorts nulls first and desc nulls last."""
        if data.get("nullOrdering") is None:
            data["nullOrdering"] = "nulls_last" if data["direction"].lower() == "desc" else "nulls_first"
        return data


class PartitionField(fields.Field):
    """One partitioning, in Gravitino's canonical form (gravimeta/partitioning.py)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return normalize_partitioning(value, "partitioning")
        except TypeError_ as exc:
            raise ValidationError(str(exc)) from None


class TableCreate(Base):
    name = NewName("table", required=True)
    comment = fields.String(allow_none=True, load_default=None)
    columns = fields.List(fields.Nested(ColumnPayload), required=True,
                          validate=_length(shape_limits.COLUMNS, "columns", 1))
    properties = _properties()
    partitioning = fields.List(PartitionField(), load_default=list, allow_none=True,
                               validate=_length(shape_limits.PARTITIONING, "partitionings"))
    distribution = fields.Nested(DistributionPayload, load_default=None, allow_none=True)
    sortOrders = fields.List(fields.Nested(SortOrderPayload), load_default=list, allow_none=True,
                             validate=_length(shape_limits.SORT_ORDERS, "sort orders"))
    indexes = fields.List(fields.Nested(IndexPayload), load_default=list, allow_none=True,
                          validate=_length(shape_limits.INDEXES, "indexes"))


class PrincipalAddRequest(Base):
    """UserAddRequest / GroupAddRequest."""

    name = Name(required=True)


class OwnerSetRequest(Base):
    name = Name(required=True)
    type = fields.String(required=True, validate=validate.OneOf(["USER", "GROUP", "user", "group"]))

    @post_load
    def _upper_type(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**data, "type": data["type"].upper()}  # Owner.Type, read case-insensitively


# ------------------------------------------------------------------ updates


class MetalakeRename(Base):
    newName = NewName("metalake", required=True)


class CatalogRename(Base):
    newName = NewName("catalog", required=True)


class TableRename(Base):
    newName = NewName("table", required=True)
    newSchemaName = Name(allow_none=True, load_default=None)  # an existing schema: any stored name


class UpdateComment(Base):
    newComment = fields.String(allow_none=True, load_default=None)


# like Java's StringUtils.isNotBlank: whitespace-only keys and values are rejected
_NOT_BLANK = validate.Regexp(r"\s*\S", error="must not be blank")


class SetProperty(Base):
    property = fields.String(required=True, validate=_NOT_BLANK)
    value = fields.String(required=True, validate=_NOT_BLANK)


class TableSetProperty(SetProperty):
    value = fields.String(required=True)  # tables accept an empty value


class RemoveProperty(Base):
    property = fields.String(required=True, validate=_NOT_BLANK)


class AddColumn(Base):
    fieldName = _field_path(required=True)
    type = TypeField(required=True)
    comment = fields.String(allow_none=True, load_default=None)
    position = PositionField(load_default="default")
    nullable = fields.Boolean(load_default=True)
    autoIncrement = fields.Boolean(load_default=False)
    defaultValue = ExpressionField(allow_none=True, load_default=None)

    @validates_schema
    def _not_null_default(self, data: dict[str, Any], **_: Any) -> None:
        check_not_null_default(data)

    @validates("fieldName")
    def _new_column_name(self, value: list[str], **_: Any) -> None:
        try:
            names.CHECKS["column"](value[0])
        except IllegalArgument as exc:
            raise ValidationError(exc.message) from None


class RenameColumn(Base):
    oldFieldName = _field_path(required=True)
    newFieldName = NewName("column", required=True)


class DeleteColumn(Base):
    fieldName = _field_path(required=True)
    ifExists = fields.Boolean(load_default=False)


class UpdateColumnType(Base):
    fieldName = _field_path(required=True)
    newType = TypeField(required=True)


class UpdateColumnComment(Base):
    fieldName = _field_path(required=True)
    newComment = fields.String(allow_none=True, load_default=None)


class UpdateColumnPosition(Base):
    fieldName = _field_path(required=True)
    newPosition = PositionField(required=True)


class UpdateColumnNullability(Base):
    fieldName = _field_path(required=True)
    nullable = fields.Boolean(required=True)


class UpdateColumnDefaultValue(Base):
    fieldName = _field_path(required=True)
    newDefaultValue = ExpressionField(required=True)


class UpdateColumnAutoIncrement(Base):
    fieldName = _field_path(required=True)
    autoIncrement = fields.Boolean(required=True)


class AddTableIndex(Base):
    index = fields.Nested(IndexPayload, required=True)


class DeleteTableIndex(Base):
    name = fields.String(required=True)
    ifExists = fields.Boolean(load_default=False)


class UserSetProperty(SetProperty):
    property = fields.String(required=True, validate=[_NOT_BLANK, _not_reserved])


class UserRemoveProperty(RemoveProperty):
    property = fields.String(required=True, validate=[_NOT_BLANK, _not_reserved])


_COMMON = {"setProperty": SetProperty, "removeProperty": RemoveProperty}
METALAKE_UPDATES = {
    "setProperty": UserSetProperty, "removeProperty": UserRemoveProperty, "rename": MetalakeRename,
    "updateComment": UpdateComment,
}
# catalog properties are checked against the provider's declared ones (immutable, reserved) by the dispatcher
CATALOG_UPDATES = {**_COMMON, "rename": CatalogRename, "updateComment": UpdateComment}
SCHEMA_UPDATES = dict(_COMMON)
TABLE_UPDATES = {
    **_COMMON,
    "setProperty": TableSetProperty,
    "rename": TableRename,
    "updateComment": UpdateComment,
    "addColumn": AddColumn,
    "renameColumn": RenameColumn,
    "deleteColumn": DeleteColumn,
    "updateColumnType": UpdateColumnType,
    "updateColumnComment": UpdateColumnComment,
    "updateColumnPosition": UpdateColumnPosition,
    "updateColumnNullability": UpdateColumnNullability,
    "updateColumnDefaultValue": UpdateColumnDefaultValue,
    "updateColumnAutoIncrement": UpdateColumnAutoIncrement,
    "addTableIndex": AddTableIndex,
    "deleteTableIndex": DeleteTableIndex,
}


# ------------------------------------------------------------------ loading


@functools.cache
def _instance(schema: type[Schema]) -> Schema:
    """One instance per schema class, reused by every request: building one costs more than loading a
    body, and the schemas here keep no state between loads (marshmallow schemas are reusable)."""
    return schema()


def load(schema: type[Schema], data: Any) -> dict[str, Any]:
    """Validate `data` with `schema`; raise IllegalArgument naming every bad field."""
    if not isinstance(data, dict):
        raise IllegalArgument("The request body must be a JSON object")
    try:
        loaded = _instance(schema).load(data)
    except ValidationError as exc:
        raise IllegalArgument(f"Invalid request: {_describe(exc.messages)}") from None
    limits.check_payload(loaded)
    return loaded


def load_updates(data: Any, kinds: Mapping[str, type[Schema]], allow_empty: bool = True) -> list[dict[str, Any]]:
    """Validate an `{"updates": [...]}` body whose elements are discriminated by `@type`."""
    if not isinstance(data, dict):
        raise IllegalArgument("The request body must be a JSON object")
    updates = data.get("updates")
    if not isinstance(updates, list):
        raise IllegalArgument("Invalid request: updates: must be a list of changes")
    if not updates and not allow_empty:
        raise IllegalArgument("Invalid request: updates: must not be empty")
    if len(updates) > shape_limits.UPDATES:
        raise IllegalArgument(f"Invalid request: updates: {len(updates)} changes; the limit is {shape_limits.UPDATES}")
    result = []
    for i, update in enumerate(updates):
        kind = update.get("@type") if isinstance(update, dict) else None
        if not isinstance(kind, str) or kind not in kinds:  # an unhashable @type must be a 400, not a 500
            raise IllegalArgument(
                f"Invalid request: updates[{i}]: unknown @type {kind!r}; expected one of {', '.join(sorted(kinds))}"
            )
        try:
            loaded = _instance(kinds[kind]).load(update)
        except ValidationError as exc:
            raise IllegalArgument(f"Invalid request: updates[{i}] ({kind}): {_describe(exc.messages)}") from None
        result.append({"@type": kind, **loaded})
    limits.check_updates(result)
    return result


def _describe(messages: Any, prefix: str = "") -> str:
    if isinstance(messages, dict):
        parts = [_describe(v, f"{prefix}{k}." if prefix or k != "_schema" else "") for k, v in messages.items()]
        return "; ".join(parts)
    if isinstance(messages, list):
        return f"{prefix.rstrip('.')}: {' '.join(str(m) for m in messages)}" if prefix else " ".join(map(str, messages))
    return f"{prefix.rstrip('.')}: {messages}"
