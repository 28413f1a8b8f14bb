"""The console by keyboard: the tree moves with the arrow keys (WAI-ARIA tree pattern) and Enter opens an
item, focus staying in the tree across the redraw; and every control on the main pages has a label a
screen reader can say (a <label for>, aria-label, or a button's text)."""

from __future__ import annotations

import requests

from tests.console.pages import make_schema, texts, wait_for, wait_until

UNLABELLED = """
return [...document.querySelectorAll('main input, main select, main textarea, main button, header input, header select')]
  .filter(e => e.type !== 'hidden' && !e.closest('[hidden]'))
  .filter(e => !(e.getAttribute('aria-label') || (e.id && document.querySelector(`label[for="${e.id}"]`))
                 || e.closest('label') || (e.tagName === 'BUTTON' && e.textContent.trim())))
  .map(e => e.outerHTML.slice(0, 120));
"""


def _focused(browser) -> str:
    return browser.execute_script("return document.activeElement.textContent")


def test_the_tree_moves_by_keyboard_and_every_control_is_labelled(browser, console_server):
    from selenium.webdriver.common.keys import Keys

    base = console_server.url
    lake, catalog, schema = make_schema(base)
    for table in ("alpha", "beta"):
        assert requests.post(f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas/{schema}/tables", timeout=10,
                             json={"name": table, "columns": [{"name": "id", "type": "long"}]}).status_code == 200
    browser.get(f"{base}/#/m/{lake}/c/{catalog}/s/{schema}/t/alpha")
    wait_for(browser, "#columns")
    current = wait_for(browser, "#tree a.current", "alpha")
    assert current.get_attribute("tabindex") == "0"
    browser.execute_script("arguments[0].focus()", current)

    def press(key, expected):
        browser.switch_to.active_element.send_keys(key)
        wait_until(browser, lambda b: _focused(b).endswith(expected))

    press(Keys.ARROW_UP, schema)       # the item above: the schema
    press(Keys.ARROW_LEFT, catalog)    # its parent
    press(Keys.ARROW_RIGHT, schema)    # into the open branch
    press(Keys.ARROW_DOWN, "alpha")
    press(Keys.ARROW_DOWN, "beta")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(browser, "h1", "Table beta")
    wait_until(browser, lambda b: b.execute_script(  # the redrawn tree keeps the focus, on the new current item
        "return document.activeElement.classList.contains('current')") and _focused(b).endswith("beta"))
    items = texts(browser, "#tree a[role=treeitem]")  # other tests' metalakes may be listed too
    press(Keys.HOME, items[0])
    press(Keys.END, items[-1])

    for page in (f"#/m/{lake}/c/{catalog}/s/{schema}/t/beta", f"#/m/{lake}/c/{catalog}/s/{schema}",
                 f"#/m/{lake}/c/{catalog}", f"#/m/{lake}", "#/"):
        browser.get(f"{base}/{page}")
        wait_for(browser, "main form")
        assert browser.execute_script(UNLABELLED) == [], page
