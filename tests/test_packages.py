"""The repository's two packages (issue 50 item 1): ``mha_lib``, the layers and their math, and ``mha_chapters``,
what the chapters need beyond them. The chapters' package imports the library; the library never imports it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "mha_lib"
CORE_LINES = 2_500  # the aim of issue 50 (chapter 14's Transformer blocks will come on top, in a module of their own)


def imported_modules(path: Path, text: str | None = None) -> set[str]:
    """The absolute names of the modules that ``path`` imports (relative imports resolved against its package);
    ``text``: read this source as if it were the file ``path``."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def test_the_library_never_imports_the_chapters_package_nor_plotting():
    found = {f"{path.relative_to(ROOT)}: {name}" for path in sorted(LIBRARY.rglob("*.py"))
             for name in imported_modules(path)
             if name.split(".")[0] in ("mha_chapters", "matplotlib", "ipywidgets", "IPython")}
    assert not found, f"the library imports what belongs to the chapters: {sorted(found)}"


def test_the_import_check_sees_an_import_of_the_chapters():
    """The check above can fail: absolute, relative and plain imports are all resolved."""
    text = "import mha_chapters.toy\nfrom .functional import masked_softmax\nfrom mha_chapters import tr\n"
    found = imported_modules(LIBRARY / "probe.py", text)
    assert found == {"mha_chapters.toy", "mha_lib.functional", "mha_chapters"}


def test_importing_the_library_loads_nothing_of_the_chapters():
    code = ("import sys; sys.modules.update(matplotlib=None, ipywidgets=None, IPython=None); import mha_lib; "
            "import mha_lib.flex, mha_lib.kv_cache, mha_lib.latent, mha_lib.rope, mha_lib.utils; "
            "print(sorted(name for name in sys.modules if name.startswith('mha_chapters')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_library_is_small():
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in LIBRARY.rglob("*.py"))
    assert lines <= CORE_LINES, f"mha_lib has {lines} lines, more than the {CORE_LINES} it aims at"


@pytest.mark.parametrize("moved", ["chapters", "exercises", "_bench", "plotting.py"])
def test_no_course_support_is_left_in_the_library(moved):
    assert not (LIBRARY / moved).exists()


def test_the_chapters_package_speaks_the_librarys_language():
    """One language for the collection: set in either package, both follow it."""
    import mha_chapters
    import mha_lib
    from mha_chapters.exercises._engine import CORRECT

    try:
        mha_lib.set_language("zh_CN")
        assert mha_chapters.get_language() == "zh_CN" and mha_chapters.tr(CORRECT) == "✅ 正确："
        mha_chapters.set_language("en")
        assert mha_lib.get_language() == "en" and mha_chapters.tr(CORRECT) == CORRECT
    finally:
        mha_chapters.set_language("en")
