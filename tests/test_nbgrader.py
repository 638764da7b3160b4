"""The nbgrader round trip, without a hub: generate the assignment from chapter 08, submit a correct and a wrong
notebook, autograde both with nbgrader itself, and read the scores from nbgrader's gradebook. (Every graded chapter
with four kinds of submission, right, partly right, blank and cheating: tests/autograde, `make test-course`.)"""

import re
import shutil
from pathlib import Path

import nbformat
import pytest

nbgrader_api = pytest.importorskip("nbgrader.api")

import grading  # noqa: E402
from tools.nbgrader_course import nbgrader, write_course  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# The English chapter and its Chinese edition (which has the same code cells and nbgrader metadata, and prints Chinese)
CHAPTERS = [ROOT / "notebooks" / "08_pitfalls.ipynb", ROOT / "zh-CN" / "notebooks" / "08_pitfalls.ipynb"]


# Chapter 08's answers, by the exercise each answer cell names: all right, and one wrong (it loses one point). The
# written question (grading/ch08.py) is left unanswered: it scores 0 until a teaching assistant grades it.
# tests/hub/ submits the same two through a JupyterHub.
RIGHT_CH08 = {"Exercise 1": "def fixed_softmax(scores, mask):\n    return torch.softmax(scores.masked_fill("
                            "mask == 0, torch.finfo(scores.dtype).min), dim=-1)",
              "Exercise 2": "answer_no_batch = ((4, 8, 1, 8), 1)",
              "Exercise 3": "answer_lens = ([2, 2], [7, 7])",
              "Exercise 4": "answer_overflow = float('-inf')"}
WRONG_CH08 = {**RIGHT_CH08, "Exercise 4": "answer_overflow = -65604"}
# Exercise 1 in three parts, 2, 3 and 4: 6 points autograded; the written answer: 2 by hand
CH08_MAX_SCORE, CH08_SCORES = 8, {"right": 6, "wrong": 5}


def fill_in(nb: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with each '# YOUR CODE HERE' stub of a solution cell replaced by the given code.

    A solution cell names its exercise in a comment, "Exercise 3" (or, translated in the Chinese edition, "练习 3").
    """
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    assert solutions and all("raise NotImplementedError" in c.source for c in solutions)  # nbgrader's stubs
    for cell in solutions:
        number = re.search(r"(?:Exercise|练习) (\d+)", cell.source).group(1)
        cell.source = answers[f"Exercise {number}"]
    return nb


def sandbox_here() -> bool:
    """Whether bubblewrap runs here (Linux with user namespaces), as autograde's sandbox needs."""
    from tools import autograde

    bwrap = shutil.which("bwrap")
    return bool(bwrap) and autograde._bwrap_works(bwrap)


@pytest.mark.slow  # nbgrader builds a course and autograde executes the submissions: about 25 s each
@pytest.mark.parametrize("chapter", CHAPTERS, ids=["en", "zh_CN"])
def test_round_trip(tmp_path, chapter):
    """Right answers score full marks, one wrong answer loses its point; nbgrader does every step."""
    course = tmp_path / "course"
    assert write_course(course, [chapter]) == ["ch08"]
    nbgrader(course, "generate_assignment", "ch08", "--force")
    release = course / "release" / "ch08" / chapter.name
    assert "### BEGIN SOLUTION" not in release.read_text()
    assert "BEGIN HIDDEN TESTS" not in release.read_text()
    # The written question's model answer and rubric stay in the source: the release has nbgrader's stub
    (explain,) = grading.chapter("ch08").EXPLAIN
    text = nbformat.read(release, as_version=4)
    assert not any(part[:40] in cell.source for cell in text.cells for texts in (explain.model, explain.rubric)
                   for part in texts.values())
    assert (course / "rubrics" / "ch08.md").read_text().count("\n## ") == 1
    # The graded test cells are hidden tests (grading/ch08.py): the release shows their first line only.
    source = course / "source" / "ch08" / chapter.name
    tests = [c.source for c in nbformat.read(release, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert tests and all(t.startswith("# ") and len(t.splitlines()) == 1 for t in tests), tests
    assert source.read_text().count("### BEGIN HIDDEN TESTS") == len(tests)

    for student, answers in [("right", RIGHT_CH08), ("wrong", WRONG_CH08)]:
        nbgrader(course, "db", "student", "add", student)
        target = course / "submitted" / student / "ch08" / chapter.name
        target.parent.mkdir(parents=True)
        nbformat.write(fill_in(nbformat.read(release, as_version=4), answers), target)
    if not sandbox_here():  # macOS, Windows: no bubblewrap, so the answers run unsandboxed, as on a laptop
        with (course / "nbgrader_config.py").open("a") as config:  # (the sandbox: tests/autograde, make test-course)
            config.write("\nc.SandboxGrade.unsafe_no_sandbox = True\n")
    nbgrader(course, "autograde", "ch08", "--force")

    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("ch08", s).score for s in ("right", "wrong")}
        max_score = gradebook.find_assignment("ch08").max_score
    assert max_score == CH08_MAX_SCORE
    assert scores == CH08_SCORES
    shutil.rmtree(course)
