"""The cheat bank (tests/autograde/cheats.py) autograded through nbgrader: no attack scores more than 20% of a
chapter's autograded points, and on the chapters CI runs (04 and 09: predicted values, functions and written answers
between them) none scores anything.

``make test-course`` runs the bank on chapters 04 and 09; ``make test-course-full`` (``MHA_CHEAT_BANK=full``) on
every graded chapter. One course per chapter: a right submission and one submission per attack, autograded together,
once per run (the first pytest-xdist worker to need a chapter grades it; the others read its scores or grade another
chapter meanwhile).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import sys
from pathlib import Path

import nbformat
import pytest

nbgrader_api = pytest.importorskip("nbgrader.api")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cheats import CHEATS, cheat_source  # noqa: E402
from test_graded_chapters import GRADED, SEED, _defined, _solutions, submissions  # noqa: E402

import grading  # noqa: E402
from tools.nbgrader_course import nbgrader, write_course  # noqa: E402

CI_CHAPTERS = ("04", "09")
FULL = os.environ.get("MHA_CHEAT_BANK") == "full"
CHAPTERS = [p for p in GRADED if FULL or p.name[:2] in CI_CHAPTERS]
_graded: dict[str, dict] = {}


def cheating(course: Path, path: Path, name: str) -> nbformat.NotebookNode:
    """The release of one chapter with the attack ``name`` in its first answer cell, the rest as released."""
    prefix = "ch" + path.name[:2]
    release = nbformat.read(course / "release" / prefix / path.name, as_version=4)
    source = _solutions(nbformat.read(course / "source" / prefix / path.name, as_version=4))
    explain = {f"{prefix}_{e.key}" for e in grading.chapter(prefix).EXPLAIN}
    functions, values = [], []
    for grade_id, cell in source.items():
        if grade_id not in explain:
            f, v = _defined(cell.source)
            functions += [n for n in f if n not in functions]
            values += [n for n in v if n not in values]
    probes = [c.metadata["nbgrader"]["grade_id"] for c in release.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    code = cheat_source(name, str(course.resolve()), functions, values, probes)
    first = next(c for g, c in _solutions(release).items() if g not in explain)
    first.source = code
    return release


def graded_chapter(request, path: Path) -> dict:
    """The chapter's course, its right submission and every attack autograded: scores, points and the course.

    Autograded once per run, by the first pytest-xdist worker that takes the chapter's lock in the folder the workers
    share; it leaves the result there for the others. A worker that finds the lock taken grades a chapter that nobody
    has started meanwhile (one the run's tests need), and waits only when none is left: pytest-xdist hands both
    workers tests of the same chapter, and the second used to wait for as long as the first graded (5.5 of the step's
    21 minutes of worker time on a 2-core Xeon). ``--dist loadgroup`` would keep a chapter on one worker, but with
    pytest 9.2 it silently groups nothing (pytest-xdist issue 1386)."""
    prefix = "ch" + path.name[:2]
    if prefix in _graded:
        return _graded[prefix]
    base = request.getfixturevalue("tmp_path_factory").getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    here = sys.modules[__name__]
    needed = {item.callspec.params["path"] for item in request.session.items if item.module is here}
    while not _grade_once(shared, path, wait=False):
        unstarted = [p for p in CHAPTERS if p in needed and p != path and not _record(shared, p).exists()]
        if not any(_grade_once(shared, p, wait=False) for p in unstarted):
            _grade_once(shared, path, wait=True)
            break
    graded = json.loads(_record(shared, path).read_text())
    graded["course"] = Path(graded["course"])
    _graded[prefix] = graded
    return graded


def _record(shared: Path, path: Path) -> Path:
    return shared / f"bank-ch{path.name[:2]}.json"


def _grade_once(shared: Path, path: Path, wait: bool) -> bool:
    """Autograde the chapter's bank into its record unless it is there; False, at once, where another worker holds
    the chapter's lock and ``wait`` is false."""
    prefix = "ch" + path.name[:2]
    with open(shared / f"bank-{prefix}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        if not _record(shared, path).exists():
            _record(shared, path).write_text(json.dumps(_autograde_bank(shared / prefix / "course", path)))
    return True


def _autograde_bank(course: Path, path: Path) -> dict:
    prefix = "ch" + path.name[:2]
    write_course(course, [path], seed=SEED)
    nbgrader(course, "generate_assignment", prefix, "--force")
    students = {"right": submissions(course, path)["right"]}
    students.update({f"cheat_{name}": cheating(course, path, name) for name in CHEATS})
    for student, nb in students.items():
        target = course / "submitted" / student / prefix / path.name
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)
    generated = (course / ".generated.json").read_text()
    nbgrader(course, "autograde", prefix, "--create", "--force")
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assignment = gradebook.find_assignment(prefix)
        manual = sum(c.max_score for c in gradebook.find_notebook(path.stem, prefix).grade_cells
                     if c.cell_type == "markdown")
        scores = {s: gradebook.find_submission(prefix, s).score for s in students}
        auto_max = assignment.max_score - manual
    print(f"{prefix}: {scores} of {auto_max} autograded")
    return {"scores": scores, "auto_max": auto_max, "course": str(course), "generated": generated}


CASES = [pytest.param(path, name, id=f"{path.name[:2]}-{name}") for path in CHAPTERS for name in CHEATS]


@pytest.mark.parametrize(("path", "name"), CASES)
def test_an_attack_scores_nothing(request, path, name):
    graded = graded_chapter(request, path)
    scores, auto_max = graded["scores"], graded["auto_max"]
    assert scores["right"] == auto_max  # the course grades: a right answer still gets every point
    score = scores[f"cheat_{name}"]
    assert score <= 0.2 * auto_max, f"{name}: {score} of {auto_max}"
    if path.name[:2] in CI_CHAPTERS:
        assert score == 0, f"{name}: {score} of {auto_max}"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name[:2] for p in CHAPTERS])
def test_no_secret_reaches_the_autograded_notebook(request, path):
    """The seed and the course's files, which the read_* attacks print, are in no autograded notebook; the course's
    seed and gradebook of solutions are as they were (nothing of the submissions wrote to them)."""
    graded = graded_chapter(request, path)
    course = graded["course"]
    seed = json.loads((course / ".generated.json").read_text())["seed"]
    assert (course / ".generated.json").read_text() == graded["generated"]
    autograded = sorted((course / "autograded").glob(f"cheat_*/ch{path.name[:2]}/*.ipynb"))
    assert len(autograded) == len(CHEATS)
    for notebook in autograded:
        text = notebook.read_text()
        assert SEED not in text and seed not in text, notebook
        nb = nbformat.read(notebook, as_version=4)
        for cell in nb.cells:  # outputs only in the graded test cells, and only the grader's: nothing printed
            if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
                assert cell.outputs == [], (notebook, cell.source[:80])
            for output in cell.get("outputs", []):
                assert output.output_type in ("stream", "error"), output
                assert "grade_cells" not in json.dumps(output) and "BEGIN SOLUTION" not in json.dumps(output)
    with sqlite3.connect(course / "gradebook.db") as db:  # the source cells as generate_assignment stored them
        assert db.execute("select count(*) from source_cell").fetchone()[0] > 0
    for student in ("cheat_files_for_later",):
        folder = course / "autograded" / student / f"ch{path.name[:2]}"
        assert not (folder / "math.py").exists() and not (folder / "results.json").exists()
