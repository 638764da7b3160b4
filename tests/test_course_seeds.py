"""Numbers per student and answers that are not public (issue 49, items 3 and 4).

- Each student's numbers derive from an HMAC of the course's secret, the chapter and the student id
  (grading.student_seed): the same inputs give the same numbers, another student or chapter others, and without the
  secret they cannot be derived.
- tools/nbgrader_course.py --students writes each student's own copy and the private source autograde grades them
  against; two students get different numbers, and each scores full marks with their own numbers, not with another's.
- The feedback shows no seed, no hidden test and no output of an answer cell.
- The practice check says whether an answer is well-formed, never whether it is right, and holds no expected value.
- The written questions' model answers and rubrics and the variants' solutions come from the instructor pack: the
  public tree holds none of the real pack's texts (with ``MHA_INSTRUCTOR_PACK`` set to it), only a labelled sample.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest

import grading
from grading import pack as packs
from mha_chapters.practice import check_one, well_formed
from tools.editions import strip_markers

ROOT = Path(__file__).resolve().parent.parent
CH04 = ROOT / "notebooks" / "04_multi_head_attention.ipynb"
SECRET = bytes(range(32))


def params_of(seed: str, prefix: str = "ch04", number: int = 1) -> dict:
    variant = grading.chapter(prefix).EXERCISES[number].variant
    return variant.params(grading.course_rng(seed, prefix, f"ex{number}"))


# ---- the derivation -------------------------------------------------------------------------------------------

def test_same_student_same_numbers():
    assert grading.student_seed(SECRET, "ch04", "alice") == grading.student_seed(SECRET, "ch04", "alice")
    assert params_of(grading.student_seed(SECRET, "ch04", "alice")) == \
        params_of(grading.student_seed(bytes(range(32)), "ch04", "alice"))


def test_other_students_and_chapters_other_seeds():
    seeds = {grading.student_seed(SECRET, prefix, student) for prefix in ("ch02", "ch04", "ch09")
             for student in (f"student{n}" for n in range(60))}
    assert len(seeds) == 180
    # ... and other numbers: a class of 60 does not share one set of ch04 exercise 3's parameters
    drawn = [tuple(sorted(params_of(grading.student_seed(SECRET, "ch04", f"student{n}"), number=3).items()))
             for n in range(60)]
    assert len(set(drawn)) > 30


def test_two_students_different_numbers():
    alice = [params_of(grading.student_seed(SECRET, "ch04", "alice"), number=n) for n in (1, 3, 4)]
    bob = [params_of(grading.student_seed(SECRET, "ch04", "bob"), number=n) for n in (1, 3, 4)]
    assert alice != bob


def test_not_derivable_without_the_secret():
    seed = grading.student_seed(SECRET, "ch04", "alice")
    # what a student knows (the chapter, their id) without the secret: another secret, no secret, the public seed
    assert seed != grading.student_seed(b"\0" * 32, "ch04", "alice")
    assert seed not in {grading.course_rng(None, "ch04", "alice").random().hex(), "ch04/alice", "public"}
    with pytest.raises(ValueError, match="secret must be at least 16 bytes"):
        grading.student_seed(b"", "ch04", "alice")
    with pytest.raises(ValueError, match="student must be a non-empty string"):
        grading.student_seed(SECRET, "ch04", "")


def test_secret_mode_0600(tmp_path):
    from tools.nbgrader_course import course_secret
    secret = course_secret(tmp_path)
    assert len(secret) == 32 and (tmp_path / ".course-secret").stat().st_mode & 0o777 == 0o600
    assert course_secret(tmp_path) == secret  # kept, not drawn again
    (tmp_path / ".course-secret").chmod(0o644)
    with pytest.raises(PermissionError, match="expected 600"):
        course_secret(tmp_path)


def test_student_list_rejects_bad_ids(tmp_path):
    from tools.nbgrader_course import student_list
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name\nalice,Alice A\nbob,Bob B\n")
    assert student_list(f"@{roster}") == ["alice", "bob"]
    assert student_list("alice, bob") == ["alice", "bob"]
    for bad in ("../etc", "alice,alice", "", "ada+bob", "ada bob"):
        with pytest.raises(ValueError, match="--students"):
            student_list(bad)


def test_one_rule_for_a_student_id_in_the_roster_and_in_the_numbers_per_student():
    from tools import course_ops, nbgrader_course
    assert course_ops.STUDENT_ID is nbgrader_course.STUDENT_ID
    for good, bad in (("ada.lovelace@uni", "ada+bob"), ("s-01_a", "a/b")):
        assert nbgrader_course.STUDENT_ID.fullmatch(good) and not nbgrader_course.STUDENT_ID.fullmatch(bad)


# ---- the practice check ---------------------------------------------------------------------------------------

def test_practice_check_well_formed_not_right():
    from tools.nbgrader_course import practice_form
    spec = grading.chapter("ch04")
    expected = (13, 0, 13, 0)  # a variant's answer
    form = practice_form("answer = (13, 0, 13, 0)", "value", "answer", spec.EXERCISES[1], 1, expected)
    assert "13" not in json.dumps(form)  # the form holds no number of the answer
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        flags = well_formed([form], {"answer": (1, 2, 3, 4)})  # wrong, and well-formed
    assert flags == [True] and "well-formed" in out.getvalue()
    assert "right" not in out.getvalue().replace("never", "").split("Well-formed is not right")[0]
    assert check_one(form, {"answer": (1, 2)})[0] is False
    assert "a tuple" not in check_one(form, {"answer": 5})[1] and check_one(form, {"answer": 5})[0] is False


def test_practice_check_of_a_function():
    from tools.nbgrader_course import practice_form
    source = json.loads(CH04.read_text())
    cell = next("".join(c["source"]) for c in source["cells"] if "def count_mha_parameters" in "".join(c["source"]))
    form = practice_form(cell, "function", "count_mha_parameters", grading.chapter("ch04").EXERCISES[5], 5)
    assert form["form"] == "number"
    assert check_one(form, {"count_mha_parameters": lambda n, bias: 0})[0] is True  # wrong, well-formed
    assert check_one(form, {"count_mha_parameters": lambda n, bias: "many"})[0] is False
    ok, message = check_one(form, {"count_mha_parameters": lambda n, bias: 1 / 0})
    assert not ok and "ZeroDivisionError" in message


# ---- the instructor pack --------------------------------------------------------------------------------------

def test_public_modules_hold_no_private_field():
    for path in sorted((ROOT / "grading").glob("ch[0-9][0-9].py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Explain", "Variant"):
                private = {kw.arg for kw in node.keywords} & {"model", "rubric", "solution", "expected"}
                assert not private, f"{path.name}: {sorted(private)} belong in the instructor pack"


def test_sample_pack_is_labelled_and_complete():
    sample = packs.load(packs.SAMPLE)
    assert sample["sample"] is True
    assert all(text.startswith(("SAMPLE", "- SAMPLE", "示例", "- 示例")) for text in packs.answer_texts(sample))
    for prefix in sample["chapters"]:  # every chapter's module takes its private parts from it
        module = grading.chapter(prefix)
        assert all(e.model and e.rubric for e in module.EXPLAIN)


def test_malformed_pack_names_the_file(tmp_path):
    bad = tmp_path / "pack.json"
    bad.write_text(json.dumps({"schema": "mha-instructor-pack/1", "sample": False,
                               "chapters": {"ch04": {"explain": {"explain1": {"model": {"en": "x"}}}}}}))
    with pytest.raises(ValueError, match=r"pack.json: at chapters/ch04/explain/explain1: 'rubric' is a required"):
        packs.load(bad)


@pytest.mark.skipif(not os.environ.get("MHA_INSTRUCTOR_PACK"), reason="needs the real pack: MHA_INSTRUCTOR_PACK=path")
def test_public_tree_holds_no_real_answer():
    real = packs.load(Path(os.environ["MHA_INSTRUCTOR_PACK"]))
    assert real["sample"] is False
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    tree = "\n".join((ROOT / f.decode()).read_text(errors="replace") for f in files
                     if f and (ROOT / f.decode()).is_file())
    texts = packs.answer_texts(real)
    assert len(texts) >= 40
    leaked = [text[:60] for text in texts if any(line.strip() and line.strip()[:50] in tree
                                                  for line in text.splitlines() if len(line.strip()) > 30)]
    assert not leaked


# ---- the course: each student's own copy, graded against their own numbers --------------------------------------

def _right_copy(course: Path, owner: str, name: str) -> nbformat.NotebookNode:
    """The owner's copy with the owner's right answers, and an answer cell that prints a marker."""
    source = nbformat.read(course / "student-source" / owner / "ch04" / name, as_version=4)
    copy = nbformat.read(course / "student-release" / owner / "ch04" / name, as_version=4)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in copy.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = (strip_markers(solutions[meta["grade_id"]]) + "\nprint('ANSWER-CELL-OUTPUT')"
                           if cell.cell_type == "code" else "My answer.")
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ANSWER-CELL-OUTPUT\n")]
    return copy


@pytest.mark.slow  # nbgrader makes the course, three autograded submissions: about a minute
def test_students_get_their_own_numbers_and_grades(tmp_path):
    from nbgrader.api import Gradebook

    from tools.nbgrader_course import main, nbgrader
    course = tmp_path / "course"
    assert main([str(course), str(CH04), "--seed", "course-seed-xyz", "--students", "alice,bob,carol"]) == 0
    name = CH04.name
    alice = (course / "student-release" / "alice" / "ch04" / name).read_text()
    bob = (course / "student-release" / "bob" / "ch04" / name).read_text()
    assert alice != bob  # their own numbers
    secret = (course / ".course-secret").read_text().strip()
    for text in (alice, bob):
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "GRADED" not in text
        assert secret not in text and "course-seed-xyz" not in text and "SAMPLE model answer" not in text
    assert (course / "student-source").stat().st_mode & 0o777 == 0o700

    # alice and bob hand in their own right answers; carol hands in alice's
    for student, owner in (("alice", "alice"), ("bob", "bob"), ("carol", "alice")):
        nbgrader(course, "db", "student", "add", student)
        target = course / "submitted" / student / "ch04" / name
        target.parent.mkdir(parents=True)
        nbformat.write(_right_copy(course, owner, name), target)
    nbgrader(course, "autograde", "ch04", "--force")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("ch04", s).score for s in ("alice", "bob", "carol")}
        top = gradebook.find_assignment("ch04").max_score - sum(e.points for e in grading.chapter("ch04").EXPLAIN)
    assert scores["alice"] == scores["bob"] == top
    assert scores["carol"] < top  # another student's answers do not answer carol's numbers

    nbgrader(course, "generate_feedback", "ch04", "--force")
    html = (course / "feedback" / "alice" / "ch04" / name.replace(".ipynb", ".html")).read_text()
    student_seed = grading.student_seed(bytes.fromhex(secret), "ch04", "alice")
    for secret_text in ("GRADED", "HIDDEN TESTS", "course-seed-xyz", student_seed, "'seed':", "want =",
                        "ANSWER-CELL-OUTPUT</"):
        assert secret_text not in html, secret_text
    assert "ANSWER-CELL-OUTPUT" in html  # the answer's source is there, its output is not
