"""Errors by the action that caused them: a schema drop whose hive metastore fails answers 502 (outcome
unknown); the console shows Gravitino's code, type and message by the drop button and names the pending
operation, and the cluster page lists the open intent with what the repair would do with it now (the
server's dry run of the repair: with the lock off, the intent is young and the engine still has the
schema, so the repair would leave it open until the settle time has passed)."""

from __future__ import annotations

import requests

from tests.console.pages import make_schema, wait_for


def test_an_outcome_unknown_names_the_pending_operation_and_the_cluster_page_shows_its_intent(
        browser, console_server, hive_stub):
    from selenium.webdriver.common.by import By

    stub = hive_stub  # this module's own stub (tests/conftest.py)
    base = console_server.url
    lake, catalog, schema = make_schema(base, "hive", {"metastore.uris": stub.uri, "client.timeout-ms": "1500"})
    stub.fault("fail", ops=["drop_database"])
    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}")
    wait_for(browser, "#drop-schema").click()
    wait_for(browser, "#drop-schema", "Really drop").click()
    error = wait_for(browser, ".error", "502", timeout=30).text
    assert "1007 ConnectionFailedException" in error and "pending operation" in error, error
    assert f"the pending operation is DELETE /api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}" in error, error
    schema_url = f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}"
    assert requests.get(schema_url, timeout=10).status_code == 200  # not dropped in the store

    browser.find_element(By.ID, "nav-cluster").click()
    wait_for(browser, "#intents", f"/{lake}/{catalog}")
    row = browser.execute_script(
        "const row = [...document.querySelectorAll('#intents tbody tr')].find(r => r.textContent.includes(arguments[0]));"
        "return [...row.querySelectorAll('td')].map(td => td.textContent)", f"/{lake}/{catalog}")
    assert row[1] == "drop_schema", row
    assert row[7].startswith("wait: no cross-node claims: a look is final once the intent is 30 s old ("), row
    assert ("then the engine does not show the change (as of now), so it would leave it open for now (without "
            "cross-node claims the operation may still be running") in row[7], row
    stub.clear_faults()
