"""The Chinese reader edition prints and draws Chinese: what its code cells print goes through ``tr`` and the
catalogue, and its figures' titles, labels and legends through ``figure_text`` (tools/english_left.py counts).

What may stay English: identifiers, code and numbers; PyTorch's own error messages (the 10% allows those); the source
code a chapter prints on purpose (with its docstring), which is not counted.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tools import english_left

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "zh-CN" / "chapters").glob("[0-9][0-9]_*.ipynb"))
MOST = 0.10  # the share of printed lines that may carry English
PRINTS_SOURCE = re.compile(r"\b(source_with_helpers|getsource)\(")


@pytest.mark.parametrize(("text", "words"), [
    ("row sums: tensor([1., 1.])", ["row", "sums"]),
    ("行和：tensor([1., 1.])", []),
    ("torch.Size([2, 4, 3])  dtype=torch.int32  True False nan", []),
    ("valid_lens [3, 2]  X.view(6, 4)  softmax(16 * X)", []),
    ("GQA (8 kv heads) on PyTorch's CPU", ["kv", "heads", "on"]),
    ("设备：cpu（Intel(R) Xeon(R) Processor, L1d 48K）, meta", []),
    ("AMD EPYC 7763 64-Core Processor, 2 threads", ["threads"]),
    ("❌ 还不对：my_attention 仍然抛出 NotImplementedError。", []),
])
def test_english_words_are_the_words_a_translator_could_translate(text, words):
    assert english_left.english_words(text) == words


def prints_source(path: Path) -> set[int]:
    """The cells that print library source on purpose (``source_with_helpers``, ``inspect.getsource``): English code
    and comments, as the library has them, in every edition."""
    cells = nbformat.read(path, as_version=4).cells
    return {index for index, cell in enumerate(cells) if cell.cell_type == "code" and PRINTS_SOURCE.search(cell.source)}


def test_at_most_a_tenth_of_the_printed_lines_carry_english():
    """Counted without the source code the chapters print on purpose (with its docstrings): a tenth of the rest."""
    lines = [(path.name[:2], index, line) for path in CHAPTERS for index, line in english_left.printed_lines(path)
             if index not in prints_source(path)]
    english = [(chapter, index, line) for chapter, index, line in lines if english_left.english_words(line)]
    assert len(lines) > 500, "the Chinese reader edition has lost its outputs: run make zh"
    assert len(english) <= MOST * len(lines), (
        f"{len(english)} of {len(lines)} printed lines of zh-CN/chapters carry English, more than {MOST:.0%}; "
        f"route them through tr() (python -m tools.english_left lists them), e.g. {english[:3]}")


SVG = '<svg xmlns="http://www.w3.org/2000/svg"><text>键</text></svg>'


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # read, not drawn: no CJK font needed here
def test_the_text_of_a_figure_is_read_whether_drawn_as_text_or_as_glyph_outlines():
    """Issue 41, item 10: the chapters store glyphs as outlines (svg.fonttype "path"), so that a figure looks the
    same whatever fonts its viewer has; matplotlib writes each text as a comment before its outlines."""
    import io

    from matplotlib import rc_context
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3, 2))
    axes = figure.subplots()
    axes.set_title("scores & weights -- per head")
    axes.set_xlabel("键")
    drawn = {}
    for fonttype in ("none", "path"):
        with rc_context({"svg.fonttype": fonttype}):
            buffer = io.StringIO()
            figure.savefig(buffer, format="svg")
        drawn[fonttype] = english_left.svg_texts(buffer.getvalue())
    assert "<text" not in buffer.getvalue()  # outlines: no font needed to see them
    assert {"键", "scores & weights -- per head"} <= set(drawn["none"])
    assert {"键", "scores & weights - - per head"} <= set(drawn["path"])  # "--" is not allowed in an XML comment
    assert english_left.english_words("scores & weights - - per head") == ["scores", "weights", "per", "head"]


@pytest.mark.parametrize(("kinds", "unreadable"), [
    ({"image/svg+xml": SVG}, []),
    ({"image/svg+xml": SVG, "image/png": "iVBORw0KGgo="}, []),  # the PNG beside the SVG of the same output
    ({"image/png": "iVBORw0KGgo="}, [0]),
])
def test_a_png_is_allowed_only_beside_an_svg_of_the_same_output(tmp_path, kinds, unreadable):
    figure = nbformat.v4.new_output("display_data", {**kinds, "text/plain": "<Figure size 900x550 with 1 Axes>"})
    notebook = tmp_path / "figure.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("fig", outputs=[figure])]), notebook)
    assert english_left.png_figures(notebook) == unreadable
    assert [text for _, text in english_left.figure_texts(notebook)] == (["键"] if "image/svg+xml" in kinds else [])


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda path: path.name[:2])
def test_no_figure_text_is_english(notebook):
    # A PNG is welcome beside the SVG of the same output (JupyterLab shows it where the notebook is untrusted); the
    # text is read from the SVG. A figure stored as PNG alone keeps its text unreadable.
    assert english_left.png_figures(notebook) == [], (
        "figures stored as PNG alone keep their text unreadable: store SVG too (%config InlineBackend.figure_formats"
        " = ['svg', 'retina'], as chapter 00 does)")
    english = [(index, text) for index, text in english_left.figure_texts(notebook) if english_left.english_words(text)]
    assert not english, f"English figure text, cell and text: {english[:4]}; wrap it in figure_text()"
