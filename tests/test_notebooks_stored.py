"""The notebooks are committed as a reader should meet them: executed in order, with clean outputs.

nbval (``make test-notebooks``) proves the stored outputs are what the code produces; these checks
cover what nbval does not look at.
"""

import base64
import re
import struct
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Both committed editions: notebooks/ (solved) and chapters/ (the reader edition, tools/editions.py).
NOTEBOOKS = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("chapters/*.ipynb"))
MACHINE_PATH = re.compile(r"/tmp/ipykernel|/root/|/home/\w+/|/work/|/Users/\w+/|site-packages")
IGNORED = ("NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP")


def code_cells(path: Path) -> list:
    return [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


def test_there_are_notebooks():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_is_valid_and_named_for_its_place(path):
    nbformat.validate(nbformat.read(path, as_version=4))
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_was_run_top_to_bottom_in_a_fresh_kernel(path):
    counts = [cell.execution_count for cell in code_cells(path) if cell.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), "re-run it with `make outputs`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_outputs_show_no_errors_warnings_or_machine_paths(path):
    for cell in code_cells(path):
        raises = "raises-exception" in cell.metadata.get("tags", []) or "NBVAL_RAISES_EXCEPTION" in cell.source
        for output in cell.outputs:
            assert raises or output.output_type != "error", f"a traceback is stored in:\n{cell.source}"
            assert output.get("name") != "stderr", f"stderr (a warning?) is stored in:\n{cell.source}"
            assert not MACHINE_PATH.search(str(output)), f"a machine path is stored in:\n{cell.source}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_first_code_cell_imports_mha_lib(path):
    assert "mha_lib" in code_cells(path)[0].source


def ignored_share(paths: list[Path]) -> tuple[int, int]:
    cells = [cell for path in paths for cell in code_cells(path)]
    return sum(any(mark in cell.source for mark in IGNORED) for cell in cells), len(cells)


def test_few_cells_escape_output_checking():
    """Timing, widget and training-log cells only: at most 3.5% of all code cells, and 15% of any chapter's.

    A printed number that another CPU computes differently is made robust at its cause (float64, a coarser
    print, the asserted verdict), never hidden behind NBVAL_IGNORE_OUTPUT; this bound keeps it that way.
    """
    ignored, total = ignored_share(NOTEBOOKS)
    assert ignored <= 0.035 * total, f"{ignored} of {total} code cells are not checked by nbval"
    for path in NOTEBOOKS:
        ignored, total = ignored_share([path])
        assert ignored <= 0.15 * total, f"{path.name}: {ignored} of {total} code cells are not checked by nbval"


ALL_EDITIONS = NOTEBOOKS + sorted(ROOT.glob("zh-CN/*/[0-9][0-9]_*.ipynb"))
FONT_FAMILY = re.compile(r"font-family:\s*'?([^;'\"]+)")


@pytest.mark.parametrize("path", ALL_EDITIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_figures_use_no_font_that_browsers_lack(path):
    # The SVG figures keep their text as text, so the reader's browser picks the fonts. Mathtext draws the radical
    # of \sqrt{...} from STIXSizeOneSym, which browsers do not have: they put a small fallback √ beside the bar.
    # The chapters' labels write √ as a character inside the math (r"$1/√d_k$"), drawn from DejaVu Sans.
    families = set()
    for cell in code_cells(path):
        for output in cell.get("outputs", []):
            svg = output.get("data", {}).get("image/svg+xml", "")
            families.update(FONT_FAMILY.findall("".join(svg) if isinstance(svg, list) else svg))
    stix = sorted(family for family in families if family.startswith("STIX"))
    assert not stix, f"figures name {stix}: write the radical as the character √ in the label, not \\sqrt"


def figure_outputs(path: Path) -> list[tuple[int, dict]]:
    """(cell index, output) for every output of the notebook that stores a picture (any image/ type)."""
    cells = nbformat.read(path, as_version=4).cells
    return [(index, output) for index, cell in enumerate(cells) for output in cell.get("outputs", [])
            if any(kind.startswith("image/") for kind in output.get("data", {}))]


def png_size(encoded: str) -> tuple[int, int]:
    """Width and height in pixels of a base64 PNG, read from its IHDR chunk (bytes 16 to 24)."""
    return struct.unpack(">II", base64.b64decode(encoded[:44])[16:24])


@pytest.mark.parametrize("path", ALL_EDITIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_figure_is_an_svg_with_a_sharp_png_beside_it(path):
    # JupyterLab draws no SVG of an untrusted notebook, and every notebook a reader clones, downloads or opens on
    # Binder is untrusted: there it shows the PNG, where there is one, else "<Figure size ... with 1 Axes>". A trusted
    # notebook, the slides and the static pages show the SVG, whose text a translator reads (tools/english_left.py).
    # The PNG is drawn at twice the resolution it is shown at ("retina"), so it stays sharp on a high-density screen.
    for index, output in figure_outputs(path):
        kinds = sorted(kind for kind in output["data"] if kind.startswith("image/"))
        assert kinds == ["image/png", "image/svg+xml"], (
            f"cell {index} stores {kinds}: execute the chapter with "
            "%config InlineBackend.figure_formats = [\"svg\", \"retina\"] (make outputs)")
        width, height = png_size(output["data"]["image/png"])
        shown = output.get("metadata", {}).get("image/png", {})
        assert (shown.get("width"), shown.get("height")) == (width // 2, height // 2), (
            f"cell {index}: a PNG of {width}x{height} pixels shown at {shown}, not at half its pixels")


CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_english_figures_draw_no_chinese_so_their_png_needs_no_cjk_font(path):
    # The PNG is drawn by matplotlib on the machine that executed the chapter: a Chinese character in an English
    # figure would be an empty box there without a CJK font. (The Chinese edition's figures take their Chinese
    # text through figure_text(), which keeps the English text where no CJK font is installed.)
    for index, output in figure_outputs(path):
        svg = output["data"]["image/svg+xml"]
        found = CJK.findall("".join(svg) if isinstance(svg, list) else svg)
        assert not found, f"cell {index} draws {''.join(found[:10])} in an English figure"
