"""Running a class with the nbgrader course of tools/nbgrader_course.py: roster, late penalty, grade export.

    python -m tools.course_ops roster COURSE_DIR students.csv     # check the class list, then nbgrader's import
    python -m tools.course_ops parts COURSE_DIR --to parts.csv   # one row per student and graded part

In the course's nbgrader_config.py (docs/running-a-course.md, "Due dates and a late penalty"):

    from tools.course_ops import PerDayPenalty
    c.AssignLatePenalties.plugin_class = PerDayPenalty
    c.PerDayPenalty.percent_per_day = 10      # of the notebook's score, for each day or part of a day late

nbgrader's own roster import, exporter and late-penalty step do the work; this module adds a roster check that
stops before a bad class list reaches the gradebook, a penalty per day late (nbgrader's own plugin knows only
"none" and "zero") and an export with one row per student and graded part.
"""

from __future__ import annotations

import argparse
import csv
import math
import subprocess
import sys
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin, LateSubmissionPlugin
from traitlets import Float

from tools.nbgrader_course import STUDENT_ID  # the one rule for a student id

DAY = 24 * 3600


# ---- the class list -----------------------------------------------------------------------------------------------

def check_roster(path: Path) -> list[dict[str, str]]:
    """The rows of a class list for ``nbgrader db student import``, checked: raises ValueError naming each problem.

    The CSV needs a column ``id`` (the student's name on the hub); ``first_name``, ``last_name``, ``email`` and
    ``lms_user_id`` are optional, as in nbgrader. No other column, no empty or repeated id.
    """
    if not path.is_file():
        raise ValueError(f"roster: expected a CSV file, got {str(path)!r}, which is not a file")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        rows = list(reader)
    known = {"id", "first_name", "last_name", "email", "lms_user_id"}
    problems = []
    if "id" not in header:
        problems.append(f"no column 'id' (the columns are {header})")
    unknown = [name for name in header if name not in known]
    if unknown:
        problems.append(f"unknown columns {unknown}: expected only {sorted(known)}")
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        student = (row.get("id") or "").strip()
        if not STUDENT_ID.fullmatch(student):
            problems.append(f"line {line}: id {student!r} is not a hub user name (letters, digits, _ . @ - ; no "
                            "'+', '/' or spaces)")
        elif student in seen:
            problems.append(f"line {line}: id {student!r} repeats line {seen[student]}")
        else:
            seen[student] = line
    if not rows:
        problems.append("no students in it")
    if problems:
        raise ValueError(f"roster {path}: " + "; ".join(problems))
    return rows


def import_roster(course_dir: Path, path: Path) -> int:
    """Check the class list, then add or update its students in the course's gradebook with nbgrader's import."""
    rows = check_roster(path)
    result = subprocess.run([sys.executable, "-m", "nbgrader", "db", "student", "import", str(path.resolve())],
                            cwd=course_dir, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader db student import failed:\n{result.stdout}\n{result.stderr}")
    return len(rows)


# ---- a late penalty per day ---------------------------------------------------------------------------------------

class PerDayPenalty(LateSubmissionPlugin):
    """A share of the notebook's score off for each day, or part of a day, after the due date."""

    percent_per_day = Float(10.0, help="percent of the notebook's score off per day late").tag(config=True)
    max_percent = Float(100.0, help="at most this percent off in all").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if not 0 <= self.percent_per_day <= 100 or not 0 <= self.max_percent <= 100:
            raise ValueError(f"PerDayPenalty: percent_per_day and max_percent must be between 0 and 100, got "
                             f"{self.percent_per_day} and {self.max_percent}")
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / DAY)
        percent = min(self.max_percent, days * self.percent_per_day)
        self.log.info("%s: %d day(s) late, %g%% off", student_id, days, percent)
        return score * percent / 100


# ---- grades for an LMS, part by part ------------------------------------------------------------------------------

PART_COLUMNS = ["student_id", "last_name", "first_name", "email", "assignment", "notebook", "part", "score",
                "max_score", "needs_manual_grade", "late_submission_penalty"]


def part_rows(gradebook: Gradebook, assignments: list[str] | None = None,
              students: list[str] | None = None) -> list[dict]:
    """One row per student, assignment and graded cell (nbgrader's grade_id), 0 for a missing submission."""
    rows = []
    for assignment in gradebook.assignments:
        if assignments and assignment.name not in assignments:
            continue
        for student in gradebook.students:
            if students and student.id not in students:
                continue
            common = {"student_id": student.id, "last_name": student.last_name or "",
                      "first_name": student.first_name or "", "email": student.email or "",
                      "assignment": assignment.name}
            for notebook in assignment.notebooks:
                try:
                    submitted = gradebook.find_submission_notebook(notebook.name, assignment.name, student.id)
                except MissingEntry:
                    submitted = None
                penalty = (submitted.late_submission_penalty or 0) if submitted else 0
                for cell in notebook.grade_cells:
                    if submitted is None:
                        score, manual = 0, False
                    else:
                        grade = gradebook.find_grade(cell.name, notebook.name, assignment.name, student.id)
                        score, manual = grade.score, grade.needs_manual_grade
                    rows.append({**common, "notebook": notebook.name, "part": cell.name, "score": score,
                                 "max_score": cell.max_score, "needs_manual_grade": manual,
                                 "late_submission_penalty": penalty})
    return rows


class PartsExport(ExportPlugin):
    """nbgrader's export plugin for a CSV of every graded part (default parts.csv): ``python -m tools.course_ops
    parts``, or ``nbgrader export --exporter=tools.course_ops.PartsExport`` where this repository is importable.

    nbgrader's own CSV export (``nbgrader export``) has one row per student and assignment, the score after the
    late penalty, which is what an LMS gradebook imports; this one shows where the points came from.
    """

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "parts.csv"
        rows = part_rows(gradebook, [str(a) for a in self.assignment], [str(s) for s in self.student])
        with open(dest, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=PART_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        self.log.info("Exported %d graded parts to %s", len(rows), dest)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    roster = commands.add_parser("roster", help="check a class list (CSV), then import it into the gradebook")
    roster.add_argument("course_dir", type=Path)
    roster.add_argument("csv", type=Path)
    roster.add_argument("--check-only", action="store_true", help="check the CSV, import nothing")
    parts = commands.add_parser("parts", help="export every student's score on every graded part to a CSV")
    parts.add_argument("course_dir", type=Path)
    parts.add_argument("--to", type=Path, default=Path("parts.csv"), help="the CSV to write (default parts.csv)")
    parts.add_argument("--assignment", action="append", default=[], help="only this assignment (repeatable)")
    parts.add_argument("--student", action="append", default=[], help="only this student (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.command == "parts":
            database = args.course_dir / "gradebook.db"
            if not database.is_file():
                raise ValueError(f"parts: expected a course folder with gradebook.db, got {str(args.course_dir)!r}")
            with Gradebook(f"sqlite:///{database.resolve()}") as gradebook:
                PartsExport(to=str(args.to), assignment=args.assignment, student=args.student).export(gradebook)
            print(f"{args.to}: every graded part of {args.course_dir}")
        elif args.check_only:
            count = len(check_roster(args.csv))
            print(f"{args.csv}: {count} students, ready to import")
        else:
            count = import_roster(args.course_dir, args.csv)
            print(f"{args.csv}: {count} students imported into {args.course_dir / 'gradebook.db'}")
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
