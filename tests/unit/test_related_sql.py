"""related_in_sql_bound (a statement built once, its path bound when it runs) sends what related_in_sql
(the path inline) sends: the same text and the same values, on every dialect the store runs on. The
journal's open-intents read uses the first, the lease table's related read the second."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Column, MetaData, String, Table, select
from sqlalchemy.dialects import mysql, postgresql, sqlite

from gravimeta.concurrency.paths import related_in_sql, related_in_sql_bound, related_sql_values

SCOPES = Table("scopes", MetaData(), Column("scope_path", String(600)))


def sent(statement: Any, dialect: Any, values: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The SQL text and parameters as the driver receives them (expanding IN lists rendered), as an
    execution with `values` would send them."""
    expanded = statement.compile(dialect=dialect).construct_expanded_state(values)
    return expanded.statement, dict(expanded.parameters)


@pytest.mark.parametrize("dialect", [postgresql.dialect(), mysql.dialect(), sqlite.dialect()], ids=lambda d: d.name)
@pytest.mark.parametrize("path", ["/", "/m", "/m/c_1/s%", "/m/c/s/t"])
def test_the_bound_form_sends_the_inline_forms_sql(dialect: Any, path: str) -> None:
    inline = select(SCOPES.c.scope_path).where(related_in_sql(SCOPES.c.scope_path, path))
    bound = select(SCOPES.c.scope_path).where(related_in_sql_bound(SCOPES.c.scope_path))
    text, params = sent(bound, dialect, related_sql_values(path))
    assert (text, params) == sent(inline, dialect)
    assert path in params.values()  # the path itself is one of the IN values: a comparison of something
