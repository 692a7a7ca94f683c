"""Headless Chromium driven by selenium and Debian's chromium-driver: the judging page's browser
tests and the docs' screenshot (`benchmarks/judging_page_screenshot.py`) open pages with it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

from tests.browser import CHROMIUM, CHROMIUM_FLAGS

CHROMEDRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
except ImportError:  # the browser tests skip
    webdriver = None  # type: ignore[assignment]
    CHROMEDRIVER = None

AVAILABLE = CHROMIUM is not None and CHROMEDRIVER is not None
WHY_NOT = "needs Debian's chromium and chromium-driver: apt-get install -y chromium-driver"

# Every video of the page: whether it has its metadata, its duration and any error.
VIDEOS_STATE = """
return Array.from(document.querySelectorAll('video')).map(v => ({
  src: v.currentSrc, readyState: v.readyState, duration: v.duration,
  error: v.error ? v.error.code : null, width: v.videoWidth}));
"""


def start_chrome(profile: Path, size: tuple[int, int] = (1280, 900)) -> Any:
    """A headless Chromium with a new empty profile in `profile`, videos allowed to autoplay."""
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or "chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag.replace("--headless", "--headless=new"))
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--autoplay-policy=no-user-gesture-required")
    options.add_argument(f"--window-size={size[0]},{size[1]}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    return driver


def wait_for_videos(driver: Any, timeout_s: float = 20) -> list[dict[str, Any]]:
    """The page's videos once each has loaded its metadata (a duration above 0); an
    AssertionError with what the page showed where one failed or none loaded in time."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    seen: list[Any] = []

    def loaded(d: Any) -> list[dict[str, Any]] | Literal[False]:
        state: list[dict[str, Any]] = d.execute_script(VIDEOS_STATE)
        seen[:] = [state]
        assert all(v["error"] is None for v in state), state
        ready = state and all(v["readyState"] >= 1 and (v["duration"] or 0) > 0 for v in state)
        return state if ready else False

    try:
        state: list[dict[str, Any]] = WebDriverWait(driver, timeout_s).until(loaded)
    except TimeoutException:
        raise AssertionError(
            f"the videos did not load: {seen} {driver.page_source[:3000]}"
        ) from None
    return state


def click_and_wait_for_next_page(driver: Any, element: Any, timeout_s: float = 20) -> None:
    """Click `element`, a form's submit button, and wait until the page it was on is replaced
    and the next one has loaded.

    Selenium's `staleness_of` knows only the W3C stale-element error, but chromedriver answers
    an element of a page that is being torn down with an inspector error ("Node with given id
    does not belong to the document"): both mean the old page is gone."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def replaced(_: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise
        return False

    element.click()
    WebDriverWait(driver, timeout_s).until(replaced)
    # The old page is gone; the next one may still be parsing (CI found `#done` missing).
    WebDriverWait(driver, timeout_s, ignored_exceptions=[WebDriverException]).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
