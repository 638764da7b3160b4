"""Make an nbgrader course from the instructor notebooks: nbgrader itself writes the release versions.

    python -m tools.nbgrader_course COURSE_DIR [NOTEBOOK ...]    # copies each chapter with exercises into
                                                                 # COURSE_DIR/source/chNN/, writes
                                                                 # nbgrader_config.py, runs generate_assignment

The notebooks in ``notebooks/`` carry nbgrader's cell metadata already (``python -m tools.editions nbgrader``
writes it): each answer cell is a solution cell, its code between ``### BEGIN SOLUTION`` and ``### END SOLUTION``;
each checker cell is a locked, graded test cell, worth one point per checker call. The checker cells are not
rewritten: under nbgrader (``NBGRADER_EXECUTION`` set) a checker raises ``AssertionError`` with its hint for a
wrong answer, which nbgrader counts as a failed test. So this tool only copies and configures; releasing,
collecting, autograding and the gradebook are nbgrader's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

try:
    from tools.editions import chapter_prefix, nbgrader_problems
except ModuleNotFoundError:  # run as a script: python tools/nbgrader_course.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tools.editions import chapter_prefix, nbgrader_problems

ROOT = Path(__file__).resolve().parent.parent

# nbgrader's release replaces each solution with this stub. Inside a function it is indented with the markers.
CODE_STUB = ('# YOUR CODE HERE: replace these two lines with your answer\n'
             'raise NotImplementedError("Exercise: not answered yet")')


def graded(path: Path) -> bool:
    """True when the notebook has a graded cell (nbgrader metadata with grade: true)."""
    nb = nbformat.read(path, as_version=4)
    return any(cell.metadata.get("nbgrader", {}).get("grade") for cell in nb.cells)


def write_course(course_dir: Path, notebooks: list[Path]) -> list[str]:
    """Write COURSE_DIR/nbgrader_config.py and copy each graded chapter to source/chNN/; returns the assignments."""
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821 - nbgrader's config loader defines it\n"
        f"c.CourseDirectory.root = {str(course_dir.resolve())!r}\n"
        "c.CourseDirectory.course_id = 'mha-notebooks'\n"
        "c.ExecutePreprocessor.timeout = 300\n"
        f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}\n")
    names = []
    for path in notebooks:
        problems = nbgrader_problems(path)
        if problems:
            raise ValueError(f"{path.name}: stale nbgrader metadata, run python -m tools.editions nbgrader first:\n"
                             + "\n".join(problems))
        if not graded(path):
            continue
        name = chapter_prefix(path)
        target = course_dir / "source" / name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
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
