"""What the console tests do in a page: wait for an element (the pages redraw their lists, so elements
found earlier may be replaced), fill a form by field name, submit it."""

from __future__ import annotations

try:
    from selenium.common.exceptions import StaleElementReferenceException

    REDRAWN: tuple[type[Exception], ...] = (StaleElementReferenceException,)
except ImportError:  # no selenium: the browser fixture skips, or fails under CI, saying why
    REDRAWN = ()
WAIT = 10  # seconds a page element may take to appear (a bound, not a timing assertion)


def wait_for(browser, css: str, text: str | None = None, timeout: float = WAIT):
    """The element `css` once visible (and containing `text`, when given)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, timeout, ignored_exceptions=REDRAWN)
    if text is None:
        return wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
    return browser.find_element(By.CSS_SELECTOR, css)


def wait_until(browser, condition, timeout: float = WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, ignored_exceptions=REDRAWN).until(condition)


def fill(browser, form: str, values: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    for name, value in values.items():
        element = browser.find_element(By.CSS_SELECTOR, f"{form} [name='{name}']")
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        else:
            element.clear()
            element.send_keys(value)


def submit(browser, form: str) -> None:
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, f"{form} button[type='submit']").click()


def send(browser, form: str, values: dict[str, str]) -> None:
    """Fill the form `form` by field name and submit it."""
    fill(browser, form, values)
    submit(browser, form)


def texts(browser, css: str) -> list[str]:
    """The text of every element matching `css`, read in one script (no element can go stale between)."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)


def make_schema(base: str, provider: str = "memory", properties: dict[str, str] | None = None,
                headers: dict[str, str] | None = None) -> tuple[str, str, str]:
    """A fresh metalake › catalog › schema made through the API; returns their names."""
    import uuid

    import requests

    suffix = uuid.uuid4().hex[:6]
    lake, catalog, schema = f"lake_{suffix}", f"cat_{suffix}", f"sch_{suffix}"
    for path, body in ((f"{base}/api/metalakes", {"name": lake}),
                       (f"{base}/api/metalakes/{lake}/catalogs", {"name": catalog, "type": "relational",
                                                                   "provider": provider, "properties": properties or {}}),
                       (f"{base}/api/metalakes/{lake}/catalogs/{catalog}/schemas", {"name": schema})):
        answer = requests.post(path, json=body, headers=headers or {}, timeout=30)
        assert answer.status_code == 200, answer.text
    return lake, catalog, schema
