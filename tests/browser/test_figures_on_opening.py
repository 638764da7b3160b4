"""Every stored figure is drawn when a reader opens a chapter, before running anything (issue 35).

A reader's notebooks are untrusted: cloned, downloaded or opened on Binder, they are not signed in the reader's
Jupyter database. JupyterLab does not draw the ``image/svg+xml`` output of an untrusted notebook (an SVG can carry
scripts); it shows the next type the output offers that is safe: ``image/png`` when the output stores one, else its
``text/plain``, "<Figure size 900x550 with 1 Axes>". So every figure must store a PNG beside its SVG.

The test opens every chapter of both reader editions, one after the other in one JupyterLab tab per language, as the
reader's JupyterLab serves them (the ``lab_server`` fixtures of conftest.py, which start with an empty Jupyter data
folder: no signature, so no notebook is trusted; the test checks that the server marks them untrusted), with
JupyterLab's default settings for showing a notebook. It runs no cell, scrolls to every picture, and counts the
pictures drawn (decoded, with a size, on the screen) against the figures the file stores, cell by cell. The counts
are printed, one line per chapter. To try it on another folder or configuration, point the fixture named in
``READER_LABS`` at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_helpers import (
    LabServer,
    drawn_figures,
    new_page,
    screenshot_on_failure,
    show_notebook,
    start_lab,
    stored_figures,
)
from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(path.name for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# The reader's JupyterLab in each language: the conftest.py fixture that serves it
READER_LABS = {"en": "lab_server", "zh_CN": "lab_server_zh"}
NOTEBOOK_SETTINGS = "@jupyterlab/notebook-extension:tracker"


@pytest.fixture(scope="module", params=list(READER_LABS))
def reader_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, LabServer]]:
    """The language and the server of a reader's JupyterLab, showing notebooks with JupyterLab's own defaults.

    (The other browser tests keep every cell rendered, ``windowingMode: none``; they get that back afterwards.)
    """
    server = request.getfixturevalue(READER_LABS[request.param])
    server.set_settings(NOTEBOOK_SETTINGS, {})
    try:
        yield request.param, server
    finally:
        server.set_settings(NOTEBOOK_SETTINGS, {"windowingMode": "none"})  # as conftest.LAB_SETTINGS has it


@pytest.fixture(scope="module")
def reader_tab(reader_server: tuple[str, LabServer], browser: Browser) -> Iterator[Page]:
    """One browser tab with the reader's JupyterLab, in which each chapter is opened in turn."""
    page = new_page(browser)
    try:
        start_lab(page, reader_server[1])
        yield page
    finally:
        page.close()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda name: name[:2])
def test_every_stored_figure_is_drawn_when_the_chapter_is_opened(reader_server: tuple[str, LabServer], chapter: str,
                                                                   reader_tab: Page, screenshots: Path,
                                                                   capsys: pytest.CaptureFixture):
    language, server = reader_server
    notebook = server.root / chapter
    stored = stored_figures(notebook)
    served = server.served_notebook(chapter)
    trust = {cell["metadata"].get("trusted") for cell in served["cells"] if cell["cell_type"] == "code"}
    assert trust == {False}, f"the server trusts {chapter} ({trust}), as it never trusts a reader's clone"
    try:
        with screenshot_on_failure(reader_tab, screenshots / f"FAILED-figures-{language}-{chapter[:2]}.png"):
            found = drawn_figures(show_notebook(reader_tab, notebook), notebook)
    finally:
        server.shut_down_kernels(chapter)  # opening it started a kernel; nothing ran in it
    drawn = {index: cell["drawn"] for index, cell in found.items() if cell["drawn"]}
    counts = f"{sum(drawn.values()):2} of {sum(stored.values()):2} stored figures drawn"
    with capsys.disabled():  # the counts, also when the test passes
        print(f"\n  {language:5} {chapter[:2]}: {counts}", end="")
    missing = {index: found[index]["shown"] for index in stored if drawn.get(index, 0) != stored[index]}
    assert drawn == stored, (
        f"{counts} when {language} {chapter} is opened untrusted; the cells whose figures are missing show instead: "
        f"{missing}")
