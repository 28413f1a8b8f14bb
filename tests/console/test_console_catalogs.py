"""Metalakes and catalogs from the console: properties edited in place, the catalog form's pre-create
connection test (a sqlite path passes, a hive metastore that does not answer shows the error by the
form), a catalog disabled and enabled again, and dropped without force (refused while in use, the
answer shown) and then with force. Each change is checked through the API."""

from __future__ import annotations

import socket

import requests

from tests.console.pages import fill, make_schema, submit, wait_for


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_catalog_form_tests_the_connection_and_the_catalog_page_disables_edits_and_drops(
        browser, console_server, screenshots):
    from selenium.webdriver.common.by import By

    base = console_server.url
    lake, _, _ = make_schema(base)
    lake_url = f"{base}/api/metalakes/{lake}"
    browser.get(f"{base}/#/m/{lake}")
    wait_for(browser, "#metalake-properties-set")

    # the metalake's properties, edited in place
    fill(browser, "#metalake-properties-set", {"key": "team", "value": "data"})
    submit(browser, "#metalake-properties-set")
    wait_for(browser, "#metalake-properties", "data")
    assert requests.get(lake_url, timeout=10).json()["metalake"]["properties"]["team"] == "data"

    # the pre-create probe: a hive metastore nobody answers on is refused by the form, a sqlite path passes
    fill(browser, "#create-catalog", {"name": "probe", "provider": "hive",
                                      "prop:metastore.uris": f"http://127.0.0.1:{_closed_port()}"})
    browser.find_element(By.ID, "test-connection").click()
    error = wait_for(browser, "#create-catalog-result .error", "Exception", timeout=30).text
    assert "ConnectionFailedException" in error or "RuntimeException" in error, error
    fill(browser, "#create-catalog", {"provider": "sqlite", "prop:path": "probe.db"})
    browser.find_element(By.ID, "test-connection").click()
    wait_for(browser, "#create-catalog-result .done", "connection ok")
    assert requests.get(f"{lake_url}/catalogs/probe", timeout=10).status_code == 404  # nothing stored
    fill(browser, "#create-catalog", {"name": "sales", "provider": "memory"})
    submit(browser, "#create-catalog")
    wait_for(browser, "#catalog-state", "in use")
    catalog_url = f"{lake_url}/catalogs/sales"

    # disable, enable
    browser.find_element(By.ID, "toggle-catalog").click()
    wait_for(browser, "#catalog-state", "disabled")
    assert requests.get(f"{catalog_url}", timeout=10).json()["catalog"]["properties"]["in-use"] == "false"
    browser.find_element(By.ID, "toggle-catalog").click()
    wait_for(browser, "#catalog-state", "in use")

    # properties
    fill(browser, "#catalog-properties-set", {"key": "region", "value": "eu"})
    submit(browser, "#catalog-properties-set")
    wait_for(browser, "#catalog-properties", "eu")
    assert requests.get(catalog_url, timeout=10).json()["catalog"]["properties"]["region"] == "eu"
    browser.save_screenshot(str(screenshots / "console-catalog.png"))

    # drop without force: refused while in use, the answer by the button; with force: gone
    browser.find_element(By.ID, "drop-catalog").click()
    browser.find_element(By.ID, "drop-catalog").click()
    error = wait_for(browser, ".error", "CatalogInUseException").text
    assert "409" in error, error
    assert requests.get(catalog_url, timeout=10).status_code == 200
    browser.find_element(By.ID, "drop-catalog-force").click()
    browser.find_element(By.ID, "drop-catalog").click()
    wait_for(browser, "#drop-catalog", "Really drop").click()
    wait_for(browser, "#create-catalog")
    assert requests.get(catalog_url, timeout=10).status_code == 404
