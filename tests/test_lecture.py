"""tools/lecture: the slide metadata rules, offline slides, and their index (the web pages: tests/test_book.py)."""

import base64
import struct
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not installed: `python -m tools.lecture` also runs from the root
from tools import lecture  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SETUP = "%matplotlib inline\n" + "\n".join(f"import module_{i}" for i in range(9))  # 10 lines


def png(width: int, height: int) -> str:
    """A base64 PNG header with the given size (enough for the size to be read)."""
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + bytes(5)
    return base64.b64encode(head + bytes(4)).decode()


def chapter(*cells) -> nbformat.NotebookNode:
    return new_notebook(cells=list(cells))


def small_chapter() -> nbformat.NotebookNode:
    return chapter(
        new_markdown_cell("# 05 · A small chapter\n\nWhat it is about."),
        new_code_cell(SETUP),
        new_markdown_cell("## 1. First section\n\nSome text."),
        new_code_cell("x = torch.zeros(2, 3)"),
        new_markdown_cell("### 1.1 A sub-section"),
        new_markdown_cell("Which shape comes out?"),
        new_code_cell("x.shape", outputs=[new_output("execute_result", {"text/plain": "torch.Size([2, 3])"},
                                                     execution_count=2)]),
        new_markdown_cell("## 2. Second section\n\nThe formula $a = \\sqrt{d}$."),
        new_code_cell(""),
    )


# --- slide metadata ---------------------------------------------------------------------------------------


def test_slide_types_follow_the_chapter_structure():
    assert lecture.slide_types(small_chapter()) == [
        "slide", "skip", "slide", "-", "subslide", "-", "fragment", "slide", "skip"]


def test_a_short_setup_cell_is_shown():
    nb = chapter(new_markdown_cell("# 05 · Title"), new_code_cell("%matplotlib inline\nimport torch"))
    assert lecture.slide_types(nb) == ["slide", "-"]


def test_the_colab_install_cell_is_skipped_and_the_setup_cell_after_it_still_counts_as_setup():
    install = new_code_cell("try:\n    import mha_lib\nexcept ModuleNotFoundError:\n    pass")
    install.metadata["tags"] = ["colab-install"]
    nb = chapter(new_markdown_cell("# 05 · Title"), install, new_code_cell(SETUP), new_code_cell("x = 1"))
    assert lecture.slide_types(nb) == ["slide", "skip", "skip", "-"]


def test_a_cell_that_would_overflow_the_slide_starts_a_subslide():
    fifteen = "\n".join(f"a_{i} = {i}" for i in range(15))
    nb = chapter(new_markdown_cell("## 1. Long"), new_code_cell("import torch"), new_code_cell(fifteen),
                 new_code_cell(fifteen), new_code_cell("b = 1"))
    assert lecture.slide_types(nb) == ["slide", "-", "-", "subslide", "-"]


def test_pictures_count_by_their_height_on_the_slide():
    assert lecture._png_height(png(450, 300)) == 300
    assert lecture._png_height(png(1800, 600)) == 300  # scaled down to the 900 px slide width
    picture = new_code_cell("fig", outputs=[new_output("display_data", {"image/png": png(900, 600)})])
    assert lecture.cell_lines(picture) == 1 + 600 // lecture.LINE_PX
    nb = chapter(new_markdown_cell("## 1. A figure"), new_code_cell("x = 1"), picture, new_code_cell("y = 2"))
    # 2 + 1 + 21 lines do not fit in 20, and the picture fills its own subslide
    assert lecture.slide_types(nb) == ["slide", "-", "subslide", "subslide"]


def test_svg_pictures_count_by_their_height_on_the_slide():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="1800" height="600" viewBox="0 0 1800 600"></svg>'
    assert lecture._svg_height(svg) == 300  # scaled down to the 900 px slide width
    picture = new_code_cell("SVG(svg)", outputs=[new_output("display_data", {"image/svg+xml": svg,
                                                                              "text/plain": "<SVG object>"})])
    assert lecture.cell_lines(picture) == 1 + 300 // lecture.LINE_PX


def test_matplotlib_svg_sizes_in_points_count_in_pixels():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="648pt" height="396pt" viewBox="0 0 648 396"></svg>'
    assert lecture._svg_height(svg) == 528  # 396 pt = 528 px, and 648 pt = 864 px fit the slide width


def test_a_retina_png_counts_by_the_size_it_declares():
    assert lecture._png_height(png(1000, 600), {"width": 500, "height": 300}) == 300
    assert lecture._png_height(png(1000, 600)) == 540  # without a declared size: its pixels, scaled to 900 px


def test_a_figure_stored_as_svg_and_png_counts_by_the_svg_the_slides_show():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="648pt" height="396pt" viewBox="0 0 648 396"></svg>'
    data = {"image/svg+xml": svg, "image/png": png(1800, 1100), "text/plain": "<Figure size 900x550 with 1 Axes>"}
    figure = new_code_cell("fig", outputs=[new_output("display_data", data,
                                                      metadata={"image/png": {"width": 900, "height": 550}})])
    assert lecture.cell_lines(figure) == 1 + -(-528 // lecture.LINE_PX)


def test_long_markdown_lines_count_as_wrapped_lines():
    cell = new_markdown_cell("## Heading\n\n" + "word " * 40)  # 200 characters wrap into 3 slide lines
    assert lecture.cell_lines(cell) == 1 + 1 + 1 + 3


def test_apply_sets_every_cell_keeps_other_metadata_and_is_idempotent():
    nb = small_chapter()
    nb.cells[3].metadata["tags"] = ["solution"]
    assert lecture.apply_slide_metadata(nb) is True
    assert [cell.metadata.slideshow.slide_type for cell in nb.cells] == lecture.slide_types(nb)
    assert nb.cells[3].metadata.tags == ["solution"]
    assert nb.metadata.rise == {"scroll": True}
    assert lecture.apply_slide_metadata(nb) is False


def test_apply_replaces_stale_slide_types():
    nb = small_chapter()
    lecture.apply_slide_metadata(nb)
    nb.cells[2].metadata.slideshow.slide_type = "-"
    assert lecture.apply_slide_metadata(nb) is True
    assert nb.cells[2].metadata.slideshow.slide_type == "slide"


def test_write_slide_metadata_rewrites_a_file_only_when_it_changes(tmp_path):
    path = tmp_path / "05_small.ipynb"
    nbformat.write(small_chapter(), path)
    assert lecture.write_slide_metadata([path]) == [path]
    written = path.read_bytes()
    assert lecture.write_slide_metadata([path]) == []
    assert path.read_bytes() == written
    assert nbformat.read(path, as_version=4).cells[0].metadata.slideshow.slide_type == "slide"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_slide_metadata_is_current(path):
    nb = nbformat.read(path, as_version=4)
    assert not lecture.apply_slide_metadata(nb), (
        "the slide metadata is out of date: run `.venv/bin/python -m tools.lecture metadata notebooks/*.ipynb`")


# --- offline pages ----------------------------------------------------------------------------------------


def local_urls(page: str) -> list[str]:
    urls = [url for _, url in lecture.loaded_urls(page)]
    assert urls, "the page loads nothing: the parser found no tags"
    return urls


def test_slides_load_reveal_and_mathjax_from_the_local_folder_only():
    page = lecture.render_slides(small_chapter(), "05_small")
    urls = local_urls(page)
    assert f"{lecture.REVEAL_URL_PREFIX}/dist/reveal.js" in urls
    assert f"{lecture.REVEAL_URL_PREFIX}/dist/reveal.css" in urls
    assert any(url.startswith(lecture.MATHJAX_URL) for url in urls)
    assert lecture.offline_problems(page) == []
    assert not any(name in url for url in urls for name in ("require", "jquery", "mermaid", "unpkg"))
    assert "import mermaid" not in page
    assert "Reveal.initialize" in page and "A small chapter" in page


def test_slides_leave_out_skipped_cells_and_the_setup_cell():
    page = lecture.render_slides(small_chapter(), "05_small")
    assert "module_3" not in page
    assert page.count("<section") >= 4


def test_widgets_become_a_static_note_and_no_widget_manager_is_loaded():
    nb = small_chapter()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    nb.cells.append(new_code_cell("slider", outputs=[
        new_output("display_data", {lecture.WIDGET_MIME: view, "text/plain": "IntSlider(value=3)"})]))
    page = lecture.render_slides(nb, "05_small")
    assert lecture.WIDGET_NOTE in page
    assert "IntSlider" not in page and "html-manager" not in page
    assert lecture.offline_problems(page) == []
    assert "widgets" in nb.metadata, "rendering must not change the caller's notebook"


@pytest.mark.parametrize(("source", "shown"), [
    ("# NBVAL_IGNORE_OUTPUT\nbox = explorer()\nbox", "box = explorer()\nbox"),
    ("# NBVAL_IGNORE_OUTPUT  (training progress)\ntrain()", "train()"),
    ("#NBVAL_SKIP\nslow()", "slow()"),
    ("x = 1\n    # NBVAL_RAISES_EXCEPTION\nfail()", "x = 1\nfail()"),
    ("# NBVAL_CHECK_OUTPUT", ""),
    ("y = 2  # keep NBVAL_SKIP in prose\n# not a marker: NBVAL_SKIP", "y = 2  # keep NBVAL_SKIP in prose\n"
                                                                     "# not a marker: NBVAL_SKIP"),
])
def test_hide_test_markers_drops_only_marker_lines(source, shown):
    assert lecture.hide_test_markers(source) == shown


def test_slides_hide_test_markers_and_keep_the_code():
    nb = small_chapter()
    widget = "# NBVAL_IGNORE_OUTPUT\n# A live widget.\nbox = make_the_explorer()"
    nb.cells.append(new_code_cell(widget))
    page = lecture.render_slides(nb, "05_small")
    assert "NBVAL" not in page
    assert "make_the_explorer" in page and "A live widget." in page
    assert nb.cells[-1].source == widget, "rendering must not change the caller's notebook"
    # and the marker line does not count on the slide
    assert lecture.cell_lines(nb.cells[-1]) == lecture.cell_lines(new_code_cell("# A live widget.\nbox = 1"))


def test_no_stored_chapter_shows_a_test_marker_on_its_slides():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert "NBVAL_" not in lecture.hide_test_markers(cell.source), f"{path.name}: {cell.source[:80]}"


def test_offline_problems_name_remote_addresses_and_missing_files(tmp_path):
    page = ('<script src="https://cdn.example/reveal.js"></script><link rel="stylesheet" href="_static/a.css">'
            '<img src="data:image/png;base64,AAAA"><script src="//cdn.example/x.js"></script>'
            '<a href="https://example.org/">a link is not loaded</a>')
    assert lecture.offline_problems(page) == [
        "<script> loads https://cdn.example/reveal.js from the network",
        "<script> loads //cdn.example/x.js from the network"]
    assert len(lecture.offline_problems(page, tmp_path)) == 3
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "a.css").write_text("")
    assert len(lecture.offline_problems(page, tmp_path)) == 2


# --- building the collection ------------------------------------------------------------------------------


def fake_vendor(root: Path) -> Path:
    """The files of requirements-assets.txt that the pages load, empty."""
    reveal = root / "sphinx_revealjs" / "_static" / "revealjs"
    files = [reveal / "LICENSE", reveal / "dist" / "reveal.js", reveal / "dist" / "reveal.css",
             reveal / "dist" / "theme" / "simple.css", reveal / "plugin" / "notes" / "notes.js",
             root / "jupyter_server_mathjax" / "static" / "MathJax.js"]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("")
    return root


def write_chapters(folder: Path) -> list[Path]:
    paths = []
    for number, title in ((1, "One"), (0, "Zero")):
        nb = small_chapter()
        nb.cells[0].source = f"# {number:02d} · {title}\n\nIntro."
        for cell in nb.cells:
            cell.metadata["lecture"] = {}
        paths.append(folder / f"{number:02d}_{title.lower()}.ipynb")
        nbformat.write(nb, paths[-1])
    return paths


def test_build_copies_the_assets_and_checks_every_page_against_them(tmp_path):
    vendor = fake_vendor(tmp_path / "vendor")
    written = lecture.build(write_chapters(tmp_path), tmp_path / "slides", vendor)
    assert [path.name for path in written] == ["00_zero.slides.html", "00_zero.handout.html", "01_one.slides.html",
                                               "01_one.handout.html", "index.html"]
    assert (tmp_path / "slides" / "_static" / "reveal.js" / "dist" / "reveal.js").is_file()
    (vendor / "sphinx_revealjs" / "_static" / "revealjs" / "dist" / "theme" / "simple.css").unlink()
    with pytest.raises(RuntimeError, match="simple.css, which is not in"):
        lecture.build(write_chapters(tmp_path), tmp_path / "slides2", vendor)


def test_the_index_of_the_slides_links_every_chapter_in_order(tmp_path):
    lecture.build(write_chapters(tmp_path), tmp_path / "slides", fake_vendor(tmp_path / "vendor"))
    index = (tmp_path / "slides" / "index.html").read_text()
    assert lecture.loaded_urls(index) == []  # no script or style sheet at all
    assert (index.index('<a href="00_zero.slides.html">00 · Zero</a>')
            < index.index('<a href="01_one.slides.html">01 · One</a>'))
    assert (tmp_path / "slides" / "_static" / "mathjax" / "MathJax.js").is_file()


def test_the_index_of_the_collection_lists_every_notebook_with_its_title():
    entries = [(lecture.chapter_title(nbformat.read(path, as_version=4), path.stem), f"{path.stem}.slides.html")
               for path in NOTEBOOKS]
    index = lecture.render_index(entries, "Multi-head attention: lecture slides", "intro")
    positions = [index.index(f'href="{path.stem}.slides.html"') for path in NOTEBOOKS]
    assert positions == sorted(positions) and len(positions) == len(NOTEBOOKS)
    for (title, _), path in zip(entries, NOTEBOOKS, strict=True):
        assert title.startswith(f"{path.name[:2]} · "), f"{path.name} has no '# NN · Title' first line"


def test_missing_assets_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="make slides"):
        lecture.Assets.find(tmp_path)


def test_command_line_sets_metadata(tmp_path, capsys):
    from tools.lecture.__main__ import main

    (path,) = write_chapters(tmp_path)[:1]
    assert main(["metadata", str(path)]) == 0
    assert "1 of 1 notebooks changed" in capsys.readouterr().out
    assert main(["slides", "--assets", str(tmp_path / "none"), "--out", str(tmp_path / "out"), str(path)]) == 1
    assert "make slides" in capsys.readouterr().err


def test_the_chinese_edition_gets_chinese_slides_and_a_chinese_index():
    english = new_notebook(cells=[new_markdown_cell("# 03 · Splitting heads"), new_code_cell("x = 1")])
    chinese = new_notebook(cells=[new_markdown_cell("# 03 · 拆分注意力头"), new_code_cell(
        'import mha_lib\n\nmha_lib.set_language("zh_CN")', metadata={"tags": ["language"]})])
    assert lecture.notebook_language(english) == "en" and lecture.notebook_language(chinese) == "zh-CN"
    page = lecture.render_slides(chinese, "03_splitting_heads")
    assert '<html lang="zh-CN">' in page and "<title>03 · 拆分注意力头 slides</title>" in page
    heading, intro = lecture.INDEX_TEXT["zh-CN"]
    assert '<html lang="zh-CN">' in lecture.render_index([("03 · 拆分注意力头", "03.html")], heading, intro, "zh-CN")


# --- lecture decks (tools/lecture/deck.py; the decks in a browser: tests/slides) ----------------------------------

from tools.editions import solution_lines  # noqa: E402
from tools.lecture import deck  # noqa: E402

ZH_NOTEBOOKS = sorted((ROOT / "zh-CN" / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS + ZH_NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}-{p.name[:2]}")
def test_every_chapter_selects_a_deck_of_at_most_30_slides_with_notes(path):
    nb = nbformat.read(path, as_version=4)
    assert deck.has_deck(nb), (
        f"{path.name} selects no cell for its lecture deck: give the deck's cells the cell metadata "
        "{\"lecture\": {}} and a few {\"lecture\": {\"notes\": \"...\"}} (docs/maintaining.md, \"Lecture decks\")")
    slides = deck.deck_notebook(nb)
    assert 10 <= deck.slide_count(slides) <= deck.MAX_SLIDES
    assert any(deck.speaker_notes(cell) for cell in nb.cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_the_chinese_edition_carries_the_deck_and_translates_its_notes(path):
    english = nbformat.read(path, as_version=4).cells
    chinese = [cell for cell in nbformat.read(ROOT / "zh-CN" / "notebooks" / path.name, as_version=4).cells
               if "language" not in cell.metadata.get("tags", [])]
    assert [deck.in_deck(cell) for cell in english] == [deck.in_deck(cell) for cell in chinese]
    for en, zh in zip(english, chinese, strict=True):
        if deck.speaker_notes(en):
            assert deck.speaker_notes(zh) and deck.speaker_notes(zh) != deck.speaker_notes(en)


def test_every_heading_starts_a_slide_even_in_the_middle_of_a_cell():
    cell = new_markdown_cell("Text before.\n\n## 2. Second\n\nMore.\n\n### 2.1 Sub\n\n```python\n# not a heading\n```")
    assert deck.markdown_pieces(cell.source) == ["Text before.", "## 2. Second\n\nMore.",
                                                 "### 2.1 Sub\n\n```python\n# not a heading\n```"]
    nb = chapter(new_markdown_cell("# 05 · Title", metadata={"lecture": {}}), new_markdown_cell(
        cell.source, metadata={"lecture": {"notes": "Say this."}}))
    slides = deck.deck_notebook(nb)
    kinds = [c.metadata.slideshow.slide_type for c in slides.cells]
    assert kinds == ["slide", "-", "slide", "slide", "notes"] and deck.slide_count(slides) == 3
    page = lecture.render_deck(nb, "05_title")
    assert '<aside class="notes">' in page and "Say this." in page and 'slideNumber: "c/t"' in page


def test_a_deck_shows_exercises_unsolved_and_a_cell_too_long_for_the_slide_is_cut():
    answer = new_code_cell("def f(x):\n    \"\"\"Double x.\"\"\"\n    ### BEGIN SOLUTION\n    return 2 * x + 0 * x\n"
                           "    ### END SOLUTION", metadata={"tags": ["solution"], "lecture": {}})
    check = new_code_cell("check_f(f)", metadata={"lecture": {}},
                          outputs=[new_output("stream", name="stdout", text="✅ Correct: 2 * x\n")])
    printed = new_code_cell("print(x)", metadata={"lecture": {}}, outputs=[
        new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(80)))])
    nb = chapter(new_markdown_cell("## Exercises", metadata={"lecture": {}}), answer, check,
                 new_markdown_cell("A long output:", metadata={"lecture": {}}), printed)
    text = "\n".join(cell.source + str(cell.get("outputs", "")) for cell in deck.deck_notebook(nb).cells)
    assert "return 2 * x + 0 * x" not in text and "BEGIN SOLUTION" not in text and "Correct" not in text
    assert 'raise NotImplementedError("Exercise: write the body of f")' in text
    assert "more lines: run the notebook" in text and "line 79" not in text
    assert solution_lines(nb) == {"return 2 * x + 0 * x"}


def test_a_chapter_without_a_deck_is_named_clearly():
    with pytest.raises(ValueError, match="selects no cell for its lecture deck"):
        deck.deck_notebook(small_chapter())


@pytest.mark.parametrize("line", ["x" * 100, "y" * 140, "z" * 300])
def test_code_gets_the_largest_font_at_which_its_longest_line_fits(line):
    size, wrap = deck.code_font([line])
    assert deck.MIN_CODE_PX <= size <= deck.CODE_PX
    assert wrap == (len(line) * deck.MIN_CODE_PX * deck.CHAR_EM > deck.CONTENT_WIDTH_PX)


def test_a_chinese_character_in_code_takes_two_columns_so_its_line_wraps_sooner():
    per_line = int(deck.CONTENT_WIDTH_PX // (deck.MIN_CODE_PX * deck.CHAR_EM))
    latin = "x = 1  # " + "a" * (per_line - 20)
    chinese = "x = 1  # " + "注" * (per_line - 20)
    assert deck.columns(chinese) == len(chinese) + per_line - 20
    assert deck.visual_lines(latin) == 1 and deck.visual_lines(chinese) == 2
    assert deck.code_font([chinese]) == (deck.MIN_CODE_PX, True)
    assert deck.code_font([latin])[1] is False


# --- figures on the slides (issue 52: every figure a lecture refers to is on a slide) -------------------------

import re  # noqa: E402

# A word that names a figure, in the lead-in of a slide ("`show_heatmaps` draws ... with the masks of section 6:")
# or next to "below". Chosen so that the prose of the chapters does not fire falsely: not "draw" ("drawn anew"),
# "curve" (which often refers back to the figure above), "below" alone ("below 28 px") or a bare 图 (意图, 试图).
FIGURE_WORDS = {"en": re.compile(r"(?<![a-z])(figures?|heatmaps?|plot(s|ted)?|pictures?|drawings?|draws)(?![a-z])",
                                 re.IGNORECASE),  # also inside a name: `show_heatmaps` draws ...
                "zh-CN": re.compile(r"热图|热力图|下图|如图|图中|此图|这张图|该图|图示|画出|绘制"
                                    r"|(?<![a-z])(heatmaps?|plot)(?![a-z])",  # and names: `show_heatmaps` 画出
                                    re.IGNORECASE)}
BELOW = {"en": re.compile(r"\b(figure|heatmap|plot|picture|drawing)s? below\b", re.IGNORECASE),
         "zh-CN": re.compile(r"下图|如下图")}
# Slides that name a figure without announcing one, by a phrase their text has in both languages, and why.
NOT_ANNOUNCING = {"05_interactive_explorer": ("render_explorer(config)",
                                              "describes the SVG string a widget receives; the heatmaps are on the "
                                              "slides of section 4")}
DECKS = [(language, path) for language, paths in (("en", NOTEBOOKS), ("zh-CN", ZH_NOTEBOOKS)) for path in paths
         if path.name[:2].isdigit()]


def deck_slides(slides: nbformat.NotebookNode) -> list[list[nbformat.NotebookNode]]:
    """The cells of each slide of a deck (speaker notes left out); a slide that only continues the outputs of the
    cell before it (deck.py: code on one slide, its figure on the next) counts as part of that slide."""
    grouped: list[list[nbformat.NotebookNode]] = []
    for cell in slides.cells:
        kind = cell.metadata.get("slideshow", {}).get("slide_type")
        if kind == "notes":
            continue
        if kind == "slide" or not grouped:
            grouped.append([])
        grouped[-1].append(cell)
    merged: list[list[nbformat.NotebookNode]] = []
    for cells in grouped:
        if merged and any(str(c.get("id", "")).endswith("-outputs") for c in cells):
            merged[-1] += cells
        else:
            merged.append(cells)
    return merged


def shows_figure(cells: list[nbformat.NotebookNode]) -> bool:
    """Whether a cell among ``cells`` shows an image: SVG, PNG, or HTML that embeds one."""
    return any(any(kind in output.get("data", {}) for kind in deck.FIGURE_TYPES)
               or re.search(r"<svg|<img", str(output.get("data", {}).get("text/html", "")))
               for cell in cells for output in cell.get("outputs", []))


def announced_figure(cells: list[nbformat.NotebookNode], language: str) -> str | None:
    """The words with which a slide announces a figure, or None: a figure word in the last two paragraphs of its
    prose when the prose ends with a colon (it leads into what follows), or "figure below" anywhere."""
    prose = [cell.source.rstrip() for cell in cells if cell.cell_type == "markdown" and cell.source.strip()]
    if not prose:
        return None
    last = prose[-1]
    if last.endswith((":", "：")):
        lead_in = "\n\n".join(re.split(r"\n\s*\n", last)[-2:])
        found = FIGURE_WORDS[language].search(re.sub(r"\$[^$]*\$", "", lead_in))
        if found:
            return lead_in[max(0, found.start() - 40):][:160]
    found = BELOW[language].search("\n".join(prose))
    return found.group(0) if found else None


def unexecuted(nb: nbformat.NotebookNode) -> list[int]:
    """The deck's code cells that have never run (no output, no execution count): their figures are not there yet."""
    setup = deck.setup_cells(nb)
    return [index for index, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and deck.in_deck(cell) and index not in setup and cell.source.strip()
            and not cell.get("outputs") and cell.get("execution_count") is None]


@pytest.mark.parametrize(("language", "path"), DECKS, ids=[f"{lang}-{p.name[:2]}" for lang, p in DECKS])
def test_every_deck_shows_a_figure_after_each_slide_that_announces_one(language, path):
    nb = nbformat.read(path, as_version=4)
    if unexecuted(nb):
        pytest.skip(f"{path.name}: deck cells {unexecuted(nb)} were never executed (make outputs; make zh)")
    slides = deck_slides(deck.deck_notebook(nb))
    assert any(shows_figure(cells) for cells in slides), (
        f"{path.name}: its deck shows no figure; give a cell that draws one the metadata {{\"lecture\": {{}}}} "
        "(or {\"lecture\": {\"show\": \"figures\"}} where its code is long)")
    exempt = NOT_ANNOUNCING.get(path.stem)
    missing = []
    for number, cells in enumerate(slides):
        words = announced_figure(cells, language)
        if not words or (exempt and any(exempt[0] in cell.source for cell in cells)):
            continue
        if not shows_figure(cells) and not (number + 1 < len(slides) and shows_figure(slides[number + 1])):
            missing.append(f"slide group {number + 1} announces a figure ({words!r}) but neither it nor the next "
                           "shows one: put the figure's cell on the deck (metadata lecture)")
    assert missing == [], f"{path.name}:\n" + "\n".join(missing)


def test_a_slide_that_announces_a_figure_it_does_not_show_is_found():
    announcing = new_markdown_cell("## 7. Seeing the weights\n\n`show_heatmaps` draws the weights.\n\n"
                                   "Two random sequences:", metadata={"lecture": {}})
    printed = new_code_cell("print(1)", metadata={"lecture": {}},
                            outputs=[new_output("stream", name="stdout", text="1\n")])
    figure = new_code_cell("draw()", metadata={"lecture": {}}, outputs=[
        new_output("display_data", {"image/png": png(400, 300), "text/plain": "<Figure>"})])
    later = new_markdown_cell("## 8. Next\n\nMore text.", metadata={"lecture": {}})
    without = deck_slides(deck.deck_notebook(chapter(announcing, printed, later)))
    assert announced_figure(without[0], "en") and not shows_figure(without[0] + without[1])
    shown = deck_slides(deck.deck_notebook(chapter(announcing, figure, later)))
    assert shows_figure(shown[0])
    # a figure word that does not lead into the next cell, or "below" alone, announces nothing
    plain = deck_slides(deck.deck_notebook(chapter(new_markdown_cell(
        "## 1. Text\n\nThe figure above showed it. Sizes below 28 px are too small.", metadata={"lecture": {}}))))
    assert announced_figure(plain[0], "en") is None
    zh = deck_slides(deck.deck_notebook(chapter(new_markdown_cell("## 7. 看看权重\n\n下面画出热图：",
                                                                  metadata={"lecture": {}}), printed)))
    assert announced_figure(zh[0], "zh-CN") and not shows_figure(zh[0])


def test_a_cell_shown_as_figures_only_puts_its_figures_alone_on_a_slide():
    code = "\n".join(f"x{i} = {i}" for i in range(30)) + "\ndraw()"
    figure = new_code_cell(code, metadata={"lecture": {"show": "figures"}}, outputs=[
        new_output("stream", name="stdout", text="printed\n"),
        new_output("display_data", {"image/png": png(400, 300), "text/plain": "<Figure>"})])
    slides = deck.deck_notebook(chapter(new_markdown_cell("## 1. A figure", metadata={"lecture": {}}), figure))
    code_cells = [cell for cell in slides.cells if cell.cell_type == "code"]
    assert len(code_cells) == 1 and code_cells[0].source == "" and deck.slide_count(slides) == 1
    assert [list(o.data) for o in code_cells[0].outputs] == [["image/png", "text/plain"]]
    assert deck.OUTPUT_ONLY_TAG in code_cells[0].metadata.tags
    figure.metadata.lecture = {"show": "code"}
    with pytest.raises(ValueError, match="lecture.show"):
        deck.deck_notebook(chapter(new_markdown_cell("## 1. A figure", metadata={"lecture": {}}), figure))
