"""The notebooks are committed as a reader should meet them: executed in order, with clean outputs.

nbval (``make test-notebooks``) proves the stored outputs are what the code produces; these checks
cover what nbval does not look at.
"""

import re
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
    """Timing, widget and training-log cells only: at most 3% of all code cells, and 15% of any chapter's.

    A printed number that another CPU computes differently is made robust at its cause (float64, a coarser
    print, the asserted verdict), never hidden behind NBVAL_IGNORE_OUTPUT; this bound keeps it that way.
    """
    ignored, total = ignored_share(NOTEBOOKS)
    assert ignored <= 0.03 * total, f"{ignored} of {total} code cells are not checked by nbval"
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
