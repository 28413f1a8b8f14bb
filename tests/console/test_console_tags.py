"""Tags from the console: created on the metalake page, attached to a catalog and a table, shown on the
table with the catalog's as inherited, detached again, then renamed (a name taken shows the 409 by the
rename) and deleted after a confirmation; each change checked through the API. With authorization off
the owner section says there are no owners instead of failing."""

from __future__ import annotations

import requests

from tests.console.pages import fill, make_schema, send, submit, texts, wait_for, wait_until


def _object_tags(base: str, lake: str, kind: str, name: str) -> list[tuple[str, bool]]:
    tags = requests.get(f"{base}/api/metalakes/{lake}/objects/{kind}/{name}/tags?details=true", timeout=10).json()["tags"]
    return [(t["name"], t["inherited"]) for t in tags]


def test_tags_are_created_attached_inherited_and_detached(browser, console_server, screenshots):
    from selenium.webdriver.common.by import By

    base = console_server.url
    lake, catalog, schema = make_schema(base)
    assert requests.post(f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables", timeout=10,
                         json={"name": "clicks", "columns": [{"name": "id", "type": "long"}]}).status_code == 200
    browser.get(f"{base}/#/m/{lake}")
    for tag in ("gold", "pii"):
        wait_for(browser, "#create-tag")
        fill(browser, "#create-tag", {"name": tag, "comment": f"{tag} data"})
        submit(browser, "#create-tag")
        wait_for(browser, "#tags", tag)
    assert wait_for(browser, "#owner").text == "No owners: authorization is off on this server."

    browser.get(f"{base}/#/m/{lake}/c/{catalog}")
    wait_for(browser, "#attach-tag")
    fill(browser, "#attach-tag", {"tag": "gold"})
    submit(browser, "#attach-tag")
    wait_for(browser, "#object-tags", "gold")
    assert _object_tags(base, lake, "catalog", catalog) == [("gold", False)]

    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}/t/clicks")
    wait_for(browser, "#object-tags", "gold")
    fill(browser, "#attach-tag", {"tag": "pii"})
    submit(browser, "#attach-tag")
    wait_for(browser, "#object-tags", "pii")
    rows = browser.execute_script("return [...document.querySelectorAll('#object-tags tbody tr')]"
                                  ".map(r => [...r.querySelectorAll('td')].slice(0, 3).map(td => td.textContent))")
    assert rows == [["pii", "pii data", "own"], ["gold", "gold data", "inherited"]], rows
    assert _object_tags(base, lake, "table", f"{catalog}.{schema}.clicks") == [("pii", False), ("gold", True)]
    assert not browser.find_elements(By.CSS_SELECTOR, "#object-tags [data-detach='gold']")  # inherited: not here
    browser.save_screenshot(str(screenshots / "console-tags.png"))

    browser.find_element(By.CSS_SELECTOR, "#object-tags [data-detach='pii']").click()
    wait_for(browser, "#object-tags-result", "detached")
    wait_until(browser, lambda b: texts(b, "#object-tags tbody td:first-child") == ["gold"])
    assert _object_tags(base, lake, "table", f"{catalog}.{schema}.clicks") == [("gold", True)]

    # back on the metalake page: rename a tag onto a name taken (409 by that tag's rename), then for real
    browser.get(f"{base}/#/m/{lake}")
    wait_for(browser, "#tags [data-tag='pii']")
    send(browser, "#tags [data-tag='pii']", {"newName": "gold"})
    error = wait_for(browser, "#tags [data-tag='pii'] .error", "AlreadyExists").text
    assert "409" in error and "TagAlreadyExistsException" in error, error
    send(browser, "#tags [data-tag='gold']", {"newName": "platinum"})
    wait_for(browser, "#tags-result", "tag gold renamed to platinum")
    assert sorted(texts(browser, "#tags tbody td:first-child")) == ["pii", "platinum"]
    # the catalog's tag followed the rename, and the table still inherits it
    assert _object_tags(base, lake, "table", f"{catalog}.{schema}.clicks") == [("platinum", True)]

    # delete asks first; the second click deletes
    delete = "#tags [data-tag='pii'] button.danger"
    wait_for(browser, delete).click()
    wait_for(browser, delete, "Really delete tag pii?")
    assert requests.get(f"{base}/api/metalakes/{lake}/tags/pii", timeout=10).status_code == 200
    browser.find_element(By.CSS_SELECTOR, delete).click()
    wait_for(browser, "#tags-result", "tag pii deleted")
    assert texts(browser, "#tags tbody td:first-child") == ["platinum"]
    assert requests.get(f"{base}/api/metalakes/{lake}/tags", timeout=10).json()["names"] == ["platinum"]
