"""How fast the web console paints from localhost: headless Debian chromium (Selenium, /usr/bin/chromedriver)
opens the console's pages from one replica on a fresh SQLite store, again and again, and reads the
browser's own timings: first contentful paint (the header and "Loading..."), DOMContentLoaded, and
`console:drawn` (a performance mark the console sets once its first page is drawn with the API's data).

    .venv/bin/python bench/first_paint.py [--loads 15]

Each page is loaded `loads` times with the HTTP cache off (every asset fetched again: a first visit) and
`loads` times with it on (revalidated, as on a return visit). Printed: median and p90 in ms per page and
mode, and whether the median first paint meets the 300 ms target. Not a test: numbers on a shared
2-core machine are noisy; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Http, load_note, make_tree, md_table, median, pct, replicas, tables_path, verdict  # noqa: E402

from tests.support.databases import fresh_database  # noqa: E402

TIMINGS = """
const paint = performance.getEntriesByName('first-contentful-paint')[0];
const nav = performance.getEntriesByType('navigation')[0];
const drawn = performance.getEntriesByName('console:drawn')[0];
return [paint ? paint.startTime : null, nav.domContentLoadedEventEnd, drawn ? drawn.startTime : null];
"""


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def measure(driver, url: str, loads: int, cache: bool) -> list[list[float]]:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": not cache})
    found = []
    for _ in range(loads):
        driver.get("about:blank")
        driver.get(url)
        WebDriverWait(driver, 30).until(lambda d: d.execute_script(TIMINGS)[2] is not None)
        found.append(driver.execute_script(TIMINGS))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=15)
    args = parser.parse_args(argv)
    with fresh_database("sqlite", Path(tempfile.mkdtemp(prefix="gm-paint-"))) as url, \
            replicas(url, 1, {}, workers=2, tag="paint") as (server,):
        http = Http()
        make_tree(http, server.url, "m", "c", ["s"])
        columns = [{"name": f"c{i}", "type": "long"} for i in range(10)]
        http.ok(server.url, "POST", tables_path("m", "c", "s"), {"name": "t", "columns": columns})
        pages = {"metalakes (/)": "/", "table page": "/#/m/m/c/c/s/s/t/t"}
        driver = browser()
        rows = []
        try:
            for name, path in pages.items():
                for cache in (False, True):
                    found = measure(driver, server.url + path, args.loads, cache)
                    paint, ready, drawn = ([row[i] for row in found] for i in range(3))
                    rows.append([name, "cache on" if cache else "cache off", median(paint), pct(paint, 0.9),
                                 median(ready), median(drawn), pct(drawn, 0.9), verdict(median(paint), 300)])
        finally:
            driver.quit()
    print(md_table(["page", "HTTP cache", "first paint median ms", "p90", "DOMContentLoaded median",
                    "drawn with data median", "p90", "first paint"], rows))
    print(f"{args.loads} loads each; {load_note()}")


if __name__ == "__main__":
    main()
