"""The course build, without executing (fast): hidden tests everywhere, seeded numbers, a lecturer's edits kept.

tests/autograde (`make test-course`) autogrades every graded chapter with nbgrader; this file checks what the build
writes: every exercise of every graded chapter gets hidden tests that call no checker, the written questions and
their rubrics stay out of the release, two seeds give two sets of numbers, and a file the lecturer edited in
course/ is never overwritten without --force.
"""

import json
from pathlib import Path

import nbformat
import pytest

import grading
from tools import nbgrader_course
from tools.editions import exercises, strip_markers
from tools.nbgrader_course import course_notebook, graded, write_course

ROOT = Path(__file__).resolve().parent.parent
GRADED = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if graded(p)]
GRADED_ZH = [ROOT / "zh-CN" / "notebooks" / p.name for p in GRADED]


def _cells(nb, predicate):
    return [c for c in nb.cells if predicate(c.metadata.get("nbgrader", {}), c)]


@pytest.mark.parametrize("path", GRADED + GRADED_ZH, ids=[f"en-{p.name[:2]}" for p in GRADED]
                         + [f"zh-{p.name[:2]}" for p in GRADED_ZH])
def test_every_exercise_is_graded_by_hidden_tests_only(path):
    for seed in (None, "a course"):
        nb, rubric = course_notebook(path, seed)
        tests = _cells(nb, lambda m, c: m.get("grade") and c.cell_type == "code")
        assert len(tests) >= len(exercises(nbformat.read(path, as_version=4)))
        for cell in tests:
            visible, hidden = cell.source.split("### BEGIN HIDDEN TESTS\n")
            assert visible.startswith("# ") and visible.count("\n") == 1  # one line shows in the release
            assert hidden.endswith("### END HIDDEN TESTS")
            # nothing an answer cell could rebind or patch: no checker, no name from the notebook's imports
            assert "check_" not in hidden and "mha_chapters.exercises" not in hidden
        # the chapter's checkers stay as practice: locked, no points
        practice = _cells(nb, lambda m, c: m.get("grade_id", "").count("_practice"))
        assert practice and all(c.metadata["nbgrader"]["grade"] is False and c.metadata["nbgrader"]["locked"]
                                for c in practice)
        written = _cells(nb, lambda m, c: m.get("grade") and m.get("solution"))
        assert written and all(c.cell_type == "markdown" and c.metadata["nbgrader"]["points"] > 0 for c in written)
        assert rubric.count("\n## ") == len(written)


def test_a_graded_chapter_without_hidden_tests_stops_the_build(monkeypatch):
    monkeypatch.setattr(grading, "chapter", lambda prefix: None)
    with pytest.raises(ValueError, match="no hidden tests: write grading/ch04.py"):
        course_notebook(ROOT / "notebooks" / "04_multi_head_attention.ipynb")


def _answers(nb) -> dict[str, str]:
    return {c.metadata["nbgrader"]["grade_id"]: strip_markers(c.source) for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}


def test_two_seeds_give_other_numbers_than_the_public_edition():
    """Every exercise with a Variant: its question, solution and hidden test follow the seed; two seeds differ."""
    changed = 0
    by_seed = ([], [])  # every variant's answer under "seed one" and under "seed two"
    for path in GRADED:
        spec = grading.chapter("ch" + path.name[:2])
        public, one, two = (course_notebook(path, seed)[0] for seed in (None, "seed one", "seed two"))
        for number, exercise in spec.EXERCISES.items():
            if getattr(exercise, "variant", None) is None:
                continue
            grade_id = f"ch{path.name[:2]}_ex{number}_answer"
            answers = [_answers(nb)[grade_id] for nb in (public, one, two)]
            assert answers[1] != answers[0] or answers[2] != answers[0], f"{grade_id}: the seeds change nothing"
            assert answers[1] != answers[2] or any(
                _answers(course_notebook(path, f"seed {n}")[0])[grade_id] != answers[1] for n in range(3, 12)
            ), f"{grade_id}: every seed gives the same numbers"
            by_seed[0].append(answers[1])
            by_seed[1].append(answers[2])
            # the questions show the course's numbers, not the public ones
            text = "\n".join(c.source for c in one.cells if c.cell_type == "markdown")
            first = exercise.variant.replace[0][1].format(**exercise.variant.params(
                grading.course_rng("seed one", f"ch{path.name[:2]}", f"ex{number}")))
            assert first in text
            changed += 1
    assert changed >= 12
    assert by_seed[0] != by_seed[1]
    assert sum(a != b for a, b in zip(*by_seed, strict=True)) >= changed // 2  # most of the numbers differ


def test_the_hidden_test_expects_the_seeded_answer():
    path = ROOT / "notebooks" / "04_multi_head_attention.ipynb"
    nb, _ = course_notebook(path, "seed one")
    params = grading.chapter("ch04").EXERCISES[4].variant.params(grading.course_rng("seed one", "ch04", "ex4"))
    expected = 3 * (params["d_in"] * params["d"] + params["d"]) + (params["d"] ** 2 + params["d"])
    (test,) = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ch04_ex4_test1"]
    assert f"want = {expected!r}" in test
    assert f"want = {657_408!r}" in [c.source for c in course_notebook(path)[0].cells
                                     if c.metadata.get("nbgrader", {}).get("grade_id") == "ch04_ex4_test1"][0]


def test_a_lecturers_edit_is_kept(tmp_path, capsys):
    chapter = ROOT / "notebooks" / "04_multi_head_attention.ipynb"
    course = tmp_path / "course"
    assert write_course(course, [chapter]) == ["ch04"]
    source = course / "source" / "ch04" / chapter.name
    manifest = json.loads((course / nbgrader_course.MANIFEST).read_text())
    assert set(manifest["files"]) == {"nbgrader_config.py", "source/ch04/" + chapter.name, "rubrics/ch04.md"}
    write_course(course, [chapter])  # unchanged files: written again without a word

    nb = nbformat.read(source, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("A lecturer's note"))
    nbformat.write(nb, source)
    edited = source.read_bytes()
    with pytest.raises(FileExistsError, match="source/ch04/04_multi_head_attention.ipynb"):
        write_course(course, [chapter], seed="another")
    assert source.read_bytes() == edited  # nothing written, not even the seed's other numbers
    assert nbgrader_course.main([str(course), str(chapter)]) == 1
    assert "--force" in capsys.readouterr().err

    write_course(course, [chapter], force=True)
    (backup,) = (course / "backups").rglob(chapter.name)
    assert backup.read_bytes() == edited
    assert source.read_bytes() != edited

    (course / nbgrader_course.MANIFEST).unlink()  # a course made before the record existed: its files are kept too
    with pytest.raises(FileExistsError):
        write_course(course, [chapter], seed="another")


# ---- the hidden tests themselves, run in this process on the course's own solutions (seconds, no kernel) --------

CHEAT_ANSWER = '''\
import builtins
import torch
AssertionError = Exception
builtins_assertion = builtins.AssertionError
len = lambda x: 0  # noqa: E731
range = zip = lambda *args: ()  # noqa: E731
{names} = None
'''


def _run_hidden(nb, answers: dict[str, str], prelude: str = "") -> dict[str, bool]:
    """Run each answer cell's code, then each hidden test, in one namespace: {grade_id: passed}."""
    namespace: dict = {}
    exec("import math\nimport torch\n" + prelude, namespace)  # noqa: S102
    passed = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            try:
                exec(answers.get(meta["grade_id"], strip_markers(cell.source)), namespace)  # noqa: S102
            except NotImplementedError:
                pass
        elif meta.get("grade"):
            try:
                exec(cell.source, namespace)  # noqa: S102
                passed[meta["grade_id"]] = True
            except Exception:  # noqa: BLE001 - any error fails the test, as under nbgrader
                passed[meta["grade_id"]] = False
    return passed


@pytest.mark.parametrize("path", GRADED, ids=[p.name[:2] for p in GRADED])
def test_hidden_tests_pass_the_solutions_and_fail_blank_and_cheating_answers(path):
    nb, _ = course_notebook(path, "a course")
    spec = grading.chapter("ch" + path.name[:2])
    right = _run_hidden(nb, {})
    assert right and all(right.values()), [g for g, ok in right.items() if not ok]
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    stub = "raise NotImplementedError('Exercise: not answered yet')"
    assert not any(_run_hidden(nb, {c.metadata["nbgrader"]["grade_id"]: stub for c in answers}).values())
    names = sorted({n for c in answers for n in _defined_names(c.source)})
    cheat = CHEAT_ANSWER.format(names=" = ".join(names))
    assert not any(_run_hidden(nb, {c.metadata["nbgrader"]["grade_id"]: cheat for c in answers}).values())
    partly = _run_hidden(nb, partly_right(nb, spec))
    assert any(partly.values()) and not all(partly.values())


def partly_right(nb, spec) -> dict[str, str]:
    """The answers of ``PARTLY_RIGHT`` by grade_id: code, or made from the right answer by a function."""
    right = {c.metadata["nbgrader"]["grade_id"]: strip_markers(c.source) for c in nb.cells
             if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}
    prefix = right and next(iter(right)).split("_")[0]
    answers = {}
    for number, code in spec.PARTLY_RIGHT.items():
        grade_id = f"{prefix}_ex{number}_answer"
        answers[grade_id] = code(right[grade_id]) if callable(code) else code
    return answers


def _defined_names(source: str) -> list[str]:
    import ast
    tree = ast.parse(strip_markers(source))
    return [n.name if isinstance(n, ast.FunctionDef) else n.targets[0].id for n in tree.body
            if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name))]


def test_a_new_course_draws_its_own_numbers_and_keeps_them(tmp_path):
    chapter = ROOT / "notebooks" / "04_multi_head_attention.ipynb"
    answers = []
    for name in ("one", "two"):
        write_course(tmp_path / name, [chapter])
        seed = json.loads((tmp_path / name / nbgrader_course.MANIFEST).read_text())["seed"]
        source = tmp_path / name / "source" / "ch04" / chapter.name
        answers.append(_answers(nbformat.read(source, as_version=4)))
        write_course(tmp_path / name, [chapter])  # the recorded seed again: the same files, no conflict
        assert json.loads((tmp_path / name / nbgrader_course.MANIFEST).read_text())["seed"] == seed
    assert answers[0] != answers[1]
    write_course(tmp_path / "public", [chapter], seed=nbgrader_course.PUBLIC)
    public = _answers(nbformat.read(tmp_path / "public" / "source" / "ch04" / chapter.name, as_version=4))
    assert public["ch04_ex4_answer"] == "# the number of learned parameters (weights and biases)\n" \
                                        "answer = 3 * (256 * 512 + 512) + (512 * 512 + 512)"


AS_NUMPY = '''\
import numpy as _np


def _as_numpy(x):  # an answer as a student who computed it with numpy would leave it
    if isinstance(x, bool):
        return _np.bool_(x)
    if isinstance(x, int):
        return _np.int64(x)
    if isinstance(x, float):
        return _np.float32(x)
    if isinstance(x, str):
        return _np.str_(x)
    if isinstance(x, set):
        return frozenset(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_as_numpy(item) for item in x)
    return x
'''

AS_TENSOR = '''\
import torch as _torch


def _as_numpy(x):  # an answer computed with tensors: a number as a 0-d tensor, a tuple of numbers as one tensor
    numbers = isinstance(x, (tuple, list)) and x and all(type(item) in (int, float) for item in x)
    if type(x) in (int, float) or numbers:
        return _torch.tensor(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_as_numpy(item) for item in x)
    return x
'''

FAKE_NUMPY = '''\
class _Meta(type):
    __flags__ = 0  # pretends to be a type written in C


def _as_numpy(x):  # a class that claims to be numpy's and equals everything
    return _Meta("float64", (), {"__module__": "numpy", "tolist": lambda self: x, "__eq__": lambda self, other: True})()
'''


@pytest.mark.parametrize("path", GRADED, ids=[p.name[:2] for p in GRADED])
def test_hidden_tests_take_numpy_values_tensors_and_frozensets_but_no_imitation(path):
    """A predicted value counts in the forms the chapters' checkers take (tests/test_exercises_sweep.py)."""
    nb, _ = course_notebook(path, "a course")
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    values = {c.metadata["nbgrader"]["grade_id"]: [n for n in _defined_names(c.source) if f"def {n}(" not in c.source]
              for c in cells}
    converted = {c.metadata["nbgrader"]["grade_id"]: strip_markers(c.source) + "".join(
        f"\n{name} = _as_numpy({name})" for name in values[c.metadata["nbgrader"]["grade_id"]]) for c in cells}
    exercises = tuple(f"{grade_id.removesuffix('_answer')}_test" for grade_id, names in values.items() if names)
    for form in (AS_NUMPY, AS_TENSOR):
        passed = _run_hidden(nb, converted, prelude=form)
        assert all(passed.values()), [g for g, ok in passed.items() if not ok]
    imitated = {grade_id: ok for grade_id, ok in _run_hidden(nb, converted, prelude=FAKE_NUMPY).items()
                if grade_id.startswith(exercises)}
    assert bool(imitated) == bool(exercises) and not any(imitated.values()), imitated  # chapter 11: functions only


# A student's function runs inside the hidden test, after its checks: what it replaces then must change nothing.
PATCHED_DURING_THE_TEST = {
    "Tensor.tolist": """\
    torch.Tensor.tolist = lambda self: 0  # every tensor, the reference's too, reads as 0
    return torch.zeros(*queries.shape[:-1], values.shape[-1]), torch.zeros(*queries.shape[:-1], keys.shape[-2])""",
    "torch functions": """\
    zeros = torch.zeros(1)
    torch.nn.functional.scaled_dot_product_attention = torch.softmax = lambda *args, **kwargs: zeros
    return zeros, zeros""",
}


@pytest.mark.parametrize("body", PATCHED_DURING_THE_TEST.values(), ids=PATCHED_DURING_THE_TEST)
def test_a_function_that_patches_torch_while_it_is_tested_gains_nothing(body, monkeypatch):
    import torch
    for owner, name in [(torch.Tensor, "tolist"), (torch.nn.functional, "scaled_dot_product_attention"),
                        (torch, "softmax")]:
        monkeypatch.setattr(owner, name, getattr(owner, name))  # put back after the test
    nb, _ = course_notebook(ROOT / "notebooks" / "02_scaled_dot_product_attention.ipynb", "a course")
    passed = _run_hidden(nb, {"ch02_ex3_answer": "def my_attention(queries, keys, values):\n" + body})
    assert passed["ch02_ex3_test1"] is False and passed["ch02_ex3_test2"] is False
