"""The book and JupyterLab in a real browser: Debian's headless Chromium, driven by Selenium through chromedriver.

``make test`` installs the ``chromium`` and ``chromium-driver`` packages (see the Makefile). Each test
saves a screenshot under the build area (``build/screenshots/``) and, for the book, checks from the
browser's own network log that every request stayed on the machine.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.paths import NOTEBOOKS_DIR, build_root
from helpers.ports import free_port
from helpers.workbook import book, lab, runner

pytestmark = pytest.mark.process

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Flags for a headless Chromium with no network of its own: without the background-networking ones it
#: keeps trying to reach Google's services, which this machine's closed network refuses.
CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--window-size=1280,1000",
)


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM.is_file() and CHROMEDRIVER.exists(), "install Debian's chromium and chromium-driver (make test does)"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def requested_urls(driver: object) -> list[str]:
    """Every URL the browser asked for since the last call, from Chromium's DevTools network events."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def wait_for(condition, timeout: float = 60.0, what: str = "the page") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise TimeoutError(f"{what} did not appear within {timeout:.0f} s")


def screenshot(driver: object, name: str) -> Path:
    folder = build_root() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    assert driver.save_screenshot(str(path)), path
    assert path.stat().st_size > 10_000, "an empty screenshot"
    return path


def test_the_book_opens_offline_and_a_chapter_shows_text_code_output_and_figure(browser: object, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    index = book.build([book.Chapter(path) for path in runner.notebooks()], tmp_path / "book", notebooks_dir=NOTEBOOKS_DIR)
    requested_urls(browser)  # drop what the browser loaded for itself at start (its chrome:// new-tab page)
    browser.get(index.as_uri())
    assert "TensorFlow 2 training utilities" in browser.title
    browser.find_element(By.CSS_SELECTOR, 'a[href="08_capstone.html"]').click()
    wait_for(lambda: browser.current_url.endswith("08_capstone.html"), what="chapter 08")
    heading = wait_for(lambda: browser.find_elements(By.TAG_NAME, "h1"), what="chapter 08's title")[0]
    assert heading.text.startswith("08 · Capstone")
    assert browser.find_elements(By.CSS_SELECTOR, ".jp-CodeCell .highlight"), "no code cell"
    outputs = " ".join(element.text for element in browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))
    assert "finished at step" in outputs
    figures = browser.find_elements(By.CSS_SELECTOR, 'img[src^="data:image/png"]')
    assert figures and browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", figures[0]) > 100
    closed = browser.find_elements(By.CSS_SELECTOR, "details")
    assert closed and not any(element.get_attribute("open") for element in closed), "solutions start closed"
    screenshot(browser, "book_08_capstone.png")
    urls = requested_urls(browser)
    assert urls and all(url.startswith(("file:", "data:")) for url in urls), [url for url in urls if not url.startswith(("file:", "data:"))]
    browser.find_element(By.CSS_SELECTOR, 'footer a[href="LICENSE.txt"]').click()  # the last line's link opens the licence as text
    wait_for(lambda: browser.current_url.endswith("/LICENSE.txt"), what="LICENSE.txt from the footer")
    assert "Apache License" in wait_for(lambda: browser.find_element(By.TAG_NAME, "body").text, what="the licence's text")


def test_jupyterlab_opens_notebook_00_without_asking_about_news(browser: object) -> None:
    from selenium.webdriver.common.by import By

    port, token = free_port(), secrets.token_urlsafe(16)
    with lab.lab_server(port, token) as base:
        browser.get(f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}")
        wait_for(
            lambda: [element for element in browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedMarkdown h1") if "Start here" in element.text],
            timeout=90,
            what="notebook 00's title in JupyterLab",
        )
        shot = screenshot(browser, "jupyterlab_00_start_here.png")
        assert "Jupyter news" not in browser.find_element(By.TAG_NAME, "body").text
        assert shot.is_file()
