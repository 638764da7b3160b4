"""The nbgrader round trip, without a hub: generate the assignment from chapter 08, submit a correct and a wrong
notebook, autograde both with nbgrader itself, and read the scores from nbgrader's gradebook."""

import re
import shutil
from pathlib import Path

import nbformat
import pytest

nbgrader_api = pytest.importorskip("nbgrader.api")

from tools.nbgrader_course import nbgrader, write_course  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# The English chapter and its Chinese edition (which has the same code cells and nbgrader metadata, and prints Chinese)
CHAPTERS = [ROOT / "notebooks" / "08_pitfalls.ipynb", ROOT / "zh-CN" / "notebooks" / "08_pitfalls.ipynb"]


# Chapter 08's answers, by the exercise each answer cell names: all right, and one wrong (it loses one point).
# tests/hub/ submits the same two through a JupyterHub.
RIGHT_CH08 = {"Exercise 1": "def fixed_softmax(scores, mask):\n    return torch.softmax(scores.masked_fill("
                            "mask == 0, torch.finfo(scores.dtype).min), dim=-1)",
              "Exercise 3": "answer_lens = ([2, 2], [7, 7])",
              "Exercise 4": "answer_overflow = float('-inf')"}
WRONG_CH08 = {**RIGHT_CH08, "Exercise 4": "answer_overflow = -65604"}


def fill_in(nb: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with each '# YOUR CODE HERE' stub of a solution cell replaced by the given code.

    A solution cell names its exercise in a comment, "Exercise 3" (or, translated in the Chinese edition, "练习 3").
    """
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solutions and all("raise NotImplementedError" in c.source for c in solutions)  # nbgrader's stubs
    for cell in solutions:
        number = re.search(r"(?:Exercise|练习) (\d+)", cell.source).group(1)
        cell.source = answers[f"Exercise {number}"]
    return nb


@pytest.mark.parametrize("chapter", CHAPTERS, ids=["en", "zh_CN"])
def test_round_trip(tmp_path, chapter):
    """Right answers score full marks, one wrong answer loses its point; nbgrader does every step."""
    course = tmp_path / "course"
    assert write_course(course, [chapter]) == ["ch08"]
    nbgrader(course, "generate_assignment", "ch08", "--force")
    release = course / "release" / "ch08" / chapter.name
    assert "### BEGIN SOLUTION" not in release.read_text()
    # The checker cells are the instructor's, unchanged: the checkers themselves raise under nbgrader.
    def graded(path: Path) -> list[str]:
        cells = nbformat.read(path, as_version=4).cells
        return [c.source for c in cells if c.metadata.get("nbgrader", {}).get("grade")]

    tests = graded(release)
    assert tests == graded(chapter)
    assert tests and all(t.startswith("check_") for t in tests)

    for student, answers in [("right", RIGHT_CH08), ("wrong", WRONG_CH08)]:
        nbgrader(course, "db", "student", "add", student)
        target = course / "submitted" / student / "ch08" / chapter.name
        target.parent.mkdir(parents=True)
        nbformat.write(fill_in(nbformat.read(release, as_version=4), answers), target)
    nbgrader(course, "autograde", "ch08", "--force")

    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("ch08", s).score for s in ("right", "wrong")}
        max_score = gradebook.find_assignment("ch08").max_score
    assert max_score == 3
    assert scores == {"right": 3, "wrong": 2}
    shutil.rmtree(course)
