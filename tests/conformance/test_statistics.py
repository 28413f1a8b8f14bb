"""Table statistics through the official client (RelationalTable.update_statistics, list_statistics,
drop_statistics): every value kind reads back with its type, on every connector."""

from __future__ import annotations

import pytest
from gravitino import Catalog, NameIdentifier
from gravitino.api.rel.column import Column
from gravitino.api.rel.types.types import Types
from gravitino.api.stats.statistic_values import StatisticValues
from gravitino.exceptions.base import IllegalStatisticNameException

from tests.conformance.conftest import new_name


def test_statistics_are_updated_listed_and_dropped(catalog: Catalog, schema: str) -> None:
    table = catalog.as_table_catalog().create_table(NameIdentifier.of(schema, new_name("tbl")),
                                                    [Column.of("id", Types.IntegerType.get())])
    stats = table.supports_statistics()
    values = {
        "custom-bool": StatisticValues.boolean_value(True),
        "custom-long": StatisticValues.long_value(100),
        "custom-double": StatisticValues.double_value(99.99),
        "custom-string": StatisticValues.string_value("text"),
        "custom-list": StatisticValues.list_value([StatisticValues.string_value("a")]),
        "custom-object": StatisticValues.object_value({"key": StatisticValues.long_value(1)}),
    }
    assert stats.list_statistics() == []
    stats.update_statistics(values)
    listed = {s.name(): s for s in stats.list_statistics()}
    assert set(listed) == set(values)
    for name, value in values.items():
        assert listed[name].value().data_type() == value.data_type(), name
        assert listed[name].value().value() == value.value(), name
        assert listed[name].modifiable() is True and listed[name].reserved() is False

    stats.update_statistics({"custom-long": StatisticValues.long_value(7)})
    assert {s.name(): s.value().value() for s in stats.list_statistics()}["custom-long"] == 7
    assert stats.drop_statistics(["custom-bool", "custom-long"]) is True
    assert stats.drop_statistics(["custom-bool"]) is False
    assert len(stats.list_statistics()) == len(values) - 2
    with pytest.raises(IllegalStatisticNameException):
        stats.update_statistics({"rows": StatisticValues.long_value(1)})


def test_statistics_follow_a_renamed_table(catalog: Catalog, schema: str) -> None:
    from gravitino.api.rel.table_change import TableChange

    tables = catalog.as_table_catalog()
    ident = NameIdentifier.of(schema, new_name("tbl"))
    tables.create_table(ident, [Column.of("id", Types.IntegerType.get())]).supports_statistics().update_statistics(
        {"custom-rows": StatisticValues.long_value(3)})
    renamed = tables.alter_table(ident, TableChange.rename(new_name("renamed")))
    assert [(s.name(), s.value().value()) for s in renamed.supports_statistics().list_statistics()] == [
        ("custom-rows", 3)]
