"""docs/running-a-course.md, run: every command of its bash blocks on a throwaway course of chapter 08, its Python
blocks as nbgrader's and JupyterHub's configuration, and the pieces of tools/course_ops.py they use.

The page's commands are read from the page itself, so a command changed there is a command changed here.
"""

import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

nbgrader_api = pytest.importorskip("nbgrader.api")

from tools import course_ops  # noqa: E402
from tools.nbgrader_course import nbgrader, select_chapters, write_course  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_nbgrader import CH08_SCORES, RIGHT_CH08  # noqa: E402  chapter 08's right answers

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "running-a-course.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


def commands() -> list[str]:
    return [line for block in blocks("bash") for line in block.splitlines() if line.strip()]


def run(command: str, cwd: Path) -> str:
    """One command of the page: `python` is this interpreter, `nbgrader` this interpreter's nbgrader."""
    words = shlex.split(command)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if words[0] == "nbgrader":
        return nbgrader(cwd, *words[1:]).stdout
    assert words[0] == "python", f"a command the test does not know how to run: {command}"
    result = subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def make_assignments(command: str, course: Path) -> None:
    """`make assignments COURSE=course CHAPTERS=...` as make runs it, with the course in a throwaway folder."""
    words = shlex.split(command.replace("COURSE=course", f"COURSE={course}"))
    # --no-print-directory: under another make (make test) a dry run also prints "make[1]: Leaving directory"
    dry = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed", *words[1:]], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    python, *arguments = shlex.split(dry)
    assert python.endswith("python") and arguments[:2] == ["-m", "tools.nbgrader_course"], dry
    subprocess.run([sys.executable, *arguments], cwd=ROOT, check=True, capture_output=True, text=True)


def fill_in(path: Path, written: str | None) -> nbformat.NotebookNode:
    """The released notebook answered right; the written question answered with ``written``, or left as it is."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        if cell.cell_type == "code":
            cell.source = RIGHT_CH08[re.search(r"Exercise \d+", cell.source).group(0)]
        elif written is not None:
            cell.source = written
    return nb


def sandbox_here() -> bool:
    from tools import autograde

    bwrap = shutil.which("bwrap")
    return bool(bwrap) and autograde._bwrap_works(bwrap)


@pytest.mark.slow  # builds chapters 08 and 09, then autogrades two submissions: about a minute
def test_the_page_s_commands_run_a_class(tmp_path):
    """Build two chapters, import the class list, set a due date and a 10%-a-day penalty, release, collect,
    move the course, autograde and export: an on-time and a late student, scored as the page says."""
    lines = commands()
    assert [line.split()[0] for line in lines] == ["make", "python", "nbgrader", "nbgrader", "nbgrader", "nbgrader",
                                                   "python"], lines
    course = tmp_path / "course"
    make_assignments(lines[0], course)
    assert sorted(p.name for p in (course / "release").iterdir()) == ["ch08", "ch09"]  # CHAPTERS="08 09" only

    (tmp_path / "students.csv").write_text(blocks("csv")[0])
    assert "2 students imported" in run(lines[1], tmp_path)
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert {(s.id, s.last_name) for s in gradebook.students} == {("ada", "Lovelace"), ("alan", "Turing")}

    due = lines[2]
    assert due.startswith("nbgrader db assignment add ch08 --duedate=")
    run(due, course)
    exchange = tmp_path / "exchange"
    with (course / "course_settings.py").open("w") as handle:  # the page's settings, and this test's exchange
        handle.write(blocks("python")[0])
        handle.write(f"\nc.Exchange.root = {str(exchange)!r}\n")
        if not sandbox_here():  # macOS, Windows (the sandbox itself: tests/autograde, make test-course)
            handle.write("c.SandboxGrade.unsafe_no_sandbox = True\n")

    # the course's own settings are no edit of the build's files: a rebuild of a chapter goes through
    assert write_course(course, [ROOT / "notebooks" / "08_pitfalls.ipynb"]) == ["ch08"]

    # The class's part, by nbgrader's exchange: released, fetched and submitted by both students
    nbgrader(course, "release_assignment", "ch08")
    for student in ("ada", "alan"):
        home = tmp_path / "home" / student
        home.mkdir(parents=True)
        options = [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=mha-notebooks",
                   f"--CourseDirectory.student_id={student}"]
        nbgrader(home, "fetch_assignment", "ch08", *options)
        (notebook,) = (home / "ch08").glob("*.ipynb")
        written = "The mask must be applied before the softmax." if student == "ada" else None
        nbformat.write(fill_in(notebook, written), notebook)
        nbgrader(home, "submit", "ch08", *options)

    assert lines[3] == "nbgrader collect ch08"
    run(lines[3], course)
    # alan's submission, 25 hours after the due date: 2 days started, 20% off (the page's 10% a day)
    (course / "submitted" / "alan" / "ch08" / "timestamp.txt").write_text("2027-03-03 00:59:00.000000 Europe/Berlin")
    (course / "submitted" / "ada" / "ch08" / "timestamp.txt").write_text("2027-03-01 22:00:00.000000 Europe/Berlin")

    moved = tmp_path / "course-2027"  # the course root is its config's folder: the course moves
    course.rename(moved)
    for line in lines[4:6]:
        run(line, moved)
    assert lines[6] == "python -m tools.course_ops parts course --to course/parts.csv"
    words = [re.sub(r"^course(?=/|$)", moved.name, word) for word in shlex.split(lines[6])]  # the moved course
    run(shlex.join(words), tmp_path)
    with (moved / "grades.csv").open() as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == "ch08"}
    right = float(CH08_SCORES["right"])
    late = (right, round(0.2 * right, 6), round(0.8 * right, 6))  # alan: 2 days started, 20% off
    assert {s: tuple(round(float(r[k]), 6) for k in ("raw_score", "late_submission_penalty", "score"))
            for s, r in grades.items()} == {"ada": (right, 0.0, right), "alan": late}
    with (moved / "parts.csv").open() as handle:
        parts = list(csv.DictReader(handle))
    ada = {row["part"]: float(row["score"]) for row in parts if row["student_id"] == "ada"
           and row["assignment"] == "ch08"}
    assert sum(ada.values()) == right and len(ada) >= 6  # exercise 1 in three parts, 2, 3, 4 and the written question
    written = {row["student_id"]: row["needs_manual_grade"] for row in parts if row["assignment"] == "ch08"
               and row["part"].startswith("ch08_explain")}
    assert written == {"ada": "True", "alan": "False"}  # ada's answer waits for a TA; alan's blank one scores 0
    assert {row["student_id"] for row in parts} == {"ada", "alan"}


def test_the_page_s_hub_blocks_give_graders_and_students_their_groups():
    """The several-TAs block and the several-courses block, run as JupyterHub configuration."""
    from traitlets.config import Config

    tas, courses = blocks("python")[1:3]
    c = Config()
    exec(tas, {"c": c})  # noqa: S102 - the page's own block
    assert c.JupyterHub.load_groups["formgrade-mha-notebooks"]["users"] == ["instructor", "ta-lin", "ta-sam"]
    (role,) = c.JupyterHub.load_roles
    assert role["groups"] == ["formgrade-mha-notebooks"]
    assert role["scopes"] == ["access:services!service=mha-notebooks"]
    c = Config()
    exec(courses, {"c": c})  # noqa: S102
    groups = c.JupyterHub.load_groups
    assert groups["nbgrader-mha-2027b"]["users"] == ["grace"]
    assert groups["formgrade-mha-2027a"]["users"] == ["instructor", "ta-lin"]
    assert {r["name"]: r["scopes"] for r in c.JupyterHub.load_roles} == {
        "formgrade-mha-2027a": ["access:services!service=mha-2027a"],
        "formgrade-mha-2027b": ["access:services!service=mha-2027b"]}


@pytest.mark.parametrize(("seconds", "percent"), [(0, 0), (60, 10), (24 * 3600, 10), (25 * 3600, 20),
                                                  (30 * 24 * 3600, 50)])
def test_the_penalty_is_ten_percent_a_started_day_up_to_half(seconds, percent):
    plugin = course_ops.PerDayPenalty(percent_per_day=10, max_percent=50)
    assert (plugin.late_submission_penalty("ada", 8.0, seconds) or 0) == pytest.approx(8.0 * percent / 100)


def test_a_penalty_above_100_percent_is_refused():
    with pytest.raises(ValueError, match="percent_per_day"):
        course_ops.PerDayPenalty(percent_per_day=150).late_submission_penalty("ada", 8.0, 60)


@pytest.mark.parametrize(("text", "problem"), [
    ("name,email\nada,a@x\n", "no column 'id'"),
    ("id,phone\nada,1\n", "unknown columns ['phone']"),
    ("id\nada\nada\n", "line 3: id 'ada' repeats line 2"),
    ("id\nada+bob\n", "line 2: id 'ada+bob' is not a hub user name"),
    ("id\n\n", "no students"),
])
def test_a_bad_class_list_is_refused_naming_the_line(tmp_path, text, problem):
    path = tmp_path / "students.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(problem)):
        course_ops.check_roster(path)


def test_chapters_are_chosen_by_number_and_an_unknown_one_is_named():
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name[:2] for p in select_chapters(notebooks, ["09", "ch10", "9"])] == ["09", "10"]
    with pytest.raises(ValueError, match=r"no chapter \['77'\]"):
        select_chapters(notebooks, ["77"])
    with pytest.raises(ValueError, match="expected chapter numbers such as 09, got 'nine'"):
        select_chapters(notebooks, ["nine"])
