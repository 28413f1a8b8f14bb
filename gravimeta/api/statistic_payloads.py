"""Statistics request bodies (Gravitino's StatisticsUpdateRequest, StatisticsDropRequest,
PartitionStatisticsUpdateRequest, PartitionStatisticsDropRequest) and the StatisticDTO shape.

A statistic value is JSON as Gravitino's StatisticValue serialiser writes it: a boolean, an integer
(a long), a floating-point number (a double), a string, a list of values or an object of values;
null is refused at any depth (Gravitino's reader rejects it)."""

from __future__ import annotations

import json
from typing import Any

from marshmallow import ValidationError, fields, validate

from gravimeta.api import payloads
from gravimeta.api.dto import audit
from gravimeta.entities import Statistic

NAME_MAX = 128
#: the longest statistic value, in characters of its JSON text (as stored)
VALUE_MAX_CHARS = 8_192
#: the most statistics one update may set (a table update's map; all partitions' maps of a partition update)
UPDATE_MAX = 1_000
PARTITION_NAME_MAX = 512
_LONG = (-(2**63), 2**63 - 1)
_NOT_BLANK = validate.Regexp(r"\s*\S", error="must not be blank")


def check_value(value: Any, where: str = "value") -> Any:
    if isinstance(value, bool | str | float):
        return value
    if isinstance(value, int):
        if not _LONG[0] <= value <= _LONG[1]:
            raise ValidationError(f"{where}: {value} does not fit a long statistic value")
        return value
    if isinstance(value, list):
        return [check_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: check_value(v, f"{where}.{k}") for k, v in value.items()}
    raise ValidationError(f"{where}: a statistic value is a boolean, number, string, list or object, not null")


class StatisticValueField(fields.Field):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        checked = check_value(value, attr or "value")
        size = len(json.dumps(checked))
        if size > VALUE_MAX_CHARS:
            raise ValidationError(f"the value is {size} characters of JSON; the limit is {VALUE_MAX_CHARS}")
        return checked


def _statistic_name(max_length: int = NAME_MAX, **kwargs: Any) -> fields.String:
    return fields.String(validate=[_NOT_BLANK, validate.Length(max=max_length)], **kwargs)


def _statistics() -> fields.Dict:
    """A name -> value map with at least one entry."""
    return fields.Dict(keys=_statistic_name(), values=StatisticValueField(required=True), required=True,
                       validate=validate.Length(min=1, max=UPDATE_MAX))


class StatisticsUpdate(payloads.Base):
    updates = _statistics()


class StatisticsDrop(payloads.Base):
    names = fields.List(_statistic_name(), required=True, validate=validate.Length(min=1))


class PartitionStatisticsUpdateItem(payloads.Base):
    partitionName = _statistic_name(PARTITION_NAME_MAX, required=True)
    statistics = _statistics()


def _at_most_update_max(items: list[dict[str, Any]]) -> None:
    total = sum(len(item["statistics"]) for item in items)
    if total > UPDATE_MAX:
        raise ValidationError(f"sets {total} partition statistics; one update may set at most {UPDATE_MAX}")


class PartitionStatisticsUpdate(payloads.Base):
    updates = fields.List(fields.Nested(PartitionStatisticsUpdateItem), required=True,
                          validate=[validate.Length(min=1, max=UPDATE_MAX), _at_most_update_max])


class PartitionStatisticsDropItem(payloads.Base):
    partitionName = _statistic_name(PARTITION_NAME_MAX, required=True)
    statisticNames = fields.List(_statistic_name(), required=True, validate=validate.Length(min=1))


class PartitionStatisticsDrop(payloads.Base):
    drops = fields.List(fields.Nested(PartitionStatisticsDropItem), required=True, validate=validate.Length(min=1))


def statistic(s: Statistic) -> dict[str, Any]:
    """StatisticDTO of a custom statistic: never reserved, always modifiable."""
    return {"name": s.name, "value": s.value, "reserved": False, "modifiable": True, "audit": audit(s.audit)}
