"""Partitions through the official client (RelationalTable.add_partition, list_partition_names,
list_partitions, get_partition, drop_partition): kept by the store for `memory`, by the metastore for
`hive` (Hive's rules: named from the values, values read back as strings), none for `sqlite`."""

from __future__ import annotations

from datetime import date

import pytest
from gravitino import Catalog, NameIdentifier
from gravitino.api.rel.column import Column
from gravitino.api.rel.expressions.literals.literals import Literals
from gravitino.api.rel.partitions.partitions import Partitions
from gravitino.api.rel.table import Table
from gravitino.api.rel.types.types import Types
from gravitino.dto.rel.partitioning.identity_partitioning_dto import IdentityPartitioningDTO
from gravitino.exceptions.base import (
    IllegalArgumentException,
    NoSuchPartitionException,
    NoSuchTableException,
    PartitionAlreadyExistsException,
    UnsupportedOperationException,
)

from tests.conformance.conftest import new_name, refuses


def _refused(catalog: Catalog, schema: str) -> bool:
    """Whether the catalog refuses partitioned tables (Gravitino's JDBC catalogs: "Currently we do not
    support Partitioning ..."); it refused this one when so."""
    if not refuses(catalog.provider(), "partitioning"):
        return False
    with pytest.raises(UnsupportedOperationException):
        _partitioned(catalog, schema)
    return True


def _partitioned(catalog: Catalog, schema: str) -> Table:
    return catalog.as_table_catalog().create_table(
        NameIdentifier.of(schema, new_name("tbl")),
        [Column.of("dt", Types.DateType.get()), Column.of("country", Types.StringType.get())],
        partitioning=[IdentityPartitioningDTO("dt"), IdentityPartitioningDTO("country")],
    )


def _day(value: str, country: str):  # type: ignore[no-untyped-def]
    return Partitions.identity(
        name=f"dt={value}/country={country}", field_names=[["dt"], ["country"]],
        values=[Literals.date_literal(date.fromisoformat(value)), Literals.string_literal(country)],
    )


def test_a_partition_is_added_listed_loaded_and_dropped(catalog: Catalog, schema: str) -> None:
    if _refused(catalog, schema):
        return
    table = _partitioned(catalog, schema)
    if catalog.provider() == "sqlite":
        with pytest.raises(UnsupportedOperationException):
            table.list_partition_names()
        with pytest.raises(UnsupportedOperationException):
            table.add_partition(_day("2025-12-03", "us"))
        return
    assert table.list_partition_names() == []
    added = table.add_partition(_day("2025-12-03", "us"))
    assert added.name() == "dt=2025-12-03/country=us"
    assert table.list_partition_names() == ["dt=2025-12-03/country=us"]
    assert table.list_partitions() == [added]
    loaded = catalog.as_table_catalog().load_table(NameIdentifier.of(schema, table.name()))
    assert loaded.get_partition("dt=2025-12-03/country=us") == added
    assert [v.value() for v in added.values()] == ["2025-12-03", "us"]
    expected_type = "string" if catalog.provider() == "hive" else "date"  # Hive keeps strings
    assert added.values()[0].data_type().simple_string() == expected_type

    with pytest.raises(PartitionAlreadyExistsException):
        table.add_partition(_day("2025-12-03", "us"))
    with pytest.raises(NoSuchPartitionException):
        table.get_partition("dt=2025-12-04/country=us")
    assert table.drop_partition("dt=2025-12-03/country=us") is True
    assert table.drop_partition("dt=2025-12-03/country=us") is False
    assert table.list_partition_names() == []


def test_a_partition_that_does_not_fit_the_table_is_refused(catalog: Catalog, schema: str) -> None:
    if catalog.provider() == "sqlite":
        pytest.skip("sqlite catalogs have no partitions")
    if _refused(catalog, schema):
        return
    table = _partitioned(catalog, schema)
    only_day = Partitions.identity(name="dt=2025-12-03", field_names=[["dt"]],
                                   values=[Literals.date_literal(date(2025, 12, 3))])
    with pytest.raises(IllegalArgumentException):
        table.add_partition(only_day)
    assert table.list_partition_names() == []


def test_partitions_of_a_dropped_table_are_gone(catalog: Catalog, schema: str) -> None:
    if catalog.provider() == "sqlite":
        pytest.skip("sqlite catalogs have no partitions")
    if _refused(catalog, schema):
        return
    table = _partitioned(catalog, schema)
    table.add_partition(_day("2025-12-03", "us"))
    tables = catalog.as_table_catalog()
    ident = NameIdentifier.of(schema, table.name())
    assert tables.drop_table(ident) is True
    with pytest.raises(NoSuchTableException):
        table.list_partition_names()
    recreated = tables.create_table(ident, [Column.of("dt", Types.DateType.get()),
                                            Column.of("country", Types.StringType.get())],
                                    partitioning=[IdentityPartitioningDTO("dt"), IdentityPartitioningDTO("country")])
    assert recreated.list_partition_names() == []
