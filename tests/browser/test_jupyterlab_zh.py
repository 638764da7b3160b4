"""The Chinese edition as a Chinese reader meets it: zh-CN/chapters/ in a Chinese JupyterLab (`make lab-zh`).

The server runs with the locale of the JupyterLab language pack (jupyterlab-language-pack-zh-cn). The test
runs chapter 03 of the Chinese reader edition: its text, JupyterLab's menus and the exercise checker's verdict
are Chinese, and the Chinese characters are drawn as glyphs, not as empty boxes (which is what a machine
without a CJK font shows: CI installs Debian's fonts-noto-cjk). Screenshots: build/screenshots/zh-*.png.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from lab_helpers import (
    LabServer,
    answer_the_first_exercise,
    error_texts,
    open_notebook,
    reader_page,
    run_all_cells,
    screenshot,
)
from playwright.sync_api import Browser, expect

SPLITTING_HEADS = "03_splitting_heads.ipynb"

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

        run_all_cells(page, panel, notebook, language="zh_CN")  # through the Chinese menus, as a reader
        assert error_texts(panel) == []
        answer_the_first_exercise(page, panel, notebook, screenshots, "zh-03", language="zh_CN")
