"""What a reader does in JupyterLab, as Playwright steps, and how the test reads what the page shows.

Every wait is on a condition of the page (a prompt number, a widget readout, a count of panels),
never a fixed sleep.
"""

from __future__ import annotations

import base64
import io
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
from PIL import Image
from playwright.sync_api import Browser, Locator, Page, expect

ACTION_TIMEOUT_MS = 60_000  # one click, key press or expectation: a hang fails in a minute, not an hour
KERNEL_READY_TIMEOUT_MS = 120_000  # a cold kernel that imports torch on 2 busy cores
RUN_ALL_TIMEOUT_MS = 300_000  # a chapter runs in under 60 s alone; the browser and the server share the cores
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
STDOUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]'
SHAPE = re.compile(r"\((\d+(?:,\s*\d+)*),?\)")

expect.set_options(timeout=ACTION_TIMEOUT_MS)  # Playwright's default of 5 s is too short for a busy 2-core machine


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab server."""

    url: str  # http://127.0.0.1:PORT/ (no token)
    token: str
    root: Path  # the folder it serves
    pid: int
    log: Path  # what the server printed: what a reader sees in the terminal

    def lab_url(self, notebook: str) -> str:
        """The address that opens ``notebook`` in JupyterLab, signed in with the token."""
        return f"{self.url}lab/tree/{notebook}?reset&token={self.token}"

    def set_settings(self, plugin: str, values: dict) -> None:
        """Replace the user settings of ``plugin`` (e.g. ``@jupyterlab/notebook-extension:tracker``); pages
        opened afterwards use them."""
        request = urllib.request.Request(
            f"{self.url}lab/api/settings/{plugin}", method="PUT",
            data=json.dumps({"raw": json.dumps(values)}).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status in (200, 204), f"PUT settings of {plugin}: HTTP {response.status}"

    def api(self, path: str, method: str = "GET"):
        """The JSON answer of the server's REST API at ``path`` (e.g. ``api/sessions``); None when it has no body."""
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def served_notebook(self, notebook: str) -> dict:
        """``notebook`` as the server hands it to JupyterLab, with the trust it marked on each code cell
        (``metadata.trusted``: True only when the notebook's signature is in the server's database)."""
        return self.api(f"api/contents/{notebook}?type=notebook&content=1")["content"]

    def shut_down_kernels(self, notebook: str) -> None:
        """End the sessions (and so the kernels) that opening ``notebook`` started."""
        for session in self.api("api/sessions"):
            if session["path"] == notebook:
                self.api(f"api/sessions/{session['id']}", method="DELETE")


def http_status(url: str) -> int:
    """HTTP status of a GET without following redirects (a redirect to the login page stays a 302)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def new_page(browser: Browser) -> Page:
    """A page tall enough to show the whole explorer in one screenshot."""
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    return page


# --- JupyterLab -----------------------------------------------------------------------------------------------

def open_notebook(page: Page, lab_url: str) -> Locator:
    """Open a notebook and wait until its kernel is idle; returns the notebook panel."""
    page.goto(lab_url)
    # The server exposes the app (--LabApp.expose_app_in_browser) only so the test knows when JupyterLab has
    # finished starting: before that, its keyboard shortcuts are not all bound yet.
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")
    panel = page.locator(".jp-NotebookPanel")
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute(
        "data-status", "idle", timeout=KERNEL_READY_TIMEOUT_MS)
    return panel


def exactly(text: str) -> re.Pattern:
    return re.compile(rf"^{re.escape(text)}$")


def menu_command(page: Page, menu: str, command: str) -> None:
    """Click a menu of JupyterLab's menu bar, then one of its commands, as a reader does."""
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=exactly(menu)).click()
    page.locator(".lm-Menu .lm-Menu-itemLabel", has_text=exactly(command)).click()
    expect(page.locator(".lm-Menu")).to_have_count(0)  # the menu closed: the command ran


# The menu commands run_all_cells clicks, as JupyterLab labels them in English and with its Chinese language pack
MENUS = {
    "en": {"Edit": "Edit", "Clear Outputs of All Cells": "Clear Outputs of All Cells", "Run": "Run",
           "Run All Cells": "Run All Cells"},
    "zh_CN": {"Edit": "编辑", "Clear Outputs of All Cells": "清除所有单元格的输出", "Run": "运行",
              "Run All Cells": "运行所有单元格"},
}


def run_all_cells(page: Page, panel: Locator, notebook: Path, language: str = "en") -> None:
    """Clear the stored outputs, Run > Run All Cells, and wait until every code cell has run, in order.

    ``language`` is the language of JupyterLab's menus (``MENUS``)."""
    menu = MENUS[language]
    # A folded cell (``jupyter.source_hidden``: tools/colab.py's install cell) shows no prompt; JupyterLab draws a
    # placeholder where its input was, and Run All still runs it.
    code_cells = sum(cell.cell_type == "code" and not cell.metadata.get("jupyter", {}).get("source_hidden")
                     for cell in nbformat.read(notebook, as_version=4).cells)
    prompts = panel.locator(".jp-CodeCell .jp-InputArea-prompt")
    expect(prompts).to_have_count(code_cells)  # every cell is in the page: no virtual scrolling
    panel.locator(".jp-Cell").first.click()  # the notebook has the focus, so its commands are enabled
    # The file stores outputs and prompt numbers of its own: clear them, so what the test reads next comes
    # from this kernel.
    menu_command(page, menu["Edit"], menu["Clear Outputs of All Cells"])
    expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)
    menu_command(page, menu["Run"], menu["Run All Cells"])
    # Every cell has run, in order: consecutive prompt numbers. They start at 1 in a fresh kernel, later when
    # another test ran this notebook before in the same kernel (JupyterLab keeps a notebook's kernel).
    page.wait_for_function(
        """(panel) => {
            const numbers = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                .map((prompt) => /^\\[(\\d+)\\]:$/.exec(prompt.textContent.trim()));
            return numbers.every((match) => match !== null)
                && numbers.every((match, i) => Number(match[1]) === Number(numbers[0][1]) + i);
        }""",
        arg=panel.element_handle(), timeout=RUN_ALL_TIMEOUT_MS, polling=500)
    expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle")


def error_texts(panel: Locator) -> list[str]:
    """Tracebacks and warnings shown in the notebook (both are rendered as stderr)."""
    return panel.locator(STDERR).all_inner_texts()


def stdout_by_cell(panel: Locator) -> list[str]:
    """For each cell of the notebook, in order, the printed text the reader sees under it."""
    return panel.evaluate(
        f"""(panel) => [...panel.querySelectorAll('.jp-Cell')].map((cell) =>
            [...cell.querySelectorAll('{STDOUT}')].map((output) => output.textContent).join(''))""")


def stored_stdout_by_cell(notebook: Path) -> list[str]:
    """The same, from the outputs stored in the .ipynb file."""
    return ["".join(output.text for output in getattr(cell, "outputs", []) if output.get("name") == "stdout")
            for cell in nbformat.read(notebook, as_version=4).cells]


def broken_images(panel: Locator) -> int:
    """How many output images failed to load (a PNG that is not there, or not a PNG)."""
    return panel.evaluate(
        """(panel) => [...panel.querySelectorAll('.jp-OutputArea-output img')]
            .filter((img) => !img.complete || img.naturalWidth === 0).length""")


# --- figures as a reader sees them on opening a chapter -------------------------------------------------------

def stored_figures(notebook: Path) -> dict[int, int]:
    """Cell index -> how many figures the file stores in that cell's outputs (an output with any image/ type)."""
    cells = nbformat.read(notebook, as_version=4).cells
    counts = {index: sum(any(kind.startswith("image/") for kind in output.get("data", {}))
                         for output in cell.get("outputs", []))
              for index, cell in enumerate(cells)}
    return {index: count for index, count in counts.items() if count}


def start_lab(page: Page, server: LabServer) -> None:
    """Load JupyterLab in ``page`` with a fresh workspace (no document open) and wait until it has started."""
    page.goto(f"{server.url}lab?reset&token={server.token}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")


def show_notebook(page: Page, notebook: Path) -> Locator:
    """Open ``notebook`` (its path on the server: its name) in the JupyterLab of ``page``, in place of what is open
    there, as a reader opens it from the file browser; nothing is run. Waits until every cell is in the page and
    returns the notebook panel."""
    panel_id = page.evaluate("""async (path) => {
        const app = window.jupyterapp;
        await app.commands.execute('application:close-all');
        const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
        return panel.id;
    }""", notebook.name)
    panel = page.locator(f".jp-NotebookPanel[id='{panel_id}']")
    expect(panel).to_be_visible()
    cells = len(nbformat.read(notebook, as_version=4).cells)
    expect(panel.locator(".jp-Cell")).to_have_count(cells)  # every cell is in the page: no virtual scrolling
    return panel


# Resolves once each given cell shows at least as many outputs besides its printed text as the file stores.
OUTPUTS_SHOWN = """([panel, expected]) => {
    const cells = panel.querySelectorAll('.jp-Cell');
    const streams = ['application/vnd.jupyter.stdout', 'application/vnd.jupyter.stderr'];
    return Object.entries(expected).every(([index, count]) => [...cells[index].querySelectorAll(
        '.jp-OutputArea-output')].filter((output) => !streams.includes(output.dataset.mimeType)).length >= count);
}"""

# Scrolls to each picture of the outputs, as a reader scrolls down the chapter, and counts the pictures drawn: an
# <img> that decoded to a picture (JupyterLab shows PNG and SVG outputs as <img>) or an inline <svg>, with a size,
# on the screen and not hidden. Returns, for each cell that has a drawn picture or is listed in `figureCells`, the
# count and what each of its outputs shows (MIME type and the start of its text).
FIGURES_DRAWN = """async (panel, figureCells) => {
    const found = {};
    for (const [index, cell] of panel.querySelectorAll('.jp-Cell').entries()) {
        const outputs = [...cell.querySelectorAll('.jp-OutputArea-output')];
        let drawn = 0;
        for (const picture of outputs.map((output) => output.querySelector('img, svg')).filter(Boolean)) {
            picture.scrollIntoView({block: 'center'});
            if (picture instanceof HTMLImageElement) {
                await picture.decode().catch(() => null);  // a broken image rejects: naturalWidth stays 0
            }
            await new Promise((resolve) => requestAnimationFrame(resolve));  // laid out where it was scrolled to
            const box = picture.getBoundingClientRect();
            const decoded = !(picture instanceof HTMLImageElement) || picture.naturalWidth > 0;
            const onScreen = box.width > 0 && box.height > 0 && box.top < innerHeight && box.bottom > 0;
            if (decoded && onScreen && picture.checkVisibility({opacityProperty: true, visibilityProperty: true})) {
                drawn += 1;
            }
        }
        if (drawn > 0 || figureCells.includes(index)) {
            found[index] = {drawn, shown: outputs.map(
                (output) => `${output.dataset.mimeType}: ${output.textContent.trim().slice(0, 60)}`)};
        }
    }
    return found;
}"""


def drawn_figures(panel: Locator, notebook: Path) -> dict[int, dict]:
    """Cell index -> {"drawn": pictures drawn, "shown": what its outputs show}, for the cells that store figures
    and any other cell that draws a picture. Waits until the figure cells show their outputs; runs nothing."""
    cells = nbformat.read(notebook, as_version=4).cells
    figure_cells = list(stored_figures(notebook))
    expected = {index: sum(output.output_type != "stream" for output in cells[index].outputs) for index in figure_cells}
    panel.page.wait_for_function(OUTPUTS_SHOWN, arg=[panel.element_handle(), expected])
    found = panel.evaluate(FIGURES_DRAWN, figure_cells)
    return {int(index): value for index, value in found.items()}


@contextmanager
def screenshot_on_failure(page: Page, path: Path) -> Iterator[Page]:
    """Keep a picture of the page as it was when a step failed."""
    try:
        yield page
    except BaseException:
        with suppress(Exception):
            page.screenshot(path=path)
        raise


@contextmanager
def reader_page(browser: Browser, failure_screenshot: Path) -> Iterator[Page]:
    """A fresh browser tab, closed afterwards; a screenshot is kept when a step fails."""
    page = new_page(browser)
    try:
        with screenshot_on_failure(page, failure_screenshot):
            yield page
    finally:
        page.close()


def screenshot(target: Page | Locator, path: Path) -> None:
    if isinstance(target, Page):
        target.screenshot(path=path)
    else:
        target.scroll_into_view_if_needed()
        target.screenshot(path=path)


# --- the explorer of chapter 05 (the DOM it promises is listed in test_jupyterlab.py) -----------------------------

def control(explorer: Locator, name: str) -> Locator:
    return explorer.locator(f".mha-control-{name}")


def readout(explorer: Locator, name: str) -> str:
    """The value a slider shows next to it."""
    return control(explorer, name).locator(".widget-readout").inner_text().strip()


def slider_values(explorer: Locator) -> dict[str, int]:
    names = ("num_hiddens", "num_heads", "batch_size", "num_queries", "num_kvpairs", "valid_len")
    return {name: int(readout(explorer, name)) for name in names}


def press_on_slider(page: Page, explorer: Locator, name: str, key: str) -> str:
    """Focus the slider's handle like a keyboard user, press ``key``, wait for the readout to change."""
    before = readout(explorer, name)
    handle = control(explorer, name).locator(".noUi-handle")
    handle.focus()
    expect(handle).to_be_focused()
    page.keyboard.press(key)
    expect(control(explorer, name).locator(".widget-readout")).not_to_have_text(before)
    return readout(explorer, name)


def slider_at_end(explorer: Locator, name: str) -> bool:
    handle = control(explorer, name).locator(".noUi-handle")
    return float(handle.get_attribute("aria-valuenow")) >= float(handle.get_attribute("aria-valuemax"))


def trace_shapes(explorer: Locator) -> list[tuple[int, ...]]:
    """The shape column of the trace table, one tuple per step."""
    rows = explorer.locator(".mha-trace tbody tr")
    found = []
    for text in rows.evaluate_all("(rows) => rows.map((row) => row.cells[row.cells.length - 1].textContent)"):
        match = SHAPE.search(text)
        assert match, f"the shape column of the trace shows {text!r}, not a tuple of numbers"
        found.append(tuple(int(number) for number in match.group(1).split(",")))
    return found


def heatmap_panels(explorer: Locator) -> list[dict]:
    """Each head's panel in the heatmap SVG: its id, the image's data URL and its SVG transform."""
    return explorer.locator(".mha-heatmaps svg").evaluate(
        """(svg) => [...svg.querySelectorAll('g[id^="head-"]')].map((group) => {
            const images = group.querySelectorAll('image');
            const image = images[0];
            return {
                id: group.id,
                images: images.length,
                href: image ? (image.getAttribute('href')
                               || image.getAttributeNS('http://www.w3.org/1999/xlink', 'href')) : null,
                transform: image ? (image.getAttribute('transform') || '') : '',
            };
        })""")


def panel_cells(panel: dict, num_queries: int, num_kvpairs: int) -> np.ndarray:
    """The RGBA colour at the centre of each query-key cell of one head's heatmap, shape (queries, keys, 4).

    The explorer's PNG has query 0 in its top row; an image flipped by a ``transform="scale(1 -1) ..."``
    (as matplotlib writes them) is flipped back here, so row 0 is query 0 as the reader sees it.
    """
    prefix = "data:image/png;base64,"
    assert panel["href"] and panel["href"].startswith(prefix), f"{panel['id']} has no inline PNG image"
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(panel["href"][len(prefix):]))).convert("RGBA"))
    scale = re.search(r"scale\(\s*([-\d.e]+)[\s,]+([-\d.e]+)\s*\)", panel["transform"])
    if scale and float(scale.group(2)) < 0:
        pixels = pixels[::-1]
    if scale and float(scale.group(1)) < 0:
        pixels = pixels[:, ::-1]
    height, width = pixels.shape[:2]
    assert height >= num_queries and width >= num_kvpairs, (
        f"{panel['id']}'s image is {height}x{width} pixels for {num_queries} queries x {num_kvpairs} keys")
    rows = ((np.arange(num_queries) + 0.5) * height / num_queries).astype(int)
    columns = ((np.arange(num_kvpairs) + 0.5) * width / num_kvpairs).astype(int)
    return pixels[rows][:, columns]


# What the first exercise of a reader chapter shows in each language: the verdicts and the collapsed solution's summary
EXERCISE_TEXT = {
    "en": {"not yet": "❌ Not yet", "correct": "✅ Correct", "summary": "Show a solution"},
    "zh_CN": {"not yet": "❌ 还不对", "correct": "✅ 正确", "summary": "显示参考答案"},
}


def answer_the_first_exercise(page: Page, panel: Locator, notebook: Path, screenshots: Path, prefix: str,
                              language: str = "en") -> None:
    """The checker says "Not yet" and the solution is collapsed; the reader types the answer, re-runs, sees ✅.

    The answer typed is the ``answer = ...`` line of the collapsed solution below the checker, as a reader copies
    it (one line: the editor would indent a pasted block); screenshots are named ``{prefix}-3-...png``."""
    text = EXERCISE_TEXT[language]
    cells = nbformat.read(notebook, as_version=4).cells
    index = next(i for i, cell in enumerate(cells) if "solution" in cell.metadata.get("tags", []))
    assert cells[index].source.endswith("answer = ...") and cells[index + 2].cell_type == "markdown"
    solution = re.search(r"^answer = .+$", cells[index + 2].source, re.MULTILINE).group(0)
    answer, checker, shown = (panel.locator(".jp-Cell").nth(index + offset) for offset in range(3))
    expect(checker.locator(STDOUT)).to_contain_text(text["not yet"])
    # The solution is one click away, not in view: JupyterLab's sanitizer keeps <details> and <summary>.
    expect(shown.locator("summary")).to_have_text(text["summary"])
    expect(shown.locator("pre")).to_be_hidden()
    screenshot(checker, screenshots / f"{prefix}-3-exercise-not-yet.png")

    answer.locator(".cm-content").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(solution)  # as typed, without the editor's automatic brackets
    page.keyboard.press("Shift+Enter")  # runs the answer cell and selects the checker cell
    page.keyboard.press("Shift+Enter")  # runs the checker
    expect(checker.locator(STDOUT)).to_contain_text(text["correct"])
    screenshot(checker, screenshots / f"{prefix}-4-exercise-correct.png")

    shown.locator("summary").click()
    expect(shown.locator("pre")).to_be_visible()
    expect(shown.locator("pre")).to_contain_text(solution)
    screenshot(shown, screenshots / f"{prefix}-5-solution-shown.png")
