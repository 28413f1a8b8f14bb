"""Authentication and authorization in the console, on a server with authorization on and both simple
and OAuth authentication: a user signed in with a pasted bearer token sees the controls it may not use
disabled, with the reason, before trying; a service admin (simple user name) gives a table to a group
(one the metalake lacks is refused with the server's 404), then to that user through the owner form;
then the same user may alter that table from the console. Checked through the API."""

from __future__ import annotations

import base64
import shutil
import time
from collections.abc import Iterator

import jwt
import pytest
import requests

from tests.console.pages import fill, make_schema, send, submit, wait_for, wait_until
from tests.support.servers import ServerProcess

SECRET = b"a-console-test-secret-long-enough-for-hs256"
ADMIN = {"Authorization": "Basic " + base64.b64encode(b"admin:x").decode()}


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory, _migrated_sqlite_template) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("console-access")
    shutil.copyfile(_migrated_sqlite_template, directory / "store.db")
    env = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": "admin",
           "GRAVIMETA_AUTHENTICATORS": "simple,oauth", "GRAVIMETA_OAUTH_SIGN_KEY": base64.b64encode(SECRET).decode(),
           "GRAVIMETA_OAUTH_ALGORITHM": "HS256"}
    with ServerProcess(f"sqlite:///{directory / 'store.db'}", workers=1, log_path=directory / "server.log",
                       env=env) as server:
        yield server


def _sign_in(browser, mode: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    fill(browser, "#auth", {"mode": mode, "token" if mode == "oauth" else "user": value})
    browser.find_element(By.CSS_SELECTOR, "#auth button").click()


def _disabled(browser, css: str) -> bool:
    return browser.execute_script("return document.querySelector(arguments[0]).disabled", css)


def test_what_a_user_may_not_do_is_disabled_and_an_owner_may_alter(browser, guarded_server, screenshots):
    base = guarded_server.url
    lake, catalog, schema = make_schema(base, headers=ADMIN)
    lake_url = f"{base}/api/metalakes/{lake}"
    table_url = f"{lake_url}/catalogs/{catalog}/schemas/{schema}/tables/orders"
    for method, path, body in [
        ("POST", f"{lake_url}/catalogs/{catalog}/schemas/{schema}/tables",
         {"name": "orders", "columns": [{"name": "id", "type": "long"}]}),
        ("POST", f"{lake_url}/users", {"name": "bob"}),
        ("POST", f"{lake_url}/groups", {"name": "analysts"}),
        ("POST", f"{lake_url}/roles", {"name": "reader", "properties": {}, "securableObjects": [
            {"fullName": catalog, "type": "CATALOG", "privileges": [
                {"name": p, "condition": "ALLOW"} for p in ("USE_CATALOG", "USE_SCHEMA", "SELECT_TABLE")]}]}),
        ("PUT", f"{lake_url}/permissions/users/bob/grant", {"roleNames": ["reader"]}),
    ]:
        answer = requests.request(method, path, json=body, headers=ADMIN, timeout=10)
        assert answer.status_code == 200, answer.text
    token = jwt.encode({"sub": "bob", "aud": "GravitinoServer", "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")

    # bob, with a pasted bearer token, may read the table but not change or drop it, nor give it away
    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}/t/orders")
    _sign_in(browser, "oauth", token)
    wait_for(browser, "#alter-column .denied", "bob may not change table orders")
    for control in ("#alter-column button[type=submit]", "#rename-table button[type=submit]",
                    "#table-properties-set button", "#set-statistic button", "#drop-table", "#set-owner button"):
        assert _disabled(browser, control), control
    assert not _disabled(browser, "#attach-tag button")  # the console cannot tell: the server decides
    browser.save_screenshot(str(screenshots / "console-denied.png"))
    browser.get(f"{base}/#/m/{lake}/c/{catalog}")
    wait_for(browser, "#create-schema")
    wait_until(browser, lambda b: _disabled(b, "#drop-catalog") and _disabled(b, "#catalog-properties-set button"))

    # the service admin, by user name, gives bob the table through the owner form
    _sign_in(browser, "simple", "admin")
    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}/t/orders")
    wait_for(browser, "#owner", "admin")
    assert not _disabled(browser, "#alter-column button[type=submit]")
    owner_url = f"{lake_url}/owners/table/{catalog}.{schema}.orders"
    # owners may be groups too: one the metalake lacks is refused by the form, one it has is set
    send(browser, "#set-owner", {"ownerType": "GROUP", "owner": "nobody"})
    error = wait_for(browser, "#set-owner-result .error", "404").text
    assert "NotFoundException" in error and "nobody" in error, error
    send(browser, "#set-owner", {"ownerType": "GROUP", "owner": "analysts"})
    wait_for(browser, "#set-owner-result", "owner set to group analysts")
    assert wait_for(browser, "#owner").text == "analysts (group)"
    assert requests.get(owner_url, headers=ADMIN, timeout=10).json()["owner"] == {"name": "analysts", "type": "GROUP"}
    send(browser, "#set-owner", {"ownerType": "USER", "owner": "bob"})
    wait_for(browser, "#set-owner-result", "owner set to user bob")
    assert requests.get(owner_url, headers=ADMIN, timeout=10).json()["owner"] == {"name": "bob", "type": "USER"}

    # bob, the owner now, may alter it from the console
    _sign_in(browser, "oauth", token)
    browser.refresh()
    wait_for(browser, "#owner", "bob")
    wait_until(browser, lambda b: not _disabled(b, "#alter-column button[type=submit]"))
    assert not _disabled(browser, "#drop-table")
    fill(browser, "#alter-column", {"action": "add", "name": "total", "type": "double"})
    submit(browser, "#alter-column")
    wait_for(browser, "#alter-column-result .done", "changed")
    columns = requests.get(table_url, headers=ADMIN, timeout=10).json()["table"]["columns"]
    assert [c["name"] for c in columns] == ["id", "total"]
    assert requests.get(table_url, headers=ADMIN, timeout=10).json()["table"]["audit"]["lastModifier"] == "bob"
