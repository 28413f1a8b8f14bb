"""A page of another origin, in a real browser (headless chromium), can change nothing on a gravimeta at
127.0.0.1, and cannot frame its console; the console itself runs under its Content-Security-Policy.

The hostile page is served from another port of 127.0.0.1 (another origin). It sends what a browser lets
any page send without asking the target (no CORS preflight): `fetch(..., {mode: "no-cors"})` with a JSON
text as a text/plain body, as a Blob (no Content-Type at all), as application/x-www-form-urlencoded and as
multipart/form-data, and an HTML form with enctype="text/plain" whose one field spells a JSON body. Before
the server required `Content-Type: application/json` on bodies, all five created their metalake. It also
puts the console in an iframe, where the console would act with the credentials it keeps in
localStorage; X-Frame-Options DENY and `frame-ancestors 'none'` stop it from loading there."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.console.pages import wait_for
from tests.support.servers import ServerProcess

#: what the hostile page tries to create, one metalake per way of sending a body
HOSTILE_NAMES = ("evil_fetch_text", "evil_fetch_blob", "evil_fetch_form", "evil_fetch_multipart", "evil_form_text")

HOSTILE_PAGE = """<!doctype html>
<title>working</title>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="POST" action="{target}/api/metalakes" enctype="text/plain" target="sink">
  <input name='{{"name": "evil_form_text", "comment": "' value='"}}'>
</form>
<iframe id="framed" src="{target}/"></iframe>
<script>
const url = "{target}/api/metalakes";
const body = (name) => JSON.stringify({{name, comment: "from another origin"}});
const send = (init) => fetch(url, {{method: "POST", mode: "no-cors", ...init}}).catch(() => null);
async function attack() {{
  await send({{body: body("evil_fetch_text")}});                                  // text/plain;charset=UTF-8
  await send({{body: new Blob([body("evil_fetch_blob")])}});                      // no Content-Type header
  await send({{headers: {{"Content-Type": "application/x-www-form-urlencoded"}}, body: body("evil_fetch_form")}});
  await send({{headers: {{"Content-Type": "multipart/form-data; boundary=b"}}, body: body("evil_fetch_multipart")}});
  document.getElementById("form").submit();
  document.title = "sent";
}}
attack();
</script>
"""


class HostilePage(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.page = HOSTILE_PAGE.format(target=target).encode()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    server: HostilePage

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.server.page)))
        self.end_headers()
        self.wfile.write(self.server.page)


@pytest.fixture
def target(tmp_path, _migrated_sqlite_template) -> Iterator[ServerProcess]:
    """A replica of its own, so that its request log holds this test's requests only."""
    store = tmp_path / "store.db"
    store.write_bytes(Path(_migrated_sqlite_template).read_bytes())
    with ServerProcess(f"sqlite:///{store}", workers=1, log_path=tmp_path / "server.log") as server:
        yield server


@pytest.fixture
def hostile(target) -> Iterator[HostilePage]:
    page = HostilePage(target.url)
    thread = threading.Thread(target=page.serve_forever, daemon=True)
    thread.start()
    yield page
    page.shutdown()
    page.server_close()


def _posts_logged(server: ServerProcess) -> list[dict[str, Any]]:
    """The POST /api/metalakes requests the replica logged (one JSON line each)."""
    assert server.log_path is not None
    lines = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"/api/metalakes"' in line:
            entry = json.loads(line)
            if entry.get("method") == "POST" and entry.get("path") == "/api/metalakes":
                lines.append(entry)
    return lines


def test_a_page_of_another_origin_can_create_nothing_and_cannot_frame_the_console(browser, target, hostile):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(hostile.url)
    WebDriverWait(browser, 20).until(lambda d: d.title == "sent")
    deadline = time.monotonic() + 20  # every request reached the replica and was answered (its log line)
    while len(_posts_logged(target)) < len(HOSTILE_NAMES) and time.monotonic() < deadline:
        time.sleep(0.05)
    answered = _posts_logged(target)
    assert len(answered) == len(HOSTILE_NAMES), answered
    lakes = [m["name"] for m in requests.get(f"{target.url}/api/metalakes", timeout=10).json()["metalakes"]]
    assert not set(lakes) & set(HOSTILE_NAMES), f"a page of another origin created {lakes}"
    assert sorted(entry["status"] for entry in answered) == [415] * len(HOSTILE_NAMES), answered

    # the console in the hostile page's iframe: the browser refuses to render it there
    framed = browser.find_element(By.ID, "framed")
    browser.switch_to.frame(framed)
    try:
        WebDriverWait(browser, 20).until(
            lambda d: d.execute_script("return document.readyState") == "complete"
            and d.execute_script("return location.href") != "about:blank")
        assert not browser.find_elements(By.ID, "auth"), "the console rendered inside another origin's frame"
    finally:
        browser.switch_to.default_content()


def test_the_console_runs_under_its_content_security_policy(browser, console_server):
    """No script, style or connection of the console is refused by its own policy (chromium logs every
    refusal in the page's console), and the console still draws and calls the API."""
    browser.get_log("browser")  # forget what earlier pages logged
    answer = requests.get(f"{console_server.url}/", timeout=10)
    policy = answer.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy, policy
    browser.get(f"{console_server.url}/#/cluster")
    wait_for(browser, "#main", "Replicas")
    browser.get(f"{console_server.url}/")
    wait_for(browser, "#create-metalake")
    refused = [entry["message"] for entry in browser.get_log("browser") if "Content Security Policy" in entry["message"]]
    assert not refused, refused
