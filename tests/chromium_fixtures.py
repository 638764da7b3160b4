"""Debian's Chromium driven by Playwright: the fixtures the real-browser tests (tests/browser) and the book's
(tests/book) share. Each conftest imports them by name; Playwright never downloads a browser here.

Environment variable:
    CHROMIUM  path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

# Without Playwright the run stops with one clear message, not an import error.
try:
    from playwright.sync_api import Browser, sync_playwright
except ImportError as error:  # pragma: no cover - depends on the environment
    raise pytest.UsageError("the browser tests need Playwright: `make test-browser` and `make test-book` install it "
                            "(the `browser` extra)") from error


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    """Debian's Chromium (``apt-get install chromium``)."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is not installed: `apt-get install chromium` (or set CHROMIUM=/path/to/chromium)")
    return path


@pytest.fixture(scope="session")
def browser(chromium_executable: str) -> Iterator[Browser]:
    """One headless Chromium for the whole session."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable, headless=True)
        try:
            yield browser
        finally:
            browser.close()
