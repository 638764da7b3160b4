"""The builds for a course that grades the exercises (``make student``: build/student/) hold no solution: no
nbgrader marker, no "Show a solution" fold, and none of the solution code of notebooks/
(tools.editions.solution_lines)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from test_decks import page_text, solutions_in

from tools.editions import LANGUAGES, SUMMARY_LINE

ROOT = Path(__file__).resolve().parents[2]
STUDENT = ROOT / "build" / "student"
SOURCES = {"en": ROOT / "notebooks", "zh-CN": ROOT / "zh-CN" / "notebooks"}
FOLDS = [SUMMARY_LINE.format(words) for _, _, words in LANGUAGES.values()]  # the reader edition's solution folds
FOLDS += [f"<summary>{words}</summary>" for _, _, words in LANGUAGES.values()]  # ... as the book renders them
CHAPTERS = sorted(path.stem for path in SOURCES["en"].glob("[0-9][0-9]_*.ipynb"))


def student_files(language: str, stem: str) -> list[Path]:
    """Every file of the student builds that shows the chapter: deck, handout, book page, its notebook."""
    if not (STUDENT / "slides" / language / "index.html").is_file():
        pytest.fail(f"{STUDENT} is missing or incomplete: `make student` (or `make test-slides`) builds it")
    files = [STUDENT / "slides" / language / f"{stem}.slides.html",
             STUDENT / "slides" / language / f"{stem}.handout.html",
             STUDENT / "book" / language / f"{stem}.html",
             STUDENT / "book" / language / "_sources" / f"{stem}.ipynb",
             STUDENT / "notebooks" / language / f"{stem}.ipynb"]
    missing = [str(path) for path in files if not path.is_file()]
    assert missing == [], f"not built: {missing}"
    return files


def shown_text(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        parts = [cell.source for cell in nb.cells]
        parts += [str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
                  for cell in nb.cells for output in cell.get("outputs", [])]
        return "\n".join(parts)
    return page_text(path.read_text(encoding="utf-8"))


CASES = [(language, stem) for language in SOURCES for stem in CHAPTERS]


@pytest.mark.parametrize(("language", "stem"), CASES, ids=[f"{lang}-{stem[:2]}" for lang, stem in CASES])
def test_student_builds_hold_no_solution(language, stem):
    nb = nbformat.read(SOURCES[language] / f"{stem}.ipynb", as_version=4)
    problems = []
    for path in student_files(language, stem):
        raw = path.read_text(encoding="utf-8")
        problems += [f"{path.relative_to(ROOT)}: {fold!r}" for fold in FOLDS if fold in raw]
        problems += [f"{path.relative_to(ROOT)}: {line!r}" for line in solutions_in(shown_text(path), nb, language)]
    assert problems == []


def test_the_solution_search_finds_solutions_where_they_are():
    """The same search on the solved handout and the reader edition's book source: it must find them there."""
    nb = nbformat.read(SOURCES["en"] / "04_multi_head_attention.ipynb", as_version=4)
    solved = ROOT / "build" / "slides" / "04_multi_head_attention.handout.html"
    if not solved.is_file():
        pytest.fail(f"{solved} is missing: `make slides`")
    assert solutions_in(page_text(solved.read_text(encoding="utf-8")), nb, "en")
    reader = nbformat.read(ROOT / "chapters" / "04_multi_head_attention.ipynb", as_version=4)
    assert solutions_in("\n".join(cell.source for cell in reader.cells), nb, "en")
