"""Turn the instructor notebooks into an nbgrader course: solution cells and autograded checker cells.

    python -m tools.nbgrader_course COURSE_DIR [NOTEBOOK ...]    # writes COURSE_DIR/source/chNN/, then runs
                                                                 # nbgrader generate_assignment for each chapter

The notebooks in ``notebooks/`` stay the one source. For each one this tool writes a copy with nbgrader's
cell metadata (schema 3): a cell tagged ``solution`` becomes an nbgrader solution cell (its code between
``### BEGIN SOLUTION`` and ``### END SOLUTION``, which nbgrader replaces in the release version); each
checker call after it, ``check_x(answer)``, becomes a locked autograded test cell worth one point that runs
``assert_passes(check_x, answer)``: the reader sees the same one-line hint, and a wrong answer raises, which
is what nbgrader counts as a failed test. Releasing, collecting, autograding and the gradebook are nbgrader's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHECK_CALL = re.compile(r"^(check_\w+)\((.*)\)\s*$")


def _nbgrader(cell: nbformat.NotebookNode, grade_id: str, *, solution: bool, grade: bool, points: int = 0) -> None:
    meta = {"grade": grade, "grade_id": grade_id, "locked": not solution, "schema_version": 3, "solution": solution}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta


def to_nbgrader(nb: nbformat.NotebookNode, prefix: str) -> tuple[nbformat.NotebookNode, int]:
    """A copy of an instructor notebook with nbgrader metadata; returns it and the number of graded cells."""
    nb = nbformat.from_dict(nb)
    graded = 0
    after_solution = False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            after_solution = False
            continue
        if "solution" in cell.metadata.get("tags", []):
            lines = cell.source.splitlines()
            head = 0
            while head < len(lines) and lines[head].startswith("#"):
                head += 1  # the exercise's opening comments stay visible above nbgrader's stub
            cell.source = "\n".join([*lines[:head], "### BEGIN SOLUTION", *lines[head:], "### END SOLUTION"])
            _nbgrader(cell, f"{prefix}_answer_{index}", solution=True, grade=False)
            after_solution = True
            continue
        calls = [CHECK_CALL.match(line) for line in cell.source.splitlines() if line.strip()]
        if after_solution and calls and all(calls):
            cell.source = "\n".join(f"assert_passes({m[1]}, {m[2]})" for m in calls)
            cell.source = "from mha_lib.exercises._engine import assert_passes\n" + cell.source
            _nbgrader(cell, f"{prefix}_test_{index}", solution=False, grade=True, points=len(calls))
            graded += len(calls)
        after_solution = False
    return nb, graded


def write_course(course_dir: Path, notebooks: list[Path]) -> list[str]:
    """Write COURSE_DIR/nbgrader_config.py and source/chNN/; returns the assignment names."""
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821 - nbgrader's config loader defines it\n"
        f"c.CourseDirectory.root = {str(course_dir.resolve())!r}\n"
        "c.CourseDirectory.course_id = 'mha-notebooks'\n"
        "c.ExecutePreprocessor.timeout = 300\n")
    names = []
    for path in notebooks:
        name = "ch" + path.name[:2]
        nb, graded = to_nbgrader(nbformat.read(path, as_version=4), name)
        if graded == 0:
            continue
        target = course_dir / "source" / name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        names.append(name)
    return names


def nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the nbgrader command line in COURSE_DIR (its nbgrader_config.py applies)."""
    command = [sys.executable, "-m", "nbgrader", *args]
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    result = subprocess.run(command, cwd=course_dir, capture_output=True, text=True, env=env)  # alembic on PATH
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    course_dir = Path(argv[0])
    notebooks = [Path(p) for p in argv[1:]] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for name in write_course(course_dir, notebooks):
        nbgrader(course_dir, "generate_assignment", name, "--force")
        print(f"{name}: release/{name}/ written by nbgrader generate_assignment")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
