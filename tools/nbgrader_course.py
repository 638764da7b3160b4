"""Make an nbgrader course from the instructor notebooks and the graded bank ``grading/``; nbgrader writes the release.

    python -m tools.nbgrader_course COURSE_DIR [NOTEBOOK ...] [--seed SEED] [--force]

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
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
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
    },
    "zh_CN": {
        "test": "练习 {number}{part}：提交之后再检查（{points} 分）。",
        "part": "（第 {part} 部分）",
        "variant": "# 本次作业的数字与本章不同，本章的检查器无法检查：提交之后再检查你的答案。",
        "answer": "**你对上面问题的回答**（几句话；由人工评分）：",
        "rubric_title": "# {name} 的评分细则：书面问题（供助教使用）",
        "model": "参考答案",
        "rubric": "评分细则",
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
    answer.source = f"{above}{BEGIN}\n{variant.solution.format(**params)}\n{END}"


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
            expected = variant.expected(params)
            if grading.canonical(_evaluate(nb.cells[index].source, answer_name)) != grading.canonical(expected):
                raise ValueError(f"{name}: the variant's solution does not give its expected value")
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
        f"c.CourseDirectory.root = {str(course_dir.resolve())!r}\n"
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
        f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}\n").encode()}
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("course_dir", type=Path)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--seed", default=None, help="this course's numbers (any text; keep it from students). "
                        "Default: the seed the course was made with, or a new random one; 'public': the chapters'")
    parser.add_argument("--force", action="store_true", help="replace edited files (copied to backups/ first)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    try:
        names = write_course(args.course_dir, notebooks, args.seed or None, args.force)
    except FileExistsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in names:
        nbgrader(args.course_dir, "generate_assignment", name, "--force")
        print(f"{name}: release/{name}/ written by nbgrader generate_assignment")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
