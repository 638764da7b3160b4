"""Shared test setup: a figure backend with no window, and reproducible seeds."""

import matplotlib
import pytest
import torch

# Only the unit tests draw off-screen; the notebooks keep their inline backend.
matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)

# The real-browser tests (tests/browser) start JupyterLab and Chromium: `make test-browser` runs them on
# their own. `pytest tests` and `make test-unit` leave them out; `pytest tests/browser` still runs them.
# The same for the course on a JupyterHub (tests/hub, `make test-hub`), the book (tests/book, `make test-book`),
# the lecture decks (tests/slides, `make test-slides`) and the autograded course (tests/autograde, `make test-course`).
collect_ignore = ["browser", "hub", "book", "slides", "autograde"]
