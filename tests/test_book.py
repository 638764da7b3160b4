"""tools/book: what the book makes of a chapter, its settings and its offline check (no Sphinx needed, except for the
Chinese search). The built book in a browser: tests/book (make test-book)."""

import copy
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not installed
from tools import book  # noqa: E402
from tools.colab import REPOSITORY_URL  # noqa: E402

WIDGET_VIEW = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def chapter() -> nbformat.NotebookNode:
    install = new_code_cell("try:\n    import mha_lib\nexcept ModuleNotFoundError:\n    pass",
                            metadata={"tags": ["colab-install"]})
    widget = new_code_cell("# NBVAL_IGNORE_OUTPUT\nbox = explorer()\nbox", outputs=[
        new_output("display_data", {book.WIDGET_MIME: WIDGET_VIEW, "text/plain": "VBox(children=...)"})])
    figure = new_code_cell("fig", outputs=[new_output("display_data", {"image/svg+xml": "<svg/>",
                                                                       "text/plain": "<Figure>"})])
    nb = new_notebook(cells=[new_markdown_cell("# 05 · Explorer"), install, widget, figure])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_book_leaves_out_the_colab_cell_the_live_widget_and_the_test_markers(language):
    edition = book.EDITIONS[language]
    original = chapter()
    before = copy.deepcopy(original)
    shown = book.book_notebook(original, edition)
    assert [cell.source.splitlines()[0] for cell in shown.cells] == ["# 05 · Explorer", "box = explorer()", "fig"]
    assert shown.cells[1].outputs[0].data == {"text/markdown": edition.widget_note}
    assert shown.cells[2].outputs == original.cells[3].outputs  # figures as stored
    assert "widgets" not in shown.metadata  # MyST-NB would load a widget manager from a CDN for it
    assert original == before, "the chapter itself must not change"


def test_the_home_page_lists_the_chapters_in_order_and_names_the_repository():
    page = book.index_page(book.EDITIONS["en"], ["00_start_here", "01_tensor_shapes"], REPOSITORY_URL)
    assert page.startswith("# Multi-head attention\n")
    assert "```{toctree}\n:caption: Chapters\n:maxdepth: 1\n\n00_start_here\n01_tensor_shapes\n```" in page
    assert f"<{REPOSITORY_URL}>" in page and "once that repository is public" in page


def test_the_chinese_home_page_has_no_line_break_inside_a_sentence():
    page = book.index_page(book.EDITIONS["zh_CN"], ["00_start_here"], REPOSITORY_URL)
    assert "该章，该仓库公开后即可使用。" in page  # two lines in the source
    assert "\n- **练习**" in page  # the list items stay apart
    assert not re.search(r"[\u4e00-\u9fff，。；：]\n[\u4e00-\u9fff]", page)


@pytest.mark.parametrize(("language", "solved", "folder"), [
    ("en", False, "chapters"), ("zh_CN", False, "zh-CN/chapters"),
    ("en", True, "notebooks"), ("zh_CN", True, "zh-CN/notebooks")])
def test_each_book_shows_its_edition_executes_nothing_and_loads_mathjax_from_its_own_copy(language, solved, folder):
    edition = book.instructor(book.EDITIONS[language]) if solved else book.EDITIONS[language]
    assert edition.chapters == ROOT / folder and len(list(edition.chapters.glob("[0-9][0-9]_*.ipynb"))) == 14
    config = book.sphinx_config(edition, Path("static"), REPOSITORY_URL)
    assert config["nb_execution_mode"] == "off" and config["nb_ipywidgets_js"] == {}
    assert "://" not in config["mathjax_path"] and config["mathjax_path"].startswith("mathjax/MathJax.js")
    assert config["language"] == edition.code
    theme = config["html_theme_options"]
    assert theme["repository_url"] == REPOSITORY_URL and theme["path_to_docs"] == folder
    assert ("tools.book.search_zh" in config["extensions"]) == (language == "zh_CN")
    assert config["html_context"]["mha_other_language"] == book.other(edition).html_lang != edition.html_lang


def test_the_offline_check_names_a_page_that_loads_from_the_network(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "a.js").write_text("")
    (tmp_path / "ok.html").write_text('<script src="_static/a.js"></script><a href="https://example.org">link</a>')
    assert book.site_problems(tmp_path) == []
    (tmp_path / "bad.html").write_text('<script src="https://cdn.example/x.js"></script><img src="_images/gone.png">')
    assert book.site_problems(tmp_path) == ["bad.html: <script> loads https://cdn.example/x.js from the network",
                                            "bad.html: <img> loads _images/gone.png, which is not in " + str(tmp_path)]


def test_the_chinese_search_indexes_characters_and_pairs():
    pytest.importorskip("sphinx", reason="the `book` extra (make book) installs Sphinx")
    from tools.book import search_zh

    assert list(search_zh.han_terms("多头注意力 d_k 头")) == [
        "多", "头", "注", "意", "力", "多头", "头注", "注意", "意力", "头"]
    language = search_zh.SearchChineseBigrams({})
    assert language.split("拆分 transpose_qkv") == ["拆", "分", "拆分", "transpose_qkv"]
    assert language.word_filter("头") and not language.word_filter("a")
    # the query is cut into pairs in the browser: the splitter must be the one language_data.js receives
    assert "function splitQuery(query)" in language.js_splitter_code and "\\u4e00-\\u9fff" in language.js_splitter_code
    assert language.language_name == "English"  # window.Stemmer = EnglishStemmer (the one Sphinx ships for zh)


def test_the_makefile_builds_both_editions_with_the_book():
    makefile = (ROOT / "Makefile").read_text()
    assert "-m tools.book --assets $(LECTURE_VENDOR) --out build/book\n" in makefile
    assert "-m tools.book --assets $(LECTURE_VENDOR) --out build/html --solved\n" in makefile
    assert "tools.lecture html" not in makefile and "html-zh:" not in makefile
    assert "$(BIN)/python -m pytest tests/book" in makefile
