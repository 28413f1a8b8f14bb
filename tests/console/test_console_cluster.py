"""The cluster page on two replicas with the cross-node lock on: a claim held by an operation paused at a
failpoint on replica a shows on replica b's page with its holder and fence and a time left that falls
between polls, and is gone from the page once the operation is let go. Meanwhile a change behind that
claim, made from b's console, shows its 503 ScopeBusy next to the form, saying it can be retried."""

from __future__ import annotations

import shutil
import threading
import time
import uuid

import pytest
import requests

from tests.support.failpoints import Failpoints
from tests.support.servers import ServerProcess, discard, start_all

#: the pages redraw their lists (the cluster page on every poll): an element found may be replaced
try:
    from selenium.common.exceptions import StaleElementReferenceException

    REDRAWN: tuple[type[Exception], ...] = (StaleElementReferenceException,)
except ImportError:  # no selenium: the browser fixture skips, or fails under CI, saying why
    REDRAWN = ()
WAIT = 15  # seconds the page may take to show a change (a bound, not a timing assertion)
LOCK_ON = {"GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE",
           "GRAVIMETA_LEASE_TTL_MS": "30000"}


@pytest.fixture
def two_replicas(tmp_path, _migrated_sqlite_template):
    store = tmp_path / "store.db"
    shutil.copyfile(_migrated_sqlite_template, store)
    fp = Failpoints(tmp_path / "fp")
    # b gives up waiting for a claim after 1.5 s, so a change behind the held claim answers 503 promptly
    started = [ServerProcess(f"sqlite:///{store}", workers=1, log_path=tmp_path / f"{tag}.log",
                             env={**LOCK_ON, **fp.env(tag), **({"GRAVIMETA_CLAIM_TIMEOUT_MS": "1500"} if tag == "b" else {})})
               for tag in "ab"]
    try:
        start_all(*started)
        yield fp, started[0], started[1]
    finally:
        fp.clear()
        discard(*started)


def _claim_cells(browser, lake: str) -> list[str]:
    """The cells of the claim row naming `lake`, read in one script (the page redraws on every poll, so
    elements found earlier go stale)."""
    return browser.execute_script(
        "const row = [...document.querySelectorAll('#claims tbody tr')].find(r => r.textContent.includes(arguments[0]));"
        "return row ? [...row.querySelectorAll('td')].map(td => td.textContent) : [];", lake)


def test_a_held_claim_shows_with_its_holder_and_falling_time_left_then_goes(browser, two_replicas, screenshots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    fp, a, b = two_replicas
    lake = f"lake_{uuid.uuid4().hex[:6]}"
    assert requests.post(f"{a.url}/api/metalakes", json={"name": lake}, timeout=30).status_code == 200
    fp.arm("claim.after_grant", tag="a")
    answer: dict[str, int] = {}
    creating = threading.Thread(target=lambda: answer.setdefault("status", requests.post(
        f"{a.url}/api/metalakes/{lake}/catalogs", json={"name": "held", "type": "relational", "provider": "memory"},
        timeout=60).status_code))
    creating.start()
    paused = fp.wait_reached("claim.after_grant", tag="a")
    try:
        browser.get(f"{b.url}/#/cluster")
        wait = WebDriverWait(browser, WAIT, ignored_exceptions=REDRAWN)
        wait.until(lambda d: lake in d.find_element(By.ID, "claims").text)
        claims = requests.get(f"{b.url}/api/admin/locks", timeout=10).json()["claims"]
        held = next(c for c in claims if lake in c["path"])
        cells = _claim_cells(browser, lake)
        assert cells[0] == held["path"] and cells[1] == held["holder"] and cells[2] == str(held["fence"]), cells
        assert cells[4] == "live", cells
        # the time left falls between polls (a renewal may raise it once: some pair of readings falls)
        readings = []
        for _ in range(4):
            readings.append(float(_claim_cells(browser, lake)[3].removesuffix(" s")))
            time.sleep(0.6)
        assert all(0 < r <= 30 for r in readings), readings
        assert any(later < earlier for earlier, later in zip(readings, readings[1:], strict=False)), readings
        assert browser.execute_script("return document.querySelectorAll('#replicas tbody tr').length") == 2
        browser.save_screenshot(str(screenshots / "console-cluster.png"))

        # a change behind the held claim, from b's console: 503 ScopeBusy by the form, saying it can be retried
        cluster_tab = browser.current_window_handle
        browser.execute_script("window.sameDocument = true")  # gone after a reload
        browser.switch_to.new_window("tab")
        browser.get(f"{b.url}/#/m/{lake}")
        form = wait.until(lambda d: d.find_element(By.ID, "create-catalog"))
        form.find_element(By.NAME, "name").send_keys("blocked")
        form.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
        wait.until(lambda d: "ScopeBusy" in d.find_element(By.ID, "create-catalog-result").text)
        error = browser.find_element(By.ID, "create-catalog-result").text
        assert "503" in error and "ScopeBusyException" in error and "can be retried" in error, error
        assert requests.get(f"{b.url}/api/metalakes/{lake}/catalogs/blocked", timeout=10).status_code == 404
    finally:
        fp.resume(paused)
        creating.join(60)
    assert answer.get("status") == 200, answer
    browser.close()
    browser.switch_to.window(cluster_tab)  # the page left open since the claim showed: no reload
    assert browser.execute_script("return window.sameDocument === true")
    WebDriverWait(browser, WAIT, ignored_exceptions=REDRAWN).until(lambda d: lake not in d.find_element(By.ID, "claims").text)
    assert not [c for c in requests.get(f"{b.url}/api/admin/locks", timeout=10).json()["claims"] if lake in c["path"]]
