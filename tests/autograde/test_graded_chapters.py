"""Every graded chapter as a course assignment, autograded by nbgrader, four students each (``make test-course``).

For each chapter of ``notebooks/`` with graded cells, the course is made with a seed of its own (so the numbers of
the variants are not the public ones), and four notebooks are submitted:

- **right**: the course's solutions (the variants' numbers) and the model answer of the written question;
- **partly right**: right, except the answers of ``PARTLY_RIGHT`` in ``grading/chNN.py`` (or, without them, the last
  exercise left blank);
- **blank**: the release as fetched;
- **cheat**: no work, every trick below in every answer cell.

nbgrader autogrades them (through tools/autograde.py: the answers run in a sandbox, the grade is computed outside
it); the scores must be full (after a teaching assistant grades the written answer), strictly between, zero and
zero. The cheat bank, one named attack per test, is tests/autograde/test_cheat_bank.py. The cheat here puts the
older tricks together, each of which gave marks to a checker-based test or would to a naive hidden test:
rebinding every ``check_...`` name; replacing the checkers (and the engine's ``report``) inside
``mha_chapters.exercises``; rebinding ``AssertionError`` (globally and in ``builtins``); ``torch.allclose``/
``torch.equal``/``Tensor.__eq__`` that always agree; shadowing ``len``/``range``/``zip`` with functions that make
loops empty; an IPython exception handler that swallows ``AssertionError``; functions that display a number
(nbgrader reads a test cell's displayed number as partial credit); emptying the locked test cells (nbgrader
restores them).
"""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import nbformat
import pytest

nbgrader_api = pytest.importorskip("nbgrader.api")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import grading  # noqa: E402
from tools.editions import strip_markers  # noqa: E402
from tools.nbgrader_course import graded, nbgrader, write_course  # noqa: E402

SEED = "course-test"


def _autograde_cpu_s(path: Path) -> float:
    """CPU seconds nbgrader took to autograde one submission of the chapter, as hub/measure_sizing.py recorded them
    in hub/sizing.json; infinite for a chapter it has not measured (a new chapter may well be the slowest)."""
    record = json.loads((ROOT / "hub" / "sizing.json").read_text())
    measured = {row["assignment"]: row["cpu_s"] for row in record.get("autograde", [])}
    return measured.get("ch" + path.name[:2], math.inf)


# The slowest chapters first: pytest-xdist hands the tests out in this order, so no worker is left with a slow
# chapter at the end while the others idle.
GRADED = sorted((path for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if graded(path)),
                key=_autograde_cpu_s, reverse=True)

CHEAT = '''\
import builtins
import sys
import torch
from IPython import get_ipython

def _pass(*args, **kwargs):
    print("✅ Correct")

for _name in list(globals()):
    if _name.startswith("check_"):
        globals()[_name] = _pass
for _module in list(sys.modules.values()):
    if getattr(_module, "__name__", "").startswith("mha_chapters.exercises"):
        for _name in dir(_module):
            if _name.startswith("check_") or _name == "report":
                setattr(_module, _name, _pass)
AssertionError = Exception
builtins.AssertionError = Exception
torch.allclose = torch.equal = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: True
len = lambda x: 0
range = zip = lambda *args: ()
get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)

def _fake(*args, **kwargs):
    get_ipython().displayhook(1000)  # a displayed number in a test cell counts as partial credit
    return None

{names} = _fake
{values} = None
'''


def _solutions(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def _defined(source: str) -> tuple[list[str], list[str]]:
    tree = ast.parse(strip_markers(source))
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    values = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    return functions, values


def submissions(course: Path, path: Path) -> dict[str, nbformat.NotebookNode]:
    """The four notebooks of one chapter, from its release (what students fetch) and its course source."""
    prefix = "ch" + path.name[:2]
    release = nbformat.read(course / "release" / prefix / path.name, as_version=4)
    source = _solutions(nbformat.read(course / "source" / prefix / path.name, as_version=4))
    spec = grading.chapter(prefix)
    explain = {f"{prefix}_{e.key}": e for e in spec.EXPLAIN}

    def filled(overrides: dict[str, str], blank: set[str] = frozenset()) -> nbformat.NotebookNode:
        nb = nbformat.from_dict(release)
        for grade_id, cell in _solutions(nb).items():
            if grade_id in blank:
                continue
            if grade_id in explain:
                cell.source = explain[grade_id].model["en"]
            else:
                cell.source = overrides.get(grade_id, strip_markers(source[grade_id].source))
        return nb

    answers = [g for g in source if g not in explain]
    partly = {g: code(strip_markers(source[g].source)) if callable(code) else code
              for g, code in ((f"{prefix}_ex{k}_answer", c) for k, c in getattr(spec, "PARTLY_RIGHT", {}).items())}
    functions, values = set(), set()
    for grade_id in answers:
        f, v = _defined(source[grade_id].source)
        functions.update(f)
        values.update(v)
    cheat = CHEAT.format(names=" = ".join(sorted(functions)) or "_unused", values=" = ".join(sorted(values)) or "_none")
    cheating = filled({g: cheat for g in answers}, blank=set(explain))
    for cell in cheating.cells:  # the locked test cells emptied: nbgrader puts them back
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            cell.source = "pass"
    return {"right": filled({}),
            "partly": filled(partly, blank=set() if partly else {answers[-1]}),
            "blank": nbformat.from_dict(release),
            "cheat": cheating}


@pytest.mark.parametrize("path", GRADED, ids=[p.name[:2] for p in GRADED])
def test_four_students(tmp_path, path):
    prefix = "ch" + path.name[:2]
    course = tmp_path / "course"
    assert write_course(course, [path], seed=SEED) == [prefix]
    nbgrader(course, "generate_assignment", prefix, "--force")
    release = (course / "release" / prefix / path.name).read_text()
    assert "BEGIN HIDDEN TESTS" not in release and "BEGIN SOLUTION" not in release
    for student, nb in submissions(course, path).items():
        target = course / "submitted" / student / prefix / path.name
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)
    nbgrader(course, "autograde", prefix, "--create", "--force")  # --create: adds the four students to the gradebook

    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assignment = gradebook.find_assignment(prefix)
        notebook = path.stem
        manual = [c for c in gradebook.find_notebook(notebook, prefix).grade_cells
                  if c.cell_type == "markdown"]
        manual_points = sum(c.max_score for c in manual)
        auto_max = assignment.max_score - manual_points
        assert manual_points > 0 and auto_max > 0
        scores = {s: gradebook.find_submission(prefix, s).score for s in ("right", "partly", "blank", "cheat")}
        print(f"{prefix}: {scores} of {auto_max} autograded + {manual_points} by hand")
        assert scores["right"] == auto_max
        assert 0 < scores["partly"] < auto_max
        assert scores["blank"] == 0
        assert scores["cheat"] == 0
        # The written answer waits for a teaching assistant, who gives it full marks here: then the total is full.
        right = gradebook.find_submission_notebook(notebook, prefix, "right")
        assert right.needs_manual_grade
        for cell in manual:
            grade = gradebook.find_grade(cell.name, notebook, prefix, "right")
            grade.manual_score = cell.max_score
        gradebook.db.commit()
        assert gradebook.find_submission(prefix, "right").score == assignment.max_score


def test_every_graded_chapter_has_hidden_tests():
    """A chapter whose exercises are graded needs grading/chNN.py: the course build stops without it."""
    assert GRADED
    missing = [p.name for p in GRADED if grading.chapter("ch" + p.name[:2]) is None]
    assert not missing, f"no hidden tests (grading/chNN.py) for {missing}: docs/maintaining.md, 'A new exercise'"
