"""A real browser for the console tests: Debian's chromium driven by Selenium through
/usr/bin/chromedriver, headless. Nothing downloads a browser: without chromium the tests skip, except
under CI=true, where the browser is part of the machine (.ci/run installs it) and its absence fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ServerProcess

CHROMEDRIVER = "/usr/bin/chromedriver"


def _browser_missing() -> str | None:
    if not Path(CHROMEDRIVER).exists():
        return f"{CHROMEDRIVER} is not installed (Debian: apt-get install chromium chromium-driver)"
    if shutil.which("chromium") is None:
        return "chromium is not installed (Debian: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the console's browser tests must run in CI: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console: CSP refusals show there
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def console_server(tmp_path_factory, _migrated_sqlite_template) -> Iterator[ServerProcess]:
    """One replica on a fresh SQLite store, with its own sqlite catalog root."""
    directory = tmp_path_factory.mktemp("console")
    store = directory / "store.db"
    shutil.copyfile(_migrated_sqlite_template, store)
    (directory / "catalogs").mkdir()
    server = ServerProcess(f"sqlite:///{store}", workers=1, log_path=directory / "server.log",
                           env={"GRAVIMETA_SQLITE_CATALOG_ROOT": str(directory / "catalogs")})
    with server:
        yield server


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where the tests write their screenshots: $GRAVIMETA_CONSOLE_SCREENSHOTS, else a temporary directory."""
    chosen = os.environ.get("GRAVIMETA_CONSOLE_SCREENSHOTS")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(autouse=True)
def _signed_out(request) -> Iterator[None]:
    """The browser is shared by the session: each test starts from a blank page and leaves no
    credentials behind in its servers' localStorage."""
    yield
    if "browser" in request.fixturenames:
        driver = request.getfixturevalue("browser")
        try:
            driver.execute_script("try { localStorage.clear() } catch (e) { }")
        finally:
            driver.get("about:blank")
