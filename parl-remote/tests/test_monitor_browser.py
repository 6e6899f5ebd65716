"""The web monitor in a real headless Chromium (Debian's chromium and chromium-driver, driven by
selenium): every actor state, the error text and traceback, the log tail. ``nox -s browser``
installs what it needs and keeps the screenshot under its tmp dir (``MONITOR_SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import parl.remote

import pytest

from .monitor_actors import three_states

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed: `nox -s browser` installs it"
)
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

LAPTOP = (1366, 900)


@pytest.fixture
def browser() -> Iterator[Any]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail(
            "the browser test needs Debian's chromium and chromium-driver: "
            "`apt-get install -y chromium chromium-driver` (or run `nox -s browser` as root)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={LAPTOP[0]},{LAPTOP[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver))
    chrome.set_page_load_timeout(30)
    yield chrome
    chrome.quit()


def row_text(chrome: Any, state: str) -> str:
    """The text of the one actor row in ``state`` ("" if none)."""
    rows = chrome.find_elements(By.CSS_SELECTOR, f'#actors tbody tr[data-state="{state}"]')
    return str(rows[0].text) if len(rows) == 1 else ""


def click_row(chrome: Any, state: str) -> bool:
    chrome.find_element(By.CSS_SELECTOR, f'#actors tbody tr[data-state="{state}"]').click()
    return True


def shows(chrome: Any, element_id: str, text: str) -> bool:
    return text in chrome.find_element(By.ID, element_id).text


def test_the_page_shows_each_state_the_error_and_the_log(
    start_cluster: Any, browser: Any, tmp_path: Path
) -> None:
    cluster = start_cluster(3, monitor_port=0)
    base = f"http://127.0.0.1:{cluster.monitor['port']}/"
    browser.get(base)
    assert "monitor needs its token" in browser.find_element(By.TAG_NAME, "body").text

    parl.remote.connect(cluster.address)
    greeter, faulty, doomed_id = three_states()
    browser.get(cluster.monitor_url)
    assert browser.current_url == base  # the token left the address bar for a cookie
    # The page redraws every 2 s, so every look finds its element afresh (a stale one is retried).
    wait = WebDriverWait(
        browser, 20, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)
    )
    wait.until(lambda c: all(row_text(c, s) for s in ("running", "raised", "died")))

    raised = wait.until(lambda c: row_text(c, "raised"))
    assert "Faulty" in raised and "ValueError: boom: the monitor shows this traceback" in raised
    died = wait.until(lambda c: row_text(c, "died"))
    assert "Doomed" in died and doomed_id in died and "SIGKILL" in died
    assert "Greeter" in wait.until(lambda c: row_text(c, "running"))
    wait.until(lambda c: shows(c, "cluster", "CPUs used / vacant\n2 / 1"))
    wait.until(lambda c: shows(c, "address", cluster.address))
    wait.until(lambda c: shows(c, "clients", str(os.getpid())))
    wait.until(lambda c: shows(c, "workers", "2 / 3") and shows(c, "workers", "ok"))

    wait.until(lambda c: click_row(c, "raised"))
    wait.until(lambda c: shows(c, "detail-error", "Traceback (most recent call last)"))
    traceback = 'raise ValueError("boom: the monitor shows this traceback")'
    wait.until(lambda c: shows(c, "detail-error", traceback))
    wait.until(lambda c: shows(c, "detail-log", "boom: the monitor shows this traceback"))

    wait.until(lambda c: click_row(c, "running"))
    wait.until(lambda c: shows(c, "detail-log", "hello monitor from the greeter's log"))
    wait.until(lambda c: not c.find_element(By.ID, "detail-error-box").is_displayed())

    wait.until(lambda c: click_row(c, "raised"))
    wait.until(lambda c: shows(c, "detail-error", "Traceback"))
    shots = Path(os.environ.get("MONITOR_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(shots / "xparl-monitor.png"))
    problems = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not [p for p in problems if "401" not in p["message"]], problems
    del greeter, faulty
