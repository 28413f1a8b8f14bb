"""The web console in a real browser (headless chromium): the metadata tree flow from metalake to
table and back, an error shown with Gravitino's code, type and message, and the cluster page. Each step
is checked in the page and, for changes, through the REST API afterwards."""

from __future__ import annotations

import base64
import uuid

import pytest
import requests

from gravimeta.store.migrations import head_revision
from tests.console.pages import REDRAWN, WAIT, fill, submit, wait_for


def _basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:x".encode()).decode()}


def test_metalake_to_table_and_back(browser, console_server, screenshots):
    from selenium.webdriver.common.by import By

    base, suffix = console_server.url, uuid.uuid4().hex[:6]
    lake, catalog, schema, table = f"lake_{suffix}", f"cat_{suffix}", f"sch_{suffix}", f"orders_{suffix}"
    browser.get(f"{base}/")
    # the user name the console sends as simple authentication becomes the creator
    fill(browser, "#auth", {"user": "alice"})
    browser.find_element(By.CSS_SELECTOR, "#auth button").click()

    wait_for(browser, "#create-metalake")
    fill(browser, "#create-metalake", {"name": lake, "comment": "made in the console"})
    submit(browser, "#create-metalake")
    wait_for(browser, "#create-metalake-result", "created")
    wait_for(browser, "#metalakes", lake)
    wait_for(browser, "#tree", lake)
    created = requests.get(f"{base}/api/metalakes/{lake}", timeout=10).json()["metalake"]
    assert created["comment"] == "made in the console" and created["audit"]["creator"] == "alice"

    # an error path: the same name again shows Gravitino's 409 code, type and message by the form
    fill(browser, "#create-metalake", {"name": lake})
    submit(browser, "#create-metalake")
    error = wait_for(browser, "#create-metalake-result .error", "AlreadyExists").text
    assert "409" in error and "1004" in error and "MetalakeAlreadyExistsException" in error, error
    assert lake in error, error

    browser.find_element(By.LINK_TEXT, lake).click()
    wait_for(browser, "#create-catalog")
    fill(browser, "#create-catalog", {"name": catalog, "provider": "sqlite", "prop:path": f"{catalog}.db"})
    submit(browser, "#create-catalog")
    wait_for(browser, "#create-schema")
    assert requests.get(f"{base}/api/metalakes/{lake}/catalogs/{catalog}", timeout=10).json()["catalog"][
        "provider"] == "sqlite"

    fill(browser, "#create-schema", {"name": schema})
    submit(browser, "#create-schema")
    wait_for(browser, "#create-table")
    fill(browser, "#create-table", {"name": table, "comment": "three columns"})
    browser.find_element(By.ID, "add-column").click()
    browser.find_element(By.ID, "add-column").click()
    columns = [("id", "long", False, "the key"), ("customer", "varchar(40)", True, ""), ("placed", "date", True, "day")]
    for index, (name, type_, nullable, comment) in enumerate(columns):
        fill(browser, "#create-table", {f"col-name-{index}": name, f"col-type-{index}": type_,
                                         f"col-comment-{index}": comment})
        box = browser.find_element(By.NAME, f"col-nullable-{index}")
        if box.is_selected() != nullable:
            box.click()
    submit(browser, "#create-table")

    # the table page: columns with their types, nullability and comments; properties; audit
    wait_for(browser, "#columns", "placed")
    rows = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
            for row in browser.find_elements(By.CSS_SELECTOR, "#columns tbody tr")]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [
        ("id", "long", "NOT NULL", "the key"), ("customer", "varchar(40)", "nullable", ""),
        ("placed", "date", "nullable", "day")], rows
    assert "alice" in browser.find_element(By.ID, "table-audit").text
    wait_for(browser, "#tree a.current", table)
    browser.save_screenshot(str(screenshots / "console-table.png"))
    table_url = f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables/{table}"
    api_columns = requests.get(table_url, timeout=10).json()["table"]["columns"]
    assert [(c["name"], c["type"], c["nullable"]) for c in api_columns] == [
        ("id", "long", False), ("customer", "varchar(40)", True), ("placed", "date", True)]

    # rename, then drop with confirmation
    fill(browser, "#rename-table", {"newName": f"{table}_v2"})
    submit(browser, "#rename-table")
    wait_for(browser, "h1", f"{table}_v2")
    assert requests.get(table_url, timeout=10).status_code == 404
    browser.find_element(By.ID, "drop-table").click()
    assert requests.get(f"{table_url}_v2", timeout=10).status_code == 200  # the first click only asks
    wait_for(browser, "#drop-table", "Really drop")
    browser.find_element(By.ID, "drop-table").click()
    wait_for(browser, "#tables")
    assert requests.get(f"{table_url}_v2", timeout=10).status_code == 404
    schema_url = table_url.rsplit("/tables/", 1)[0]
    assert requests.get(f"{schema_url}/tables", timeout=10).json()["identifiers"] == []

    # the metalake, from the list: disable it, then drop it (force: it still holds the catalog and schema)
    browser.find_element(By.LINK_TEXT, "Metalakes").click()
    wait_for(browser, f"#toggle-metalake-{lake}", "Disable").click()
    wait_for(browser, f"#toggle-metalake-{lake}", "Enable")
    assert requests.get(f"{base}/api/metalakes/{lake}", timeout=10).json()["metalake"]["properties"]["in-use"] == "false"
    wait_for(browser, f"#drop-metalake-{lake}").click()
    wait_for(browser, f"#drop-metalake-{lake}", "Really drop")
    browser.find_element(By.ID, f"drop-metalake-{lake}").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, WAIT, ignored_exceptions=REDRAWN).until(lambda b: lake not in b.find_element(By.ID, "metalakes").text)
    assert requests.get(f"{base}/api/metalakes/{lake}", timeout=10).status_code == 404


def test_cluster_page_shows_replicas_and_refreshes(browser, console_server, screenshots):
    from selenium.webdriver.common.by import By

    browser.get(f"{console_server.url}/#/cluster")
    wait_for(browser, "#replicas", "live")
    shown = browser.execute_script(  # one read: the page redraws on every poll
        "return [...document.querySelectorAll('#replicas tbody tr')].map(r => [...r.querySelectorAll('td')]"
        ".map(td => td.textContent))")
    nodes = requests.get(f"{console_server.url}/api/admin/locks", timeout=10).json()["nodes"]
    # each replica with the schema revision its code runs (this code's Alembic head)
    assert [(r[0], r[5]) for r in shown] == [(n["node"], head_revision()) for n in nodes] and shown, shown
    first = wait_for(browser, "#cluster-status", "updated").text
    # it refreshes by itself: the status line changes without a reload
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, WAIT, ignored_exceptions=REDRAWN).until(lambda b: b.find_element(By.ID, "cluster-status").text != first)
    browser.save_screenshot(str(screenshots / "console-cluster-idle.png"))


@pytest.mark.parametrize("path", ["/", "/console/console.js", "/console/console.css"])
def test_console_assets_are_served_without_credentials(console_server, path):
    response = requests.get(f"{console_server.url}{path}", timeout=10)
    assert response.status_code == 200, response.text[:200]
    assert response.headers["Content-Type"].split(";")[0] in ("text/html", "text/javascript",
                                                               "application/javascript", "text/css")


def test_a_path_outside_the_console_directory_is_not_served(console_server):
    response = requests.get(f"{console_server.url}/console/..%2f__init__.py", timeout=10)
    assert response.status_code == 404
