"""Make an nbgrader course from the instructor notebooks and the graded bank ``grading/``; nbgrader writes the release.

    python -m tools.nbgrader_course COURSE_DIR [NOTEBOOK ...] [--chapters 09 10] [--seed SEED] [--force] [--pack PACK]
                                    [--students alice,bob | --students @roster.csv]

For each chapter with exercises it writes ``COURSE_DIR/source/chNN/`` (the chapter with its grading, below),
``COURSE_DIR/rubrics/chNN.md`` (the written questions' rubrics, for the teaching assistants) and
``COURSE_DIR/nbgrader_config.py``, then runs ``nbgrader generate_assignment``.

The course's source notebook is the instructor notebook with, for every exercise (``grading/chNN.py`` says how):

- its checker cells kept as practice: locked, ungraded (they show ✅/❌ while the student works, they give no marks);
- after them, one locked graded test cell per part of the answer, whose test is nbgrader's hidden test
  (``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``): stripped from the release, restored at autograde;
- other numbers where the exercise has a variant (question, solution and hidden test together), drawn from the
  course's seed: ``--seed TEXT``, else the one recorded when the course was made, else a new random one;
- after the exercise that ``grading`` names, a written question and its manually graded answer cell.

A chapter with graded exercises and no ``grading/chNN.py``, or an exercise the module does not grade, stops the
build. So does a lecturer's edit: every file written is recorded with its SHA-256 in
``COURSE_DIR/.generated.json``; a file that differs from its record (or was not written by this tool) is never
overwritten: the build lists them and stops, unless ``--force``, which first copies each into
``COURSE_DIR/backups/``. Releasing, collecting, autograding and the gradebook are nbgrader's.

The written questions' model answers and rubrics and the variants' solutions come from the instructor pack
(``--pack``, grading/pack.py), not from this repository. ``--students`` gives each student numbers of their own,
from an HMAC of the course's secret (``COURSE_DIR/.course-secret``, mode 0600), the chapter and the student id:
``student-release/<id>/chNN/`` is that student's copy, ``student-source/<id>/chNN/`` (private) what autograde
grades them against (docs/teaching.md, "Numbers per student").
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

try:
    import grading
    from tools.editions import BEGIN, END, chapter_prefix, exercise_numbers, exercises, nbgrader_problems, strip_markers
except ModuleNotFoundError:  # run as a script: python tools/nbgrader_course.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import grading
    from tools.editions import BEGIN, END, chapter_prefix, exercise_numbers, exercises, nbgrader_problems, strip_markers

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ".generated.json"
PUBLIC = "public"  # --seed public: the numbers of the chapters themselves

# nbgrader's release replaces each solution with this stub. Inside a function it is indented with the markers.
CODE_STUB = ('# YOUR CODE HERE: replace these two lines with your answer\n'
             'raise NotImplementedError("Exercise: not answered yet")')

WORDS = {
    "en": {
        "test": "Exercise {number}{part}: checked after you submit ({points} point{s}).",
        "variant": "# This assignment's numbers differ from the chapter's, so the chapter's checker cannot check "
                   "them: your answer is checked after you submit.",
        "answer": "**Your answer to the question above** (a few sentences; graded by hand):",
        "rubric_title": "# Rubrics of {name}: the written questions (for the teaching assistants)",
        "model": "Model answer",
        "rubric": "Rubric",
        "practice": "Practice check (run it before you submit): is your answer well-formed (the right type and "
                    "shape; a function that runs on a sample input)? It never says whether it is right.",
    },
    "zh_CN": {
        "test": "练习 {number}{part}：提交之后再检查（{points} 分）。",
        "part": "（第 {part} 部分）",
        "variant": "# 本次作业的数字与本章不同，本章的检查器无法检查：提交之后再检查你的答案。",
        "answer": "**你对上面问题的回答**（几句话；由人工评分）：",
        "rubric_title": "# {name} 的评分细则：书面问题（供助教使用）",
        "model": "参考答案",
        "rubric": "评分细则",
        "practice": "练习检查（提交前运行）：你的答案形式是否正确（类型和形状正确；函数能在示例输入上运行）？"
                    "它从不告诉你答案是否正确。",
    },
}


def graded(path: Path) -> bool:
    """True when the notebook has a graded cell (nbgrader metadata with grade: true)."""
    nb = nbformat.read(path, as_version=4)
    return any(cell.metadata.get("nbgrader", {}).get("grade") for cell in nb.cells)


def language_of(path: Path) -> str:
    return "zh_CN" if "zh-CN" in path.resolve().parts else "en"


# ---- the course's source notebook ---------------------------------------------------------------------------------

def _meta(grade_id: str, *, grade: bool, solution: bool = False, locked: bool = True, points: int = 0) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if grade:
        meta["points"] = points
    return meta


def _cell(kind: str, source: str, meta: dict) -> nbformat.NotebookNode:
    cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(source)
    cell.metadata["nbgrader"] = meta
    cell.id = meta["grade_id"].replace("_", "-")  # the same id on every build: the files' hashes stay the same
    return cell


def _evaluate(code: str, name: str):
    namespace: dict = {}
    exec(compile("import math\nimport torch\n" + strip_markers(code), "<solution>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def _answer_name(source: str) -> tuple[str, str]:
    """('value', 'answer') for ``answer = ...``, ('function', 'my_attention') for ``def my_attention``."""
    tree = ast.parse(strip_markers(source))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return "function", node.name
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            return "value", node.targets[0].id
    raise ValueError(f"an answer cell that neither assigns nor defines a function:\n{source}")


def _apply_variant(nb, index: int, first: int, variant: grading.Variant, params: dict, where: str,
                   language: str) -> None:
    """Put the variant's numbers into the question (markdown cells first..index-1, the answer cell's comments)."""
    cells = [nb.cells[i] for i in range(first, index + 1) if nb.cells[i].cell_type == "markdown" or i == index]
    for old, template, *only in variant.replace:
        if only and only[0] != language:
            continue
        new = template.format(**params)
        hits = [cell for cell in cells if old in cell.source]
        if not hits:
            raise ValueError(f"{where}: the variant replaces {old!r}, which the question no longer contains: update "
                             f"its Variant in grading/")
        for cell in hits:
            cell.source = cell.source.replace(old, new)
    answer = nb.cells[index]
    above = answer.source.split(BEGIN)[0]
    indent = above[len(above.rstrip(" ")):]  # a function's solution markers are indented with its body
    answer.source = f"{above}{BEGIN}\n{variant.solution.format(**params)}\n{indent}{END}"


def course_notebook(path: Path, seed: str | None = None) -> tuple[nbformat.NotebookNode, str]:
    """The course's source notebook of one chapter and the markdown of its rubrics."""
    nb = nbformat.read(path, as_version=4)
    prefix, language = chapter_prefix(path), language_of(path)
    words = WORDS[language]
    spec = grading.chapter(prefix)
    if spec is None:
        raise ValueError(f"{path.name} has graded exercises but no hidden tests: write grading/{prefix}.py "
                         "(docs/maintaining.md, 'A new exercise')")
    found = exercises(nb)
    numbers = exercise_numbers(nb)
    missing = sorted(set(numbers) - set(spec.EXERCISES))
    if missing:
        raise ValueError(f"grading/{prefix}.py grades no exercise {missing} of {path.name}")
    explains = {e.after: e for e in spec.EXPLAIN}
    if not spec.EXPLAIN:
        raise ValueError(f"grading/{prefix}.py has no written question (EXPLAIN)")
    rubric = [words["rubric_title"].format(name=prefix), ""]
    previous_end = 0
    # From the last exercise up, so that inserting cells leaves the indices above as they are.
    plan = list(zip(found, numbers, strict=True))
    firsts = [previous_end] + [checkers[-1] + 1 if checkers else index + 1 for (index, checkers), _ in plan[:-1]]
    for ((index, checkers), number), first in reversed(list(zip(plan, firsts, strict=True))):
        exercise = spec.EXERCISES[number]
        name = f"{prefix}_ex{number}"
        kind, answer_name = _answer_name(nb.cells[index].source)
        variant = getattr(exercise, "variant", None) if seed is not None else None
        if variant is not None:
            params = variant.params(grading.course_rng(seed, prefix, f"ex{number}"))
            _apply_variant(nb, index, first, variant, params, f"{path.name} exercise {number}", language)
            if kind == "function":  # another name or signature: the reference is the pack's solution, renamed
                kind, answer_name = _answer_name(nb.cells[index].source)
                expected = _function_variant(exercise, variant, params, strip_markers(nb.cells[index].source),
                                             answer_name)
            else:
                try:  # the pack's solution, evaluated with the variant's numbers, is the expected answer
                    expected = _evaluate(nb.cells[index].source, answer_name)
                except Exception as error:
                    raise ValueError(f"{name}: the instructor pack's solution of the variant fails with the numbers "
                                     f"{params}: {type(error).__name__}: {error}") from error
            for i in checkers:  # the chapter's checker knows the public numbers only
                imports = [line for line in nb.cells[i].source.splitlines() if line.startswith(("from ", "import "))]
                nb.cells[i].source = "\n".join([*imports, words["variant"]])
        for n, i in enumerate(checkers, start=1):
            nb.cells[i].metadata["nbgrader"] = _meta(f"{name}_practice{n}" if n > 1 else f"{name}_practice",
                                                     grade=False)
            nb.cells[i].outputs, nb.cells[i].execution_count = [], None
        tests = _tests(nb.cells[index].source, kind, answer_name, exercise, prefix, number, seed, variant,
                       None if variant is None else expected)
        cells = []
        for p, (label, points, body) in enumerate(tests, start=1):
            part = ("" if not label or len(tests) == 1 else f" ({label})" if language == "en"
                    else words["part"].format(part=p))  # the labels of grading/ are English
            title = words["test"].format(number=number, part=part, points=points, s="" if points == 1 else "s")
            cells.append(_cell("code", grading.hidden_cell(title, body),
                               _meta(f"{name}_test{p}", grade=True, points=points)))
        graded_as = expected if variant is not None and kind == "function" else exercise
        cells.insert(0, _cell("code", practice_cell(practice_form(nb.cells[index].source, kind, answer_name, graded_as,
                                                                 number, None if variant is None or kind == "function"
                                                                 else expected),
                                                   words["practice"]),
                              _meta(f"{name}_wellformed_practice", grade=False)))
        explain = explains.get(number)
        if explain is not None:
            key = f"{prefix}_{explain.key}"
            cells.append(_cell("markdown", explain.question[language], _meta(f"{key}_question", grade=False)))
            cells.append(_cell("markdown", f"{words['answer']}\n\n**{words['model']}:** {explain.model[language]}"
                                           f"\n\n**{words['rubric']}:**\n\n{explain.rubric[language]}",
                               _meta(key, grade=True, solution=True, locked=False, points=explain.points)))
            rubric += [f"## {explain.question[language]}", "", f"{words['model']}: {explain.model[language]}", "",
                       f"{words['rubric']} ({explain.points}):", "", explain.rubric[language], ""]
        end = checkers[-1] if checkers else index
        nb.cells[end + 1:end + 1] = cells
    for cell in nb.cells:  # the course is released without outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    for marker in getattr(spec, "NOT_RUN_WHEN_GRADING", ()):  # timings no answer depends on: the grader skips them
        hits = [c for c in nb.cells if c.cell_type == "code" and marker in c.source and "nbgrader" not in c.metadata]
        if not hits:
            raise ValueError(f"grading/{prefix}.py: NOT_RUN_WHEN_GRADING names {marker!r}, which no set-up cell of "
                             f"{path.name} contains")
        for cell in hits:
            cell.metadata["grading"] = {"run": False}
    return nb, "\n".join(rubric)


def _function_variant(exercise, variant, params: dict, source: str, name: str):
    """The Function that grades a function variant: its parts' cases for the new signature, and the reference
    (the pack's solution renamed), checked to run on every case."""
    import dataclasses
    parts = [dataclasses.replace(part, cases=variant.cases[part.label].format(**params))
             if part.label in variant.cases else part for part in exercise.parts]
    graded_as = dataclasses.replace(exercise, parts=parts, variant=None,
                                    reference=grading.reference_from_solution(source, name))
    from tools.autograde import cases_and_wants
    for part in parts:
        try:
            cases_and_wants({"seed": 0, "cases": part.cases, "reference": graded_as.reference})
        except Exception as error:
            raise ValueError(f"{name}: the instructor pack's solution of the variant fails on the cases of part "
                             f"{part.label!r} with {params}: {type(error).__name__}: {error}") from error
    return graded_as


# ---- the practice check: well-formed, never right (issue 49, item 3) ---------------------------------------------

def practice_form(source: str, kind: str, name: str, exercise, number: int, expected=None) -> dict:
    """What the practice check may know of one exercise: the form of its answer (mha_chapters.practice), never its
    value. A value's form is that of the expected answer; a function's, that of the reference's result on a sample
    input drawn from a public seed (None where a custom comparison, not the result's form, judges it)."""
    from mha_chapters.practice import PUBLIC_SEED, form_of
    if kind == "value":
        if getattr(exercise, "check", None):
            return {"exercise": number, "kind": "value", "name": name, "form": None}
        value = _evaluate(source, name) if expected is None else expected
        return {"exercise": number, "kind": "value", "name": name, "form": form_of(value, tensors=False)}
    import torch

    from tools.autograde import _names
    part = exercise.parts[0]
    form = None
    if not (exercise.compare or any(p.compare for p in exercise.parts)):
        namespace = {**_names(), "g": torch.Generator().manual_seed(PUBLIC_SEED)}
        exec(part.cases, namespace)  # noqa: S102 - the course's own code
        exec(exercise.reference or grading.reference_from_solution(strip_markers(source), name), namespace)  # noqa: S102
        form = form_of(namespace["reference"](*namespace["cases"][0]))
    return {"exercise": number, "kind": "function", "name": name, "sample": part.cases, "form": form}


def practice_cell(form: dict, note: str) -> str:
    """The practice check of one exercise, after its answer cell (several exercises may all name theirs ``answer``)."""
    return "\n".join([f"# {note}", "from mha_chapters.practice import well_formed",
                      f"well_formed([{form!r}], globals());"])


def _tests(source: str, kind: str, name: str, exercise, prefix: str, number: int, seed: str | None, variant,
           expected) -> list[tuple[str, int, dict]]:
    """Each part's (label, points, hidden test's data)."""
    if kind == "value":
        if not isinstance(exercise, grading.Value):
            raise ValueError(f"{prefix} exercise {number}: the answer is a value, grading/ has {type(exercise)}")
        if expected is None:
            expected = _evaluate(source, name)
        if exercise.parts:
            points = exercise.points or [1] * len(exercise.parts)
            return [(label, points[i], grading.value_test(name, grading.canonical(expected), i))
                    for i, label in enumerate(exercise.parts)]
        return [("", (exercise.points or [1])[0], grading.value_test(name, expected, check=exercise.check))]
    if not isinstance(exercise, grading.Function):
        raise ValueError(f"{prefix} exercise {number}: the answer is a function, grading/ has {type(exercise)}")
    if expected is not None:  # a function variant: its own parts and reference (_function_variant)
        exercise = expected
    reference = exercise.reference or grading.reference_from_solution(strip_markers(source), name)
    return [(part.label, part.points,
             grading.function_test(name, part, reference, grading.torch_seed(seed, prefix, f"ex{number}", part.label),
                                   exercise.compare, exercise.library))
            for part in exercise.parts]


# ---- writing the course without overwriting a lecturer's edits ----------------------------------------------------

def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    return (nbformat.writes(nb) + "\n").encode()


def write_course(course_dir: Path, notebooks: list[Path], seed: str | None = None, force: bool = False) -> list[str]:
    """Write the course's files (see the module's docstring); returns the assignments, chNN.

    ``seed``: the course's numbers; None keeps the seed this course was made with, or draws a new one for a new
    course (recorded in ``.generated.json``, with the files' hashes); ``"public"``: the chapters' own numbers.

    Raises:
        FileExistsError: when a file to write was edited since this tool wrote it (or not written by it), without
            ``force``; nothing is written then.
    """
    manifest_path = course_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"files": {}}
    if seed is None:  # the course's own numbers, drawn once and kept: a second build writes the same files
        seed = manifest.get("seed") or secrets.token_hex(8)
        if not manifest.get("seed"):
            print(f"{course_dir}: a new course, its numbers drawn from the seed {seed} (kept in {MANIFEST})")
    numbers = None if seed == PUBLIC else seed
    files: dict[str, bytes] = {"nbgrader_config.py": (
        "c = get_config()  # noqa: F821 - nbgrader's config loader defines it\n"
        "import os  # noqa: E402\n"
        "c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))  # this folder: the course moves with it\n"
        "c.CourseDirectory.course_id = 'mha-notebooks'\n"
        "c.ExecutePreprocessor.timeout = 300\n"
        "# Autograde never runs a submission as a notebook: tools/autograde.py runs its answers in a sandbox and\n"
        "# grades them in nbgrader's own process (docs/teaching.md, 'How grading works').\n"
        "import sys  # noqa: E402\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,  # noqa: E402\n"
        "                                    LimitOutput, SaveAutoGrades)\n"
        "from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402\n"
        "from tools.autograde import SandboxGrade  # noqa: E402\n"
        "c.Autograde.autograde_preprocessors = [SandboxGrade, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,\n"
        "                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]\n"
        "# Where bubblewrap cannot run: an account that cannot read this folder (c.SandboxGrade.user = 'grader'), or,\n"
        "# on your own laptop only, c.SandboxGrade.unsafe_no_sandbox = True (the submission can read the course).\n"
        f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}\n"
        "# Your own settings (a late penalty, the exchange, ...) go in course_settings.py beside this file, which the\n"
        "# build never writes: it is read last, if it is there (docs/running-a-course.md).\n"
        "load_subconfig('course_settings.py')  # noqa: F821 - nbgrader's config loader defines it\n").encode()}
    names = []
    for path in notebooks:
        problems = nbgrader_problems(path)
        if problems:
            raise ValueError(f"{path.name}: stale nbgrader metadata, run python -m tools.editions nbgrader first:\n"
                             + "\n".join(problems))
        if not graded(path):
            continue
        name = chapter_prefix(path)
        nb, rubric = course_notebook(path, numbers)
        files[f"source/{name}/{path.name}"] = _notebook_bytes(nb)
        files[f"rubrics/{name}.md"] = (rubric + "\n").encode()
        names.append(name)
    edited = [rel for rel, data in files.items() if (course_dir / rel).exists()
              and (course_dir / rel).read_bytes() != data
              and _digest((course_dir / rel).read_bytes()) != manifest["files"].get(rel)]
    if edited and not force:
        raise FileExistsError(
            f"{course_dir}: these files were changed after this tool wrote them (or were not written by it), so they "
            "are left as they are and nothing was written:\n" + "\n".join(f"  {rel}" for rel in edited)
            + "\nKeep your edits (to release an edited chapter: `nbgrader generate_assignment chNN --force` in "
              f"{course_dir}), write a new course elsewhere (COURSE=other/folder), or replace them with --force "
              "(make assignments FORCE=1), which first copies each into backups/.")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for rel in edited:
        backup = course_dir / "backups" / stamp / rel
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(course_dir / rel, backup)
        print(f"{rel}: your version was copied to {backup.relative_to(course_dir)} (--force)")
    for rel, data in files.items():
        target = course_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
        manifest["files"][rel] = _digest(data)
    manifest["seed"] = seed
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return names


# ---- numbers per student: the course's secret and each student's copy (issue 49, item 3) ---------------------------

SECRET = ".course-secret"  # 32 random bytes, hex; mode 0600; never released, never in the sandbox
STUDENT_SOURCE = "student-source"  # student-source/<student>/chNN/: that student's variant, solutions and hidden tests
STUDENT_RELEASE = "student-release"  # student-release/<student>/chNN/: the copy to hand to that student
# nbgrader names a submission "student+assignment+time+random" and a folder by the student id: an id with "+",
# "/" or white space breaks one or the other. The one rule for an id, here and in tools/course_ops.py's roster.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")


def course_secret(course_dir: Path) -> bytes:
    """The course's secret, made (mode 0600) on first use. Raises PermissionError when others can read it."""
    path = course_dir / SECRET
    if not path.exists():
        course_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32) + "\n")
        print(f"{path}: the course's secret, made now (mode 0600): keep it, back it up, never publish it")
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise PermissionError(f"{path}: the course's secret has mode {mode:o}, expected 600 (only its owner reads "
                              f"it): chmod 600 {path}")
    text = path.read_text().strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise ValueError(f"{path}: expected at least 32 hexadecimal digits (the course's secret), got {len(text)} "
                         "characters that are not")
    return secret


def student_list(text: str) -> list[str]:
    """Student ids from ``alice,bob`` or ``@roster.csv`` (one student a line, the id in the first column; a first
    line naming the column, ``id`` or ``student_id``, is skipped). Raises ValueError naming a bad id."""
    if text.startswith("@"):
        import csv
        rows = [row for row in csv.reader(Path(text[1:]).read_text(encoding="utf-8").splitlines()) if row]
        if rows and rows[0][0].strip().lower() in ("id", "student_id", "student"):
            rows = rows[1:]
        ids = [row[0].strip() for row in rows]
    else:
        ids = [item.strip() for item in text.split(",") if item.strip()]
    bad = [i for i in ids if not STUDENT_ID.fullmatch(i)]
    if bad or not ids:
        raise ValueError("--students: expected student ids (letters, digits, . _ @ -; no '+', '/' or spaces), "
                         f"got {bad or text!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"--students: an id twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return ids


def _student_release(source: nbformat.NotebookNode, master: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A student's copy: their source notebook cleared as nbgrader's release is (solutions, hidden tests, outputs),
    with the nbgrader metadata (checksums) of the course's release, cell for cell."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions
    nb = nbformat.from_dict(json.loads(json.dumps(source)))
    resources: dict = {}
    for step in (ClearSolutions(code_stub={"python": CODE_STUB}), ClearOutput(), ClearHiddenTests()):
        nb, resources = step.preprocess(nb, resources)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    master_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in master.cells]
    if [i for i in ids if i] != [i for i in master_ids if i]:
        raise ValueError("a student's notebook has other graded cells than the course's release: rebuild the course")
    released = {c.metadata["nbgrader"]["grade_id"]: c for c in master.cells if c.metadata.get("nbgrader")}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id:
            cell.metadata["nbgrader"] = json.loads(json.dumps(released[grade_id].metadata["nbgrader"]))
            if cell.metadata["nbgrader"].get("locked") and not cell.metadata["nbgrader"].get("solution"):
                cell.source = released[grade_id].source  # a locked cell as nbgrader restores it
    nb.metadata = master.metadata
    return nb


def write_student_copies(course_dir: Path, notebooks: list[Path], students: list[str]) -> dict[str, list[Path]]:
    """Each student's own numbers: for every graded chapter (released by ``nbgrader generate_assignment``), the
    private source ``student-source/<student>/chNN/`` (what autograde grades that student against) and the copy to
    hand out, ``student-release/<student>/chNN/``. Each seed is grading.student_seed(course secret, chapter, id)."""
    secret = course_secret(course_dir)
    written: dict[str, list[Path]] = {}
    for path in notebooks:
        if not graded(path):
            continue
        prefix = chapter_prefix(path)
        release = course_dir / "release" / prefix / path.name
        if not release.exists():
            raise FileNotFoundError(f"{release}: release the chapter first (nbgrader generate_assignment {prefix})")
        master = nbformat.read(release, as_version=4)
        for student in students:
            nb, _ = course_notebook(path, grading.student_seed(secret, prefix, student))
            private = course_dir / STUDENT_SOURCE / student / prefix / path.name
            for folder in (course_dir / STUDENT_SOURCE, private.parent.parent, private.parent):
                folder.mkdir(exist_ok=True, mode=0o700)
                folder.chmod(0o700)
            private.write_bytes(_notebook_bytes(nb))
            private.chmod(0o600)
            copy = course_dir / STUDENT_RELEASE / student / prefix / path.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(_notebook_bytes(_student_release(nb, master)))
            written.setdefault(student, []).append(copy)
    return written


def nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the nbgrader command line in COURSE_DIR (its nbgrader_config.py applies); ``autograde`` runs the
    submissions with the kernel client of tools/wakeful_kernel.py."""
    command = [sys.executable, "-m", "nbgrader", *args]
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    if args[:1] == ("autograde",):  # executes the submissions: with the client that sleeps through no reply
        command.append("--ExecutePreprocessor.kernel_manager_class=tools.wakeful_kernel.WakefulKernelManager")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(command, cwd=course_dir, capture_output=True, text=True, env=env)  # alembic on PATH
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def select_chapters(notebooks: list[Path], chapters: list[str]) -> list[Path]:
    """The notebooks of the chapters named by number ("09", "9" or "ch09"); ValueError for one that is not there."""
    wanted = []
    for chapter in chapters:
        number = chapter.removeprefix("ch")
        if not number.isdigit():
            raise ValueError(f"--chapters: expected chapter numbers such as 09, got {chapter!r}")
        wanted.append(f"{int(number):02d}")
    found = {path.name[:2]: path for path in notebooks}
    missing = [number for number in wanted if number not in found]
    if missing:
        raise ValueError(f"--chapters: no chapter {missing} among {sorted(found)}")
    return [found[number] for number in dict.fromkeys(wanted)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("course_dir", type=Path)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--seed", default=None, help="this course's numbers (any text; keep it from students). "
                        "Default: the seed the course was made with, or a new random one; 'public': the chapters'")
    parser.add_argument("--force", action="store_true", help="replace edited files (copied to backups/ first)")
    parser.add_argument("--chapters", nargs="+", default=None, metavar="NN",
                        help="build only these chapters (two-digit numbers): an edited chapter does not stop the rest")
    parser.add_argument("--pack", type=Path, default=None, help="the instructor pack (model answers, rubrics, "
                        "variants' solutions). Default: COURSE_DIR/instructor-pack.json, else $MHA_INSTRUCTOR_PACK, "
                        "else the public sample pack (placeholder answers)")
    parser.add_argument("--students", default=None, help="numbers per student: 'alice,bob' or '@roster.csv'; "
                        "writes student-release/<id>/chNN/ (hand each student theirs) and the private "
                        "student-source/<id>/chNN/ that autograde grades them against")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.chapters:
        try:
            notebooks = select_chapters(notebooks, args.chapters)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        students = student_list(args.students) if args.students else []
        use_pack(args.course_dir, args.pack)
        names = write_course(args.course_dir, notebooks, args.seed or None, args.force)
    except (FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in names:
        nbgrader(args.course_dir, "generate_assignment", name, "--force")
        print(f"{name}: release/{name}/ written by nbgrader generate_assignment")
    if students:
        written = write_student_copies(args.course_dir, notebooks, students)
        print(f"{len(written)} students' own copies in {args.course_dir / STUDENT_RELEASE}/<id>/ "
              f"({sum(map(len, written.values()))} notebooks)")
    return 0


def use_pack(course_dir: Path, pack: Path | None) -> Path:
    """Choose the instructor pack (see --pack); says so when it is the public sample."""
    from grading import pack as packs
    chosen = pack or (course_dir / "instructor-pack.json" if (course_dir / "instructor-pack.json").exists() else None)
    packs.use(chosen)
    if packs.current().get("sample"):
        print(f"note: {packs.path_in_use()} is the public SAMPLE pack: the written questions' model answers and "
              "rubrics are placeholders (give yours with --pack, docs/teaching.md)", file=sys.stderr)
    return packs.path_in_use()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
