"""The built book (``make book``, tools/book) served on 127.0.0.1, and a headless Chromium to read it (make test-book).

The site is served from a free port by Python's own http.server, in a thread of the test process: a static site
needs nothing more, and the test sees the pages as a reader's browser gets them from any web server. The browser is
Debian's ``chromium`` driven by Playwright (never downloaded), as in tests/browser.

Environment variables:
    BOOK_DIR   the built book to test (default: build/book, what ``make book`` writes)
    CHROMIUM   path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from chromium_fixtures import browser, chromium_executable  # noqa: F401 - fixtures, shared with tests/browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots" / "book"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature of the base class
        pass


@pytest.fixture(scope="session")
def book_dir() -> Path:
    folder = Path(os.environ.get("BOOK_DIR", ROOT / "build" / "book"))
    if not (folder / "index.html").is_file():
        pytest.fail(f"{folder}/index.html is missing: build the book first (`make book`, or `make test-book`)")
    return folder


@pytest.fixture(scope="session")
def site(book_dir: Path) -> Iterator[str]:
    """The base address of the book served from 127.0.0.1 on a free port, e.g. http://127.0.0.1:41234/."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(book_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
