"""The Chinese edition as a Chinese reader meets it: zh-CN/chapters/ in a Chinese JupyterLab (`make lab-zh`).

The server runs with the locale of the JupyterLab language pack (jupyterlab-language-pack-zh-cn). The test
runs chapter 03 of the Chinese reader edition: its text, JupyterLab's menus and the exercise checker's verdict
are Chinese, and the Chinese characters are drawn as glyphs, not as empty boxes (which is what a machine
without a CJK font shows: CI installs Debian's fonts-noto-cjk). Screenshots: build/screenshots/zh-*.png.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from lab_helpers import STDOUT, LabServer, error_texts, open_notebook, reader_page, screenshot
from playwright.sync_api import Browser, Locator, Page, expect

SPLITTING_HEADS = "03_splitting_heads.ipynb"
RUN_ALL_TIMEOUT_MS = 240_000

# Two different characters are drawn as two different pictures only when a font has glyphs for them; without
# one, both become the same empty box. The bitmaps are compared in the page's own font.
GLYPHS_DIFFER = """(element) => {
    const font = getComputedStyle(element).fontFamily;
    const draw = (character) => {
        const canvas = document.createElement('canvas');
        canvas.width = 64; canvas.height = 64;
        const context = canvas.getContext('2d');
        context.font = `48px ${font}`;
        context.fillText(character, 4, 52);
        return Array.from(context.getImageData(0, 0, 64, 64).data);
    };
    const [attention, head] = [draw('注'), draw('头')];
    const inked = (pixels) => pixels.some((value, i) => i % 4 === 3 && value > 0);
    return inked(attention) && inked(head) && attention.some((value, i) => value !== head[i]);
}"""


def run_all_cells(page: Page, panel: Locator, notebook: Path) -> None:
    """Run every cell through JupyterLab's own command (the menus speak Chinese), and wait until all have run."""
    code_cells = sum(cell.cell_type == "code" for cell in nbformat.read(notebook, as_version=4).cells)
    expect(panel.locator(".jp-CodeCell .jp-InputArea-prompt")).to_have_count(code_cells)
    panel.locator(".jp-Cell").first.click()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        """(panel) => [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
            .every((prompt) => /^\\[\\d+\\]:$/.test(prompt.textContent.trim()))""",
        arg=panel.element_handle(), timeout=RUN_ALL_TIMEOUT_MS, polling=500)
    expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle")


def test_chapter_03_reads_and_checks_in_chinese(lab_server_zh: LabServer, browser: Browser, screenshots: Path):
    notebook = lab_server_zh.root / SPLITTING_HEADS
    cells = nbformat.read(notebook, as_version=4).cells
    title = cells[0].source.splitlines()[0].lstrip("# ")
    with reader_page(browser, screenshots / "FAILED-zh-03.png") as page:
        panel = open_notebook(page, lab_server_zh.lab_url(SPLITTING_HEADS))
        # JupyterLab itself speaks Chinese (the language pack): its File menu is 文件
        expect(page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text="文件")).to_have_count(1)
        heading = panel.locator(".jp-MarkdownOutput h1").first
        expect(heading).to_contain_text(title)
        assert heading.evaluate(GLYPHS_DIFFER), "Chinese characters are drawn as boxes: no CJK font (fonts-noto-cjk)"
        screenshot(panel.locator(".jp-Cell").first, screenshots / "zh-03-1-title.png")

        run_all_cells(page, panel, notebook)
        assert error_texts(panel) == []
        index = next(i for i, cell in enumerate(cells) if "solution" in cell.metadata.get("tags", []))
        checker = panel.locator(".jp-Cell").nth(index + 1)
        expect(checker.locator(STDOUT)).to_contain_text("❌ 还不对")
        expect(panel.locator(".jp-Cell").nth(index + 2).locator("summary")).to_have_text("显示参考答案")
        screenshot(checker, screenshots / "zh-03-2-exercise-not-yet.png")

        answer = panel.locator(".jp-Cell").nth(index)
        answer.locator(".cm-content").click()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.insert_text("answer = ((9, 2, 2), 7)")
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Shift+Enter")
        expect(checker.locator(STDOUT)).to_contain_text("✅ 正确")
        screenshot(checker, screenshots / "zh-03-3-exercise-correct.png")
