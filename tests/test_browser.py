"""The book and JupyterLab in a real browser: Debian's headless Chromium, driven by Selenium through chromedriver.

``make test`` installs the ``chromium`` and ``chromium-driver`` packages (see the Makefile). Each test
saves a screenshot under the build area (``build/screenshots/``) and, for the book, checks from the
browser's own network log that every request stayed on the machine.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers.paths import build_root, repo_root
from helpers.ports import free_port
from helpers.workbook import lab
from helpers.workbook.chromium import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS
from helpers.workbook.editions import LANGUAGES


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


#: Where Debian's fonts-noto-cjk puts its Sans font; without a CJK font Chromium draws Chinese as boxes.
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
#: For each edition: a word to search for and the chapter that teaches it.
SEARCHES = {"en": ("CosineDecay", "04_learning_rate_schedules"), "zh_CN": ("学习率", "04_learning_rate_schedules")}
_CJK = re.compile("[\u4e00-\u9fff]")


#: Where a request may go: a local file, data in the page, or the browser's own pages (its new-tab page loads lazily).
LOCAL = ("file:", "data:", "chrome:", "chrome-untrusted:")


def _all_local(urls: list[str]) -> None:
    assert any(url.startswith("file:") for url in urls) and all(url.startswith(LOCAL) for url in urls), [url for url in urls if not url.startswith(LOCAL)]


@pytest.mark.parametrize("language", [language for language, _, _ in LANGUAGES])
def test_a_book_chapter_shows_text_code_outputs_and_figures_and_its_switches_work(browser: object, built_book: Path, language: str) -> None:
    """Issue 24, item 5: in each edition, chapter 08 from the index; the dark theme; the language switch; all offline."""
    from selenium.webdriver.common.by import By

    assert CJK_FONT.is_file(), "install Debian's fonts-noto-cjk (make test does)"
    requested_urls(browser)  # drop what the browser loaded for itself at start (its chrome:// new-tab page)
    browser.get((built_book / "index.html").as_uri())  # the landing page leads to the English edition
    wait_for(lambda: browser.current_url.endswith("/en/index.html"), what="the English edition from the landing page")
    if language != "en":
        browser.get((built_book / language / "index.html").as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, 'table.workbook-chapters a[href="08_capstone.html"]'), what="the index's table")[0].click()
    wait_for(lambda: browser.current_url.endswith(f"/{language}/08_capstone.html"), what="chapter 08")
    heading = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "article h1"), what="chapter 08's title")[0]
    assert heading.text.startswith("08 · ")
    prose = browser.find_element(By.CSS_SELECTOR, "article").text
    assert bool(_CJK.search(prose[:2000])) == (language != "en"), "the chapter's prose is not in its edition's language"
    assert browser.find_elements(By.CSS_SELECTOR, ".cell_input .highlight"), "no code cell"
    outputs = " ".join(element.text for element in browser.find_elements(By.CSS_SELECTOR, ".cell_output"))
    assert "finished at step" in outputs
    figures = browser.find_elements(By.CSS_SELECTOR, ".cell_output img")
    assert figures and browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", figures[0]) > 100
    closed = browser.find_elements(By.CSS_SELECTOR, "article details")
    assert closed and not any(element.get_attribute("open") for element in closed), "solutions start closed"
    screenshot(browser, f"book_{language}_08_capstone.png")
    _all_local(requested_urls(browser))

    browser.find_element(By.CSS_SELECTOR, ".theme-switch-button").click()
    wait_for(lambda: [button for button in browser.find_elements(By.CSS_SELECTOR, '.theme-change-button[data-mode="dark"]') if button.is_displayed()],
             what="the colour-mode menu")[0].click()  # fmt: skip
    assert browser.execute_script("return document.documentElement.dataset.theme") == "dark"
    screenshot(browser, f"book_{language}_08_capstone_dark.png")

    other = next(name for name, _, _ in LANGUAGES if name != language)
    browser.find_element(By.CSS_SELECTOR, "a.workbook-language-switch").click()
    wait_for(lambda: browser.current_url.endswith(f"/{other}/08_capstone.html"), what=f"chapter 08 in {other}")
    assert wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "article h1"), what="the other edition's title")[0].text.startswith("08 · ")
    _all_local(requested_urls(browser))


@pytest.mark.parametrize("language", [language for language, _, _ in LANGUAGES])
def test_the_books_search_finds_the_chapter_that_teaches_a_term(browser: object, built_book: Path, language: str) -> None:
    """Search works from file:// with no server: a term in the edition's language finds the chapter that teaches it."""
    from selenium.webdriver.common.by import By

    word, chapter = SEARCHES[language]
    requested_urls(browser)
    browser.get(f"{(built_book / language / 'search.html').as_uri()}?q={quote(word)}")
    found = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, f'#search-results a[href*="{chapter}.html"]'), what=f"a search result for {word}")
    assert found
    screenshot(browser, f"book_{language}_search.png")
    _all_local(requested_urls(browser))


#: axe-core, the accessibility engine: the npm package pinned in package.json, installed by make test (see the Makefile).
AXE = repo_root() / "node_modules" / "axe-core" / "axe.min.js"
#: Its rules for WCAG 2.1, levels A and AA (issue 34, item 6).
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: A chapter's code cells and outputs, which the Chinese edition shows exactly as the English one
#: (test_workbook_book.py checks it): axe reads them once, on the English page (a third of its time goes to their contrast).
SAME_IN_BOTH = [[".cell_input"], [".cell_output"]]
#: After a theme switch the theme's buttons fade to their new colours (0.15 s): axe reads the colours once they have settled
#: (a looping animation, such as a spinner, never ends: not waited for).
_AXE_RUN = """
const done = arguments[arguments.length - 1];
const settling = document.getAnimations().filter(animation => animation.effect?.getComputedTiming().endTime !== Infinity);
Promise.allSettled(settling.map(animation => animation.finished))
  .then(() => axe.run({exclude: arguments[1]}, {runOnly: {type: "tag", values: arguments[0]}, resultTypes: ["violations"]}))
  .then(results => done(results.violations.map(rule => [rule.id, rule.nodes.map(node => node.target.join(" "))])))
  .catch(error => done([["axe-error", [String(error)]]]));
"""


def test_every_page_of_the_book_passes_axes_wcag_21_aa_rules_in_both_themes(browser: object, built_book: Path) -> None:
    """Issue 34, item 6: axe-core's WCAG 2.1 A and AA rules on every page of both editions, in the light and the dark theme."""
    from selenium.webdriver.common.by import By

    assert AXE.is_file(), "install axe-core from package.json: npm ci (make test does)"
    axe = AXE.read_text(encoding="utf-8")
    browser.set_script_timeout(120)
    pages = sorted(page for language, _, _ in LANGUAGES for page in (built_book / language).glob("*.html"))
    assert len(pages) > 20, pages
    failures = []
    for page in pages:
        if page.name == "search.html":  # with its results, as test_the_books_search_finds_the_chapter_that_teaches_a_term opens it
            word, chapter = SEARCHES[page.parent.name]
            browser.get(f"{page.as_uri()}?q={quote(word)}")
            result = f'#search-results a[href*="{chapter}.html"]'
            wait_for(lambda result=result: browser.find_elements(By.CSS_SELECTOR, result), what=f"a search result for {word}")
        else:
            browser.get(page.as_uri())
        browser.execute_script(axe)
        for theme in ("light", "dark"):  # the theme's own switch sets these two attributes (pydata-sphinx-theme)
            browser.execute_script("document.documentElement.dataset.theme = arguments[0]; document.documentElement.dataset.mode = arguments[0];", theme)
            for rule, targets in browser.execute_async_script(_AXE_RUN, WCAG_21_AA, SAME_IN_BOTH if page.parent.name != "en" else []):
                more = f" (and {len(targets) - 1} more)" if len(targets) > 1 else ""
                failures.append(f"{page.relative_to(built_book)} ({theme}): {rule} at {targets[0]}{more}")
    assert not failures, "\n".join(failures)


def test_the_book_opens_its_licence_from_the_footer(browser: object, built_book: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get((built_book / "en" / "08_capstone.html").as_uri())
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


def test_jupyterlab_in_chinese_opens_the_translated_copy_of_notebook_00(browser: object) -> None:
    """``make lab ARGS="--lang zh_CN"``: JupyterLab's menus from its zh-CN language pack, the chapter's prose from the .po files."""
    from selenium.webdriver.common.by import By

    port, token = free_port(), secrets.token_urlsafe(16)
    with lab.lab_server(port, token, language="zh_CN") as base:
        browser.get(f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}")
        title = wait_for(
            lambda: [element for element in browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedMarkdown h1") if element.text.startswith("00 · ")],
            timeout=90,
            what="notebook 00's title in JupyterLab",
        )[0]
        assert _CJK.search(title.text), title.text
        menus = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, ".lm-MenuBar").text, what="the menu bar")
        assert "文件" in menus, menus  # "File" in the zh-CN language pack
        screenshot(browser, "jupyterlab_zh_CN_00_start_here.png")
