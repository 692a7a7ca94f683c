"""The browser the judging page's tests open it in (headless Chromium, `chromium.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.judging.chromium import start_chrome


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless Chromium with a fresh profile, quit after the test."""
    driver = start_chrome(tmp_path / "profile")
    try:
        yield driver
    finally:
        driver.quit()
