"""The collection as a reader meets it: the reader edition chapters/ in JupyterLab in a real (headless) Chromium.

Run with ``make test-browser`` (not part of ``make test-unit``). Screenshots of each step are saved in
``build/screenshots/``. What chapter 05's explorer promises the test (``mha_chapters.explorer.explorer()``):

- the container has the DOM class ``mha-explorer``; each control has ``mha-control-<description>``:
  sliders ``num_hiddens``, ``num_heads`` (a SelectionSlider over the divisors of num_hiddens), ``batch_size``,
  ``num_queries``, ``num_kvpairs``, ``valid_len``, and the checkbox ``causal``;
- ``mha-trace`` is an HTML table, one ``<tr>`` per step, the shape as a tuple in the last column; the split
  heads rows read ``(batch_size*num_heads, n, head_dim)``, the weights row
  ``(batch_size*num_heads, num_queries, num_kvpairs)``;
- ``mha-heatmaps`` is one inline SVG (``mha_chapters.explorer.heatmaps_svg``) with one ``<g id="head-h">``
  per head, holding exactly one ``<image>``: a PNG of the first sequence's weights on a fixed 0..1 scale,
  row i = query i, and a masked key in one grey that the scale never takes, the same in every panel;
- a change of a control re-renders these in place.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import numpy as np
import psutil
import pytest
from lab_helpers import (
    LabServer,
    answer_the_first_exercise,
    broken_images,
    control,
    error_texts,
    heatmap_panels,
    http_status,
    open_notebook,
    panel_cells,
    press_on_slider,
    reader_page,
    run_all_cells,
    screenshot,
    screenshot_on_failure,
    slider_at_end,
    slider_values,
    stdout_by_cell,
    stored_stdout_by_cell,
    trace_shapes,
)
from playwright.sync_api import Browser, Locator, Page, expect

ROOT = Path(__file__).resolve().parents[2]
EXPLORER = "05_interactive_explorer.ipynb"
SPLITTING_HEADS = "03_splitting_heads.ipynb"
MASKS_AS_FUNCTIONS = "11_masks_as_functions.ipynb"


# --- the server -----------------------------------------------------------------------------------------------

def test_server_listens_on_loopback_only(lab_server: LabServer):
    addresses = {connection.laddr.ip for connection in psutil.Process(lab_server.pid).net_connections("inet")
                 if connection.status == psutil.CONN_LISTEN}
    assert addresses == {"127.0.0.1"}


def test_server_refuses_requests_without_the_right_token(lab_server: LabServer):
    assert http_status(f"{lab_server.url}api/contents") == 403
    assert http_status(f"{lab_server.url}api/contents?token=not-{lab_server.token}") == 403
    assert http_status(f"{lab_server.url}lab") == 302  # to the login page, which asks for the token
    assert http_status(f"{lab_server.url}api/contents?token={lab_server.token}") == 200


def test_notebooks_run_in_the_project_python(lab_server: LabServer):
    url = f"{lab_server.url}api/kernelspecs?token={lab_server.token}"
    with urllib.request.urlopen(url, timeout=10) as response:
        specs = json.load(response)
    python = specs["kernelspecs"][specs["default"]]["spec"]["argv"][0]
    if python in ("python", "python3"):  # jupyter_client starts these with the server's own interpreter
        python = psutil.Process(lab_server.pid).cmdline()[0]
    assert Path(python).parent == ROOT / ".venv" / "bin", f"the kernel runs {python}, not the project's .venv"


# --- chapter 03: the 10..27 trace -----------------------------------------------------------------------------

def test_chapter_03_shows_the_10_to_27_trace_as_stored(lab_server: LabServer, browser: Browser, screenshots: Path):
    with reader_page(browser, screenshots / "FAILED-03.png") as page:
        panel = open_notebook(page, lab_server.lab_url(SPLITTING_HEADS))
        run_all_cells(page, panel, lab_server.root / SPLITTING_HEADS)
        assert error_texts(panel) == []
        assert broken_images(panel) == 0

        shown = stdout_by_cell(panel)
        stored = stored_stdout_by_cell(lab_server.root / SPLITTING_HEADS)
        assert len(shown) == len(stored)
        for index, (seen, expected) in enumerate(zip(shown, stored, strict=True)):
            assert seen.rstrip() == expected.rstrip(), f"cell {index} prints something else in JupyterLab"

        # The reader's proof that splitting heads only regroups numbers: 10..27 row by row, then head by head.
        page_text = "\n".join(shown)
        row_major = "tensor([10, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 23, 24, 25, 26, 27])"
        head_major = "tensor([10, 11, 14, 15, 12, 13, 16, 17, 20, 21, 24, 25, 22, 23, 26, 27])"
        assert row_major in page_text and head_major in page_text
        assert page_text.index(row_major) < page_text.index(head_major)

        output = panel.locator(".jp-OutputArea-output", has_text=head_major)
        screenshot(output.locator("xpath=ancestor::*[contains(@class, 'jp-CodeCell')]"),
                   screenshots / "03-1-flatten-10-to-27.png")
        screenshot(panel.locator(".jp-OutputArea-output img").first, screenshots / "03-2-figure.png")
        answer_the_first_exercise(page, panel, lab_server.root / SPLITTING_HEADS, screenshots, "03")


def test_chapter_11_runs_flex_attention_in_the_browser_as_stored(lab_server: LabServer, browser: Browser,
                                                                screenshots: Path):
    notebook = lab_server.root / MASKS_AS_FUNCTIONS
    with reader_page(browser, screenshots / "FAILED-11.png") as page:
        panel = open_notebook(page, lab_server.lab_url(MASKS_AS_FUNCTIONS))
        run_all_cells(page, panel, notebook)
        assert error_texts(panel) == []  # no traceback and no warning (eager flex's warning is silenced on purpose)
        assert broken_images(panel) == 0

        cells = nbformat.read(notebook, as_version=4).cells
        shown, stored = stdout_by_cell(panel), stored_stdout_by_cell(notebook)
        assert len(shown) == len(stored) == len(cells)
        for index, (cell, seen, expected) in enumerate(zip(cells, shown, stored, strict=True)):
            if not cell.source.startswith("# NBVAL_IGNORE_OUTPUT"):  # a live widget prints what the reader chose
                assert seen.rstrip() == expected.rstrip(), f"cell {index} prints something else in JupyterLab"
        assert "5 mask_mods equal their dense masks" in "\n".join(shown)
        screenshot(panel.locator(".jp-OutputArea-output img").first, screenshots / "11-1-block-mask.png")


# --- chapter 05: the explorer ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explorer_page(lab_server: LabServer, browser: Browser, screenshots: Path) -> Iterator[tuple[Page, Locator]]:
    """Chapter 05 opened and run top to bottom, as a reader starts it."""
    if not (lab_server.root / EXPLORER).exists():
        pytest.fail(f"notebooks/{EXPLORER} does not exist")
    with reader_page(browser, screenshots / "FAILED-05-run-all.png") as page:
        panel = open_notebook(page, lab_server.lab_url(EXPLORER))
        run_all_cells(page, panel, lab_server.root / EXPLORER)
        assert error_texts(panel) == []
        assert broken_images(panel) == 0
        explorer = panel.locator(".mha-explorer")
        expect(explorer).to_have_count(1)
        expect(explorer.locator(".mha-heatmaps svg")).to_have_count(1)
        screenshot(explorer, screenshots / "05-1-explorer-after-run-all.png")
        yield page, explorer


def expected_shapes(values: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    folded = values["batch_size"] * values["num_heads"]
    head_dim = values["num_hiddens"] // values["num_heads"]
    return {
        "queries split into heads": (folded, values["num_queries"], head_dim),
        "keys split into heads": (folded, values["num_kvpairs"], head_dim),
        "weights": (folded, values["num_queries"], values["num_kvpairs"]),
    }


def check_explorer_matches(explorer: Locator, values: dict[str, int]) -> None:
    """The trace table and the heatmap panels agree with the slider values the reader sees."""
    heads = values["num_heads"]
    expect(explorer.locator('.mha-heatmaps svg g[id^="head-"]')).to_have_count(heads)
    expect(explorer.locator(".mha-trace")).to_contain_text(str(expected_shapes(values)["weights"]))
    shapes = trace_shapes(explorer)
    for step, shape in expected_shapes(values).items():
        assert shape in shapes, f"the trace has no {step} row {shape} for {values}: {shapes}"
    folded = [shape for shape in shapes if len(shape) == 3 and shape[0] == values["batch_size"] * heads]
    assert len(folded) >= 3, f"expected the split-heads and weights rows with {values['batch_size'] * heads} first"
    panels = heatmap_panels(explorer)
    assert [panel["id"] for panel in panels] == [f"head-{h}" for h in range(heads)]
    assert all(panel["images"] == 1 for panel in panels), "each head's panel should hold exactly one image"
    expect(explorer).to_have_count(1)  # re-rendered in place, not appended


def test_num_heads_slider_changes_the_trace_and_the_panels(explorer_page, screenshots: Path):
    page, explorer = explorer_page
    with screenshot_on_failure(page, screenshots / "FAILED-05-num_heads.png"):
        start = slider_values(explorer)
        check_explorer_matches(explorer, start)
        screenshot(explorer, screenshots / "05-2-num_heads-before.png")

        # A keyboard reader: focus the handle, one step up (or down when it is already at the end), then back.
        forward, back = ("ArrowRight", "ArrowLeft")
        if slider_at_end(explorer, "num_heads"):
            forward, back = back, forward
        press_on_slider(page, explorer, "num_heads", forward)
        moved = slider_values(explorer)
        assert moved["num_heads"] != start["num_heads"]
        assert start["num_hiddens"] % moved["num_heads"] == 0, "num_heads offers only divisors of num_hiddens"
        check_explorer_matches(explorer, moved)
        assert expected_shapes(start)["weights"] not in trace_shapes(explorer), "the old weights shape is still shown"
        screenshot(explorer, screenshots / f"05-3-num_heads-{moved['num_heads']}.png")

        press_on_slider(page, explorer, "num_heads", back)
        assert slider_values(explorer) == start
        check_explorer_matches(explorer, start)
        screenshot(explorer, screenshots / f"05-4-num_heads-back-to-{start['num_heads']}.png")


def test_causal_blanks_the_upper_triangle_of_every_panel(explorer_page, screenshots: Path):
    page, explorer = explorer_page
    with screenshot_on_failure(page, screenshots / "FAILED-05-causal.png"):
        checkbox = control(explorer, "causal").locator("input[type=checkbox]")
        values = slider_values(explorer)
        num_queries, num_kvpairs, valid_len = values["num_queries"], values["num_kvpairs"], values["valid_len"]
        assert min(num_queries, num_kvpairs, valid_len) >= 2, f"too small to show a triangle: {values}"
        if checkbox.is_checked():
            set_checkbox(page, explorer, checkbox, False)
        upper = upper_triangle(num_queries, num_kvpairs)
        open_cells = [panel_cells(panel, num_queries, num_kvpairs) for panel in heatmap_panels(explorer)]
        screenshot(explorer, screenshots / "05-5-causal-off.png")

        set_checkbox(page, explorer, checkbox, True)
        masked_cells = [panel_cells(panel, num_queries, num_kvpairs) for panel in heatmap_panels(explorer)]
        screenshot(explorer, screenshots / "05-6-causal-on.png")
        assert len(masked_cells) == values["num_heads"]

        # Query 0 may see key 0 only: its last key has weight exactly 0, its first weight exactly 1.
        blank = masked_cells[0][0, num_kvpairs - 1]
        for head, cells in enumerate(masked_cells):
            assert (cells[0, num_kvpairs - 1] == blank).all(), f"weight 0 has another colour in head {head}"
            assert (cells[0, 0] != blank).any(), f"head {head}: query 0 on key 0 (weight 1) is drawn blank"
            is_blank = (cells == blank).all(axis=-1)
            assert is_blank[upper].all(), (
                f"head {head}: cells above the diagonal are not blank with causal on:\n{is_blank.astype(int)}")
            assert is_blank[:, valid_len:].all(), f"head {head}: padded keys (from valid_len on) are not blank"
        # ... while without the mask some key after its query (and before valid_len) had a weight above 0.
        assert shows_a_weight_above_the_diagonal(open_cells, blank, valid_len), (
            "the upper triangle was blank already without the causal mask")
        for head, cells in enumerate(open_cells):
            assert (cells[:, valid_len:] == blank).all(), f"head {head}: padded keys are not blank without causal"

        set_checkbox(page, explorer, checkbox, False)  # and back, as a reader would leave it
        reopened = [panel_cells(panel, num_queries, num_kvpairs) for panel in heatmap_panels(explorer)]
        assert shows_a_weight_above_the_diagonal(reopened, blank, valid_len)
        screenshot(explorer, screenshots / "05-7-causal-off-again.png")


def upper_triangle(num_queries: int, num_kvpairs: int) -> np.ndarray:
    """True for the cells above the diagonal: key j comes after query i."""
    return np.triu(np.ones((num_queries, num_kvpairs), dtype=bool), k=1)


def shows_a_weight_above_the_diagonal(panels: list[np.ndarray], blank: np.ndarray, valid_len: int) -> bool:
    num_queries, num_kvpairs = panels[0].shape[:2]
    visible = upper_triangle(num_queries, num_kvpairs)
    visible[:, valid_len:] = False
    return any((~(cells == blank).all(axis=-1))[visible].any() for cells in panels)


def set_checkbox(page: Page, explorer: Locator, checkbox: Locator, checked: bool) -> None:
    """Click the checkbox like a reader, then wait until the kernel has drawn new heatmaps."""
    before = heatmap_panels(explorer)[0]["href"]
    checkbox.set_checked(checked)
    page.wait_for_function(
        """([heatmaps, old]) => {
            const image = heatmaps.querySelector('svg g[id="head-0"] image');
            const href = image && (image.getAttribute('href')
                                   || image.getAttributeNS('http://www.w3.org/1999/xlink', 'href'));
            return href !== null && href !== old;
        }""",
        arg=[explorer.locator(".mha-heatmaps").element_handle(), before], polling=250)  # the SVG is replaced
