"""The lecture decks (``make slides``, ``make slides-zh``) and the builds for a graded course (``make student``),
read in headless Chromium (Debian's ``chromium`` driven by Playwright, as in tests/book) and searched for solutions.

``make test-slides`` builds them all first. The decks are opened from the disk (file://): they load nothing else.

Environment variable:
    CHROMIUM   path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
"""

from __future__ import annotations

import sys
from pathlib import Path

from chromium_fixtures import browser, chromium_executable  # noqa: F401 - fixtures, shared with tests/book

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tools/ is not installed
