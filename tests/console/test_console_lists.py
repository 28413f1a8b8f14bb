"""Long lists stay responsive: a schema of 10,000 tables shows one page of its list at a time (filter,
next page) and the tree shows a bounded number of its tables plus a link to the rest; a table far down
the list opens and shows as the current one in the tree. The tables are written into the store
directly, in one transaction."""

from __future__ import annotations

import requests
from sqlalchemy import insert, select

from gravimeta.store import EntityStore
from gravimeta.store.database import create_store_engine
from gravimeta.store.models import ColumnRow, TableRow
from tests.console.pages import make_schema, texts, wait_for, wait_until

TABLES = 10_000


def _schema_of_many_tables(server, count: int) -> tuple[str, str, str]:
    """A memory catalog's schema holding `count` one-column tables, written into the store in one
    transaction (the API would take minutes for ten thousand)."""
    lake, catalog, schema = make_schema(server.url)
    engine = create_store_engine(server.store_url)
    try:
        store = EntityStore(engine)

        def bulk(session):
            schema_id = store.schema_row(session, lake, catalog, schema).id
            session.execute(insert(TableRow), [
                {"schema_id": schema_id, "name": f"t_{i:05d}", "properties": {}, "partitioning": [],
                 "sort_orders": [], "indexes": [], "version": 1, "creator": "bulk"} for i in range(count)])
            ids = session.scalars(select(TableRow.id).where(TableRow.schema_id == schema_id)).all()
            session.execute(insert(ColumnRow), [
                {"table_id": table_id, "position": 0, "name": "id", "type": "long", "nullable": True,
                 "auto_increment": False} for table_id in ids])

        store.write(bulk)
    finally:
        engine.dispose()
    return lake, catalog, schema


def test_a_schema_of_ten_thousand_tables_pages_its_list_and_bounds_the_tree(browser, console_server):
    from selenium.webdriver.common.by import By

    lake, catalog, schema = _schema_of_many_tables(console_server, TABLES)
    listed = requests.get(f"{console_server.url}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables",
                          timeout=30).json()["identifiers"]
    assert len(listed) == TABLES

    browser.get(f"{console_server.url}/#/m/{lake}/c/{catalog}/s/{schema}")
    wait_for(browser, "#tables-status", f"1–50 of {TABLES}")
    assert texts(browser, "#tables tbody td") == [f"t_{i:05d}" for i in range(50)]
    # the tree: a bounded branch under the schema, and a link to the whole list
    wait_for(browser, "#tree", f"… {TABLES - 100} more tables")
    assert len(texts(browser, "#tree a[aria-level='4']")) == 101  # 100 tables and the "more" link
    # the whole page stays small: one page of rows, not ten thousand
    assert browser.execute_script("return document.getElementsByTagName('*').length") < 2000

    browser.find_element(By.ID, "tables-next").click()
    wait_for(browser, "#tables-status", f"51–100 of {TABLES}")
    assert texts(browser, "#tables tbody td")[0] == "t_00050"
    browser.find_element(By.ID, "tables-filter").send_keys("t_0999")
    wait_for(browser, "#tables-status", "1–10 of 10")
    assert texts(browser, "#tables tbody td") == [f"t_0999{i}" for i in range(10)]

    browser.find_element(By.LINK_TEXT, "t_09999").click()
    wait_for(browser, "h1", "Table t_09999")
    # the current table is in the tree although it is far past the tree's first hundred
    wait_until(browser, lambda b: texts(b, "#tree a.current") == ["Tt_09999"])
    assert requests.get(f"{console_server.url}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables/t_09999",
                        timeout=10).status_code == 200
