"""Size limits on request payloads, checked after the marshmallow schemas (400 naming the limit).

Names: new names follow Gravitino's rules (gravimeta/names.py, payloads.NewName); names that refer to
existing entities are not blank, at most 128 characters, no '/' or control characters (payloads.validate_name;
Gravitino's relational store has VARCHAR(128) name columns and checks only "not blank").
Comments (entity, column, updateComment): gravimeta.limits.comment-max-chars, default 256 (Gravitino's
store has VARCHAR(256) comment columns). Properties: at most gravimeta.limits.properties-max-count
entries per request, keys and values bounded by property-key-max-chars / property-value-max-chars.
The whole body is bounded by gravimeta.server.max-request-bytes (413). The property count is checked
per request (a create's map, or the setProperty changes of one alter), not accumulated over alters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flask import current_app, has_app_context

from gravimeta import capacity
from gravimeta.config import Settings
from gravimeta.errors import IllegalArgument

_COMMENT_KEYS = ("comment", "newComment")


@dataclass(frozen=True)
class Limits:
    comment: int
    properties: int
    key: int
    value: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(settings.max_comment_chars, settings.max_properties, settings.max_property_key_chars,
                   settings.max_property_value_chars)


def current_limits() -> Limits:
    if has_app_context() and "gravimeta" in current_app.extensions:
        return Limits.of(current_app.extensions["gravimeta"].settings)
    return Limits.of(Settings())


def check_payload(data: dict[str, Any], where: str = "") -> None:
    """Raise IllegalArgument if any comment, property map or column comment in `data` is too big."""
    limits = current_limits()
    _check_entity(data, limits, where)
    for i, column in enumerate(data.get("columns") or []):
        if isinstance(column, dict):
            _check_entity(column, limits, f"{where}columns[{i}].")


def check_updates(updates: list[dict[str, Any]]) -> None:
    limits = current_limits()
    set_count = 0
    for i, update in enumerate(updates):
        where = f"updates[{i}]."
        _check_entity(update, limits, where)
        if update.get("@type") == "setProperty":
            set_count += 1
            _check_property(str(update.get("property", "")), update.get("value"), limits, where)
    if set_count > limits.properties:
        raise IllegalArgument(
            f"Invalid request: {set_count} setProperty changes; the limit is {limits.properties} "
            "(gravimeta.limits.properties-max-count)"
        )


def _check_entity(data: dict[str, Any], limits: Limits, where: str) -> None:
    for key in _COMMENT_KEYS:
        value = data.get(key)
        if isinstance(value, str) and len(value) > limits.comment:
            raise IllegalArgument(
                f"Invalid request: {where}{key} is {len(value)} characters long; the limit is {limits.comment} "
                "(gravimeta.limits.comment-max-chars)"
            )
        # a configured limit above ~16k characters could exceed the comment column on MySQL/MariaDB
        if isinstance(value, str) and len(value) * 4 > capacity.TEXT_BYTES and len(value.encode()) > capacity.TEXT_BYTES:
            raise IllegalArgument(
                f"Invalid request: {where}{key} is {len(value.encode())} bytes long in UTF-8; the metadata store "
                f"holds at most {capacity.TEXT_BYTES} bytes"
            )
    properties = data.get("properties")
    if isinstance(properties, dict):
        if len(properties) > limits.properties:
            raise IllegalArgument(
                f"Invalid request: {where}properties has {len(properties)} entries; the limit is "
                f"{limits.properties} (gravimeta.limits.properties-max-count)"
            )
        _check_properties(properties.items(), limits, f"{where}properties")
        if len(properties) * (limits.key + limits.value) > capacity.JSON_BYTES:  # reachable only when configured so
            capacity.check_json_size(properties, f"Invalid request: {where}properties")


def _check_properties(items: Iterable[tuple[str, Any]], limits: Limits, where: str) -> None:
    for key, value in items:
        _check_property(key, value, limits, where + ".")


def _check_property(key: str, value: Any, limits: Limits, where: str) -> None:
    if len(key) > limits.key:
        raise IllegalArgument(
            f"Invalid request: {where}property key {key[:40]!r}... is {len(key)} characters long; the limit is "
            f"{limits.key} (gravimeta.limits.property-key-max-chars)"
        )
    if isinstance(value, str) and len(value) > limits.value:
        raise IllegalArgument(
            f"Invalid request: {where}property {key[:40]!r} has a value of {len(value)} characters; the limit is "
            f"{limits.value} (gravimeta.limits.property-value-max-chars)"
        )
