"""The book as a reader meets it: every chapter of both languages opens from a web server in headless Chromium with
its figures drawn, its mathematics typeset and its solutions folded; search finds a chapter; nothing comes from
the network. Build it first: ``make test-book`` builds it (tools/book) and runs this file.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Page, expect

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tools/ is not installed
from tools.book import EDITIONS  # noqa: E402
from tools.colab import REF  # noqa: E402  (the release the install cell pins)

TIMEOUT_MS = 60_000  # one page, search or typesetting on a busy 2-core machine
expect.set_options(timeout=TIMEOUT_MS)
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
FORMULA = ".math.nohighlight"  # Sphinx's element of one formula (MathJax's own spans have the class "math" too)
# MathJax 2 asks for its TeX fonts, which jupyter-server-mathjax does not ship (only STIX-Web, which it typesets with)
MISSING_FONTS = re.compile(r"/_static/mathjax/fonts/HTML-CSS/TeX/")
SOLUTION_SUMMARY = {"en": "Show a solution", "zh-CN": "显示参考答案"}  # tools/editions.py's words


@dataclass(frozen=True)
class Chapter:
    language: str  # the site's folder: en, zh-CN
    path: Path  # the reader edition's notebook

    @property
    def page(self) -> str:
        return f"{self.language}/{self.path.stem}.html"

    @property
    def notebook(self) -> nbformat.NotebookNode:
        return nbformat.read(self.path, as_version=4)

    @property
    def title(self) -> str:
        return self.notebook.cells[0].source.splitlines()[0].removeprefix("# ").strip()

    def stored_figures(self) -> int:
        """Outputs that hold a picture (SVG, PNG or both: one figure), outside the Colab cell the book leaves out."""
        return sum(1 for cell in self.notebook.cells if cell.cell_type == "code"
                   and "colab-install" not in cell.metadata.get("tags", [])
                   for output in cell.get("outputs", [])
                   if {"image/svg+xml", "image/png"} & set(output.get("data", {})))

    def stored_solutions(self) -> int:
        summary = f"<details><summary>{SOLUTION_SUMMARY[self.language]}</summary>"
        return sum(cell.source.count(summary) for cell in self.notebook.cells if cell.cell_type == "markdown")


CHAPTERS = [Chapter(edition.html_lang, path) for edition in EDITIONS.values()
            for path in sorted(edition.chapters.glob("[0-9][0-9]_*.ipynb"))]


@pytest.fixture
def page(browser: Browser, site: str):
    """A fresh page that records every request leaving the site and every failed one."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.outside, page.failed, page.errors = [], [], []
    page.on("request", lambda request: None if request.url.startswith((site, "data:", "about:"))
            else page.outside.append(request.url))
    page.on("response", lambda response: response.status >= 400 and not MISSING_FONTS.search(response.url)
            and page.failed.append(f"{response.status} {response.url}"))
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()


def assert_stayed_offline(page: Page) -> None:
    assert page.outside == [], f"the page asked the network for {page.outside}"
    assert page.failed == [], f"requests failed: {page.failed}"
    assert page.errors == [], f"scripts failed: {page.errors}"


def typeset(page: Page) -> None:
    """Wait until MathJax has typeset every formula of the page: its queue is empty, each formula holds its output."""
    page.wait_for_function(f"""() => window.MathJax && MathJax.Hub && MathJax.Hub.queue
        && !MathJax.Hub.queue.pending && !MathJax.Hub.queue.running
        && [...document.querySelectorAll('{FORMULA}')].every((element) => element.querySelector('.MathJax'))""")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda chapter: chapter.page)
def test_a_chapter_opens_with_its_figures_math_and_folded_solutions(page: Page, site: str, chapter: Chapter,
                                                                     screenshots: Path):
    page.goto(site + chapter.page)
    expect(page.locator("h1").first).to_contain_text(chapter.title)
    assert page.locator("html").get_attribute("lang") == chapter.language

    # every stored figure is drawn: as many pictures in the outputs as the notebook stores, each decoded
    pictures = page.locator(".cell_output img")
    expect(pictures).to_have_count(chapter.stored_figures())
    page.wait_for_function("() => [...document.querySelectorAll('.cell_output img')].every((img) => img.complete)")
    widths = pictures.evaluate_all("(images) => images.map((img) => img.naturalWidth)")
    assert all(width > 0 for width in widths), f"pictures not drawn: {widths}"

    # the mathematics is typeset by the local MathJax, without errors
    if page.locator(FORMULA).count():
        typeset(page)
        assert page.locator(".MathJax_Error, .merror").count() == 0
        widths = page.locator(f"{FORMULA} .MathJax").evaluate_all(
            "(formulas) => formulas.map((formula) => formula.getBoundingClientRect().width)")
        assert max(widths) > 0, "MathJax drew nothing"

    # the solutions stay folded: each <details> is closed and its code is not shown
    folds = page.locator("details")
    expect(folds).to_have_count(chapter.stored_solutions())
    for index in range(folds.count()):
        fold = folds.nth(index)
        assert fold.evaluate("(details) => details.open") is False
        expect(fold.locator("summary")).to_have_text(SOLUTION_SUMMARY[chapter.language])
        expect(fold.locator("pre")).to_be_hidden()
    page.screenshot(path=str(screenshots / f"{chapter.page.replace('/', '_')}.png"))
    assert_stayed_offline(page)


def test_a_folded_solution_opens_with_a_click(page: Page, site: str):
    page.goto(site + "en/03_splitting_heads.html")
    fold = page.locator("details").first
    expect(fold.locator("pre")).to_be_hidden()
    fold.locator("summary").click()
    expect(fold.locator("pre")).to_be_visible()
    expect(fold.locator("pre")).to_contain_text("answer = ")


@pytest.mark.parametrize(("language", "query", "chapter"), [
    ("en", "transpose_qkv", "03_splitting_heads"),  # the function chapter 03 writes, a heading there
    ("en", "online softmax", "10_tiled_attention"),
    ("zh-CN", "拆分注意力头", "03_splitting_heads"),  # chapter 03's title: no spaces to split the query at
    ("zh-CN", "在线 softmax", "10_tiled_attention"),
    ("zh-CN", "transpose_qkv", "03_splitting_heads"),
])
def test_search_finds_the_chapter(page: Page, site: str, language: str, query: str, chapter: str):
    page.goto(f"{site}{language}/index.html")
    page.keyboard.press("Control+K")  # the theme's search box, as a reader opens it
    box = page.locator("form.bd-search input[name=q]:visible").first
    box.fill(query)
    box.press("Enter")
    page.wait_for_url(re.compile(r"/search\.html\?q="))
    results = page.locator("#search-results ul.search li a")
    expect(results.first).to_be_visible()
    pages = [href.split("#")[0] for href in results.evaluate_all("(links) => links.map((a) => a.getAttribute('href'))")]
    assert f"{chapter}.html" in pages, f"{query!r} found {results.all_inner_texts()}"
    chapters = [name for name in set(pages) if name[:2].isdigit()]
    assert len(chapters) < len(CHAPTERS) // len(EDITIONS), f"{query!r} finds every chapter: {sorted(chapters)}"
    assert_stayed_offline(page)


def test_the_chinese_book_speaks_chinese_and_each_page_links_its_translation(page: Page, site: str):
    page.goto(site + "en/03_splitting_heads.html")
    page.locator("a.mha-language-switch").click()
    page.wait_for_url(re.compile(r"/zh-CN/03_splitting_heads\.html$"))
    expect(page.locator("h1").first).to_contain_text("拆分注意力头")
    expect(page.locator(".bd-sidebar-primary .search-button-field").first).to_contain_text("搜索")
    expect(page.locator("nav.bd-links p.caption")).to_have_text("章节")
    page.locator("a.mha-language-switch").click()
    page.wait_for_url(re.compile(r"/en/03_splitting_heads\.html$"))


def test_the_home_pages_list_every_chapter_in_order(page: Page, site: str):
    page.goto(site + "index.html")
    for edition in EDITIONS.values():
        page.goto(site + "index.html")
        page.locator(f'a[href="{edition.html_lang}/index.html"]').click()
        chapters = [chapter for chapter in CHAPTERS if chapter.language == edition.html_lang]
        links = page.locator("nav.bd-links a.reference.internal")
        expect(links).to_have_count(len(chapters) + 1)  # and the home page
        assert links.all_inner_texts()[1:] == [chapter.title for chapter in chapters]
        assert_stayed_offline(page)


def test_launch_and_download_buttons(page: Page, site: str, book_dir: Path):
    """Binder and Colab open the reader's notebook from the repository of pyproject.toml at the release the install
    cell pins, as the badges of docs/online.md do; the download button gives the reader edition's notebook itself."""
    owner_name = REPOSITORY.removeprefix("https://github.com/")
    for chapter in (CHAPTERS[3], CHAPTERS[-1]):
        page.goto(site + chapter.page)
        notebook = chapter.path.relative_to(ROOT).as_posix()
        hrefs = page.locator(".dropdown-launch-buttons a").evaluate_all("(links) => links.map((a) => a.href)")
        assert hrefs == [f"https://mybinder.org/v2/gh/{owner_name}/{REF}?urlpath=lab/tree/{notebook}",
                         f"https://colab.research.google.com/github/{owner_name}/blob/{REF}/{notebook}"]
        download = page.locator("a.btn-download-source-button").get_attribute("href")
        with urllib.request.urlopen(f"{site}{chapter.language}/{download}", timeout=30) as response:
            assert json.loads(response.read()) == json.loads(chapter.path.read_text(encoding="utf-8"))
