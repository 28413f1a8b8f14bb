"""The table page shows everything a table has (columns with types, nullability, defaults,
auto-increment and comments; partitioning, distribution, sort orders, indexes; properties; audit;
partitions and statistics) and changes it: columns added, renamed, retyped, commented and dropped,
properties set and removed, partitions added (a duplicate refused with its 409) and dropped, a statistic
set. Every change is checked through the API afterwards."""

from __future__ import annotations

import requests

from tests.console.pages import fill, make_schema, send, submit, texts, wait_for, wait_until

TABLE = {
    "name": "events",
    "comment": "all of them",
    "columns": [
        {"name": "id", "type": "long", "nullable": False, "autoIncrement": True, "comment": "key"},
        {"name": "day", "type": "date", "nullable": True, "comment": None},
        {"name": "kind", "type": "varchar(16)", "nullable": False, "comment": "what",
         "defaultValue": {"type": "literal", "dataType": "varchar(16)", "value": "click"}},
    ],
    "partitioning": [{"strategy": "identity", "fieldName": ["day"]}],
    "distribution": {"strategy": "hash", "number": 8, "funcArgs": [{"type": "field", "fieldName": ["id"]}]},
    "sortOrders": [{"sortTerm": {"type": "field", "fieldName": ["id"]}, "direction": "desc", "nullOrdering": "nulls_last"}],
    "indexes": [{"indexType": "PRIMARY_KEY", "name": "pk", "fieldNames": [["id"]], "properties": {}}],
    "properties": {"owner-team": "web"},
}


def _rows(browser, table: str) -> list[list[str]]:
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')]"
        ".map(r => [...r.querySelectorAll('td')].map(td => td.textContent))", table)


def test_the_table_page_shows_and_changes_everything(browser, console_server, screenshots):
    from selenium.webdriver.common.by import By

    base = console_server.url
    lake, catalog, schema = make_schema(base)
    table_url = f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables/events"
    assert requests.post(table_url.rsplit("/", 1)[0], json=TABLE, timeout=10).status_code == 200
    partition = {"type": "identity", "name": "day=2025-01-02", "fieldNames": [["day"]],
                 "values": [{"type": "literal", "dataType": "date", "value": "2025-01-02"}]}
    assert requests.post(f"{table_url}/partitions", json={"partitions": [partition]}, timeout=10).status_code == 200

    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}/t/events")
    wait_for(browser, "#partitions", "day=2025-01-02")
    assert _rows(browser, "#columns") == [
        ["id", "long", "NOT NULL", "yes", "", "key"], ["day", "date", "nullable", "", "", ""],
        ["kind", "varchar(16)", "NOT NULL", "", "click (varchar(16))", "what"]]
    assert _rows(browser, "#table-layout") == [["identity(day)", "hash(id) into 8", "id desc nulls_last"]]
    assert _rows(browser, "#table-indexes") == [["pk", "PRIMARY_KEY", "id"]]
    assert [r[:4] for r in _rows(browser, "#partitions")] == [["day=2025-01-02", "identity", "2025-01-02 (date)", ""]]
    assert "anonymous" in browser.find_element(By.ID, "table-audit").text
    browser.save_screenshot(str(screenshots / "console-table-full.png"))

    # partitions: one added through the form (the table's identity column, typed as the column), the same
    # one again refused by the form with the 409, the first one dropped after a confirmation
    def partitions() -> list[tuple[str, list]]:
        found = requests.get(f"{table_url}/partitions?details=true", timeout=10).json()["partitions"]
        return sorted((p["name"], p["values"]) for p in found)

    send(browser, "#add-partition", {"value:day": "2025-01-03"})
    wait_for(browser, "#add-partition-result .done", "partition day=2025-01-03 added")
    wait_for(browser, "#partitions", "day=2025-01-03")
    assert partitions() == [("day=2025-01-02", [partition["values"][0]]),
                            ("day=2025-01-03", [{"type": "literal", "dataType": "date", "value": "2025-01-03"}])]
    send(browser, "#add-partition", {"value:day": "2025-01-03"})
    error = wait_for(browser, "#add-partition-result .error", "AlreadyExists").text
    assert "409" in error and "PartitionAlreadyExistsException" in error, error
    dropping = "#partitions [data-partition='day=2025-01-02'] button.danger"
    browser.find_element(By.CSS_SELECTOR, dropping).click()
    wait_for(browser, dropping, "Really drop partition day=2025-01-02?")
    assert len(partitions()) == 2  # the first click only asks
    browser.find_element(By.CSS_SELECTOR, dropping).click()
    wait_until(browser, lambda b: texts(b, "#partitions tbody td:first-child") == ["day=2025-01-03"])
    assert [name for name, _ in partitions()] == ["day=2025-01-03"]

    def columns() -> list[tuple[str, str, str | None]]:
        return [(c["name"], c["type"], c.get("comment"))
                for c in requests.get(table_url, timeout=10).json()["table"]["columns"]]

    steps = [
        ({"action": "add", "name": "note", "type": "string", "comment": "free text"}, ("note", "string", "free text")),
        ({"action": "rename", "column": "note", "newName": "remark"}, ("remark", "string", "free text")),
        ({"action": "type", "column": "remark", "type": "varchar(64)"}, ("remark", "varchar(64)", "free text")),
        ({"action": "comment", "column": "remark", "comment": "said"}, ("remark", "varchar(64)", "said")),
    ]
    for values, expected in steps:
        fill(browser, "#alter-column", values)
        submit(browser, "#alter-column")
        wait_for(browser, "#alter-column-result .done", "changed")
        assert columns()[-1] == expected, (values, columns())
        assert expected[0] in texts(browser, "#columns tbody td:first-child")
        browser.execute_script("document.querySelector('#alter-column-result').replaceChildren()")
    fill(browser, "#alter-column", {"action": "drop", "column": "remark"})
    submit(browser, "#alter-column")
    wait_for(browser, "#alter-column-result .done", "changed")
    assert [c[0] for c in columns()] == ["id", "day", "kind"]

    # a bad change shows Gravitino's answer by the form
    fill(browser, "#alter-column", {"action": "rename", "column": "day", "newName": "id"})
    submit(browser, "#alter-column")
    error = wait_for(browser, "#alter-column-result .error", "Exception").text
    assert "400" in error or "409" in error, error

    # properties: set one, remove another
    fill(browser, "#table-properties-set", {"key": "tier", "value": "gold"})
    submit(browser, "#table-properties-set")
    wait_for(browser, "#table-properties", "gold")
    browser.find_element(By.CSS_SELECTOR, "#table-properties [data-remove='owner-team']").click()
    wait_for(browser, "#table-properties-result", "removed")
    assert requests.get(table_url, timeout=10).json()["table"]["properties"] == {"tier": "gold"}

    # statistics: set one through the form
    fill(browser, "#set-statistic", {"statName": "custom-rows", "statValue": "42"})
    submit(browser, "#set-statistic")
    wait_for(browser, "#statistics", "custom-rows")
    stats = requests.get(f"{base}/api/metalakes/{lake}/objects/table/{catalog}.{schema}.events/statistics",
                         timeout=10).json()["statistics"]
    assert [(s["name"], s["value"]) for s in stats] == [("custom-rows", 42)]
