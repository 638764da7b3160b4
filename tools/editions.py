"""The two editions of every chapter, made from one source: ``notebooks/`` (solved) and ``chapters/`` (for readers).

    python -m tools.editions reader [NOTEBOOK ...]   write the reader edition chapters/ from notebooks/
    python -m tools.editions nbgrader [NOTEBOOK ...] write or refresh nbgrader's cell metadata in notebooks/
    python -m tools.editions check                   exit 1 if chapters/ or the nbgrader metadata is stale
    python -m tools.editions student --out DIR       the reader edition without its collapsed solutions (courses)

``notebooks/`` is the one source: the instructor edition, with every exercise solved. Lecturers, slides, CI and
nbgrader use it. An exercise is a code cell tagged ``solution`` (the reader's answer cell) and the code cells right
after it, up to the next markdown cell or the next answer cell: its checker cells.

The reader edition, ``chapters/`` (same file names, committed and executed), is what ``make lab``, Binder and Colab
open. In it

- each answer cell is a stub that runs without error: imports and comments on their own line stay; a value answer
  ``answer = ((9, 2, 2), 7)`` becomes ``answer = ...`` (the checker says "replace each ... with your answer"); a
  function keeps its signature and docstring, and its body is ``raise NotImplementedError("Exercise: ...")``, in the
  edition's language, so defining it works and the checker says to write the body first. A cell may give its own
  stub as a string in its metadata, ``"stub"``;
- the checker cells stay as they are, and print "❌ Not yet: ..." until the reader answers;
- after the checker cells comes a markdown cell with the instructor's code, collapsed:
  ``<details><summary>Show a solution</summary>`` ... ``</details>``, which JupyterLab, Colab and GitHub render;
- nbgrader's metadata is left out (it would lock the checker cells in a reader's JupyterLab with nbgrader).

nbgrader's metadata in ``notebooks/`` (``nbgrader`` subcommand, run it after adding an exercise): each answer cell
is a solution cell (schema 3; grade_id ``chNN_exK_answer``) whose code sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (inside a function's body, after its signature and docstring; comments that state the exercise
stay above), and each checker cell is a locked, graded test cell (grade_id ``chNN_exK_check``) worth one point per
checker call. K is the number of the exercise in the chapter's text ("Exercise K"), else its place in the chapter.
The checkers raise ``AssertionError`` under nbgrader (``mha_chapters/exercises/_engine.py``), so the checker cells need
no change to be autograded tests. They are not fit for marks (an answer cell can rebind a checker's name): the
course of ``make assignments`` (``tools/nbgrader_course.py``) grades with hidden tests instead and keeps the
checkers as ungraded practice.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat

from tools import code_text

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks"
READER = ROOT / "chapters"
# Each language's instructor notebooks, its reader edition, and the words of a collapsed solution's summary. The
# Chinese instructor notebooks are built from the English ones by tools/translate.py.
LANGUAGES = {
    "en": (SOURCE, READER, "Show a solution"),
    "zh_CN": (ROOT / "zh-CN" / "notebooks", ROOT / "zh-CN" / "chapters", "显示参考答案"),
}
SOLUTION_TAG = "solution"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SUMMARY_LINE = "<details><summary>{}</summary>"
SUMMARY = SUMMARY_LINE.format(LANGUAGES["en"][2])
STUB_MESSAGES = {"en": "Exercise: write the body of {name}", "zh_CN": "练习：请写出 {name} 的函数体"}
_EXERCISE_NUMBER = re.compile(r"(?:Exercise|练习)\s*(\d+)")


# ---- exercises: an answer cell and the checker cells after it ------------------------------------------------------

def is_solution(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def exercises(nb: nbformat.NotebookNode) -> list[tuple[int, list[int]]]:
    """Each exercise as (index of its answer cell, indices of its checker cells), in the order of the notebook."""
    found = []
    for index, cell in enumerate(nb.cells):
        if is_solution(cell):
            checkers = []
            for after in range(index + 1, len(nb.cells)):
                if nb.cells[after].cell_type != "code" or is_solution(nb.cells[after]):
                    break
                checkers.append(after)
            found.append((index, checkers))
    return found


def exercise_numbers(nb: nbformat.NotebookNode) -> list[int]:
    """The number of each exercise: "Exercise K" in its answer cell, else in the markdown before it, else its place."""
    numbers = []
    for place, (index, _) in enumerate(exercises(nb), start=1):
        found = _EXERCISE_NUMBER.findall(nb.cells[index].source)
        if not found:
            before = next((cell for cell in reversed(nb.cells[:index]) if cell.cell_type == "markdown"), None)
            found = _EXERCISE_NUMBER.findall(before.source) if before is not None else []
        number = int(found[-1]) if found else place
        numbers.append(number if number not in numbers else place)
    return numbers


def checker_calls(source: str) -> int:
    """The number of checker calls, ``check_x(...)`` statements, in a cell."""
    tree = ast.parse(strip_markers(source))
    return sum(isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
               and isinstance(node.value.func, ast.Name) and node.value.func.id.startswith("check_")
               for node in tree.body)


# ---- the solution markers and the stubs ---------------------------------------------------------------------------

def strip_markers(source: str) -> str:
    """The code without nbgrader's ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def add_markers(source: str) -> str:
    """Put the solution between nbgrader's markers: inside each function after its docstring, else around the code.

    Comments and imports before the first other statement stay above the markers; a cell that has them already is
    returned as it is.
    """
    if any(line.strip() in (BEGIN, END) for line in source.splitlines()):
        return source
    lines = source.splitlines()
    tree = ast.parse(source)
    functions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if functions:
        for node in reversed(functions):  # from the bottom up, so the line numbers above stay right
            if _has_docstring(node) and len(node.body) == 1:  # only a docstring: nothing to hide
                continue
            indent = " " * node.body[0].col_offset
            # After the docstring, or after the signature (own-line comments at the top belong to the solution).
            start = node.body[0].end_lineno if _has_docstring(node) else _def_end(node, lines)
            lines[node.end_lineno:node.end_lineno] = [indent + END]
            lines[start:start] = [indent + BEGIN]
        return "\n".join(lines)
    code = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    if not code:
        return source
    first = min(_first_line(node) for node in code)
    last = max(node.end_lineno for node in code)
    return "\n".join([*lines[:first - 1], BEGIN, *lines[first - 1:last], END, *lines[last:]])


def _def_end(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    """The number of the line that ends the signature: the first from ``def`` whose code ends with ':'."""
    number = node.lineno
    while number < node.body[0].lineno and not lines[number - 1].split("#")[0].rstrip().endswith(":"):
        number += 1
    return number


def _has_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def make_stub(source: str, language: str = "en") -> str:
    """The reader's version of an answer cell: it runs without error, and the checker then says what to do."""
    source = strip_markers(source)
    tree = ast.parse(source)
    lines = source.splitlines()
    pieces: list[tuple[int, str]] = []  # (first line number, text), put back in source order
    inside: set[int] = set()  # line numbers covered by a statement
    for node in tree.body:
        inside.update(range(_first_line(node), node.end_lineno + 1))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            pieces.append((node.lineno, "\n".join(lines[node.lineno - 1:node.end_lineno])))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pieces.append((_first_line(node), _function_stub(node, lines, language)))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = " = ".join(ast.get_source_segment(source, target) for target in targets)
            if isinstance(node, ast.AnnAssign):
                names += ": " + ast.get_source_segment(source, node.annotation)
            pieces.append((node.lineno, f"{names} = ..."))
    for number, line in enumerate(lines, start=1):  # comments on their own line, outside any statement
        if number not in inside and line.strip().startswith("#"):
            pieces.append((number, line))
    pieces.sort(key=lambda piece: piece[0])
    return "\n".join(text for _, text in pieces)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _function_stub(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], language: str) -> str:
    """Signature (with decorators) and docstring, then a body that raises NotImplementedError when called."""
    body = node.body
    indent = " " * body[0].col_offset
    header = lines[_first_line(node) - 1:_def_end(node, lines)]
    if _has_docstring(node):
        header = lines[_first_line(node) - 1:body[0].end_lineno]
    message = STUB_MESSAGES[language].format(name=node.name)
    return "\n".join(header + [f'{indent}raise NotImplementedError("{message}")'])


def solution_markdown(source: str, summary: str = LANGUAGES["en"][2]) -> str:
    """The collapsed solution shown after an exercise's checker in the reader edition."""
    return f"{SUMMARY_LINE.format(summary)}\n\n```python\n{strip_markers(source).strip()}\n```\n\n</details>"


# ---- the reader edition -----------------------------------------------------------------------------------------

def reader_notebook(nb: nbformat.NotebookNode, prefix: str, language: str = "en") -> nbformat.NotebookNode:
    """The reader edition of an instructor notebook: stubs, checkers unchanged, collapsed solutions, no nbgrader.

    ``prefix`` (``ch02``) names the cells of the collapsed solutions, ``ch02_ex3_shown``; ``language`` chooses the
    words of their summary line.
    """
    nb = nbformat.from_dict(nb)  # a deep copy; the instructor notebook stays as it is
    found = exercises(nb)
    names = _grade_ids(nb, prefix)
    for (index, checkers), name in reversed(list(zip(found, names, strict=True))):
        cell = nb.cells[index]
        shown = nbformat.v4.new_markdown_cell(solution_markdown(cell.source, LANGUAGES[language][2]))
        shown.id = f"{name}_shown"
        if nb.nbformat_minor < 5:
            shown.pop("id", None)
        nb.cells.insert((checkers[-1] if checkers else index) + 1, shown)
        stub = cell.metadata.pop("stub", None)
        cell.source = ("".join(stub) if isinstance(stub, list) else stub) if stub else make_stub(cell.source, language)
        for position in [index, *checkers]:
            nb.cells[position].outputs = []
            nb.cells[position].execution_count = None
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    return nb


def student_notebook(nb: nbformat.NotebookNode, prefix: str, language: str = "en") -> nbformat.NotebookNode:
    """The reader edition without its collapsed solutions: what a course that grades the exercises may post.

    The answer cells are the reader edition's stubs and the checker cells keep no output; the "Show a solution"
    cells that :func:`reader_notebook` adds are left out (``make student``, tools/lecture, tools/book).
    """
    nb = reader_notebook(nb, prefix, language)
    summary = SUMMARY_LINE.format(LANGUAGES[language][2])
    nb.cells = [cell for cell in nb.cells
                if not (cell.cell_type == "markdown" and cell.source.startswith(summary))]
    return nb


SOLUTION_MARKERS = (BEGIN, END, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def code_part(line: str) -> str:
    """A line of code without its trailing comment, spaces collapsed: what a search for it compares."""
    return re.sub(r"[ \t]+", " ", line.split("  #")[0].strip())


def _output_texts(cell: nbformat.NotebookNode) -> list[str]:
    """The printed text of a code cell (a chapter may print library source that a solution repeats)."""
    return [str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
            for output in cell.get("outputs", [])]


def solution_lines(nb: nbformat.NotebookNode, language: str = "en") -> set[str]:
    """The lines of the chapter's solutions that a build for students must not contain, stripped.

    Left out: comments, imports, lines of the unsolved stub (signature, docstring), lines shorter than 12
    characters (``return x``), and every line that the chapter shows outside its answer cells, in code or printed
    (it teaches them).
    """
    public = {code_part(line) for cell in nb.cells if not is_solution(cell)
              for text in [cell.source, *_output_texts(cell)] for line in text.splitlines()}
    secret = set()
    for index, _ in exercises(nb):
        source = strip_markers(nb.cells[index].source)
        stub = {line.strip() for line in make_stub(source, language).splitlines()}
        for line in source.splitlines():
            line = line.strip()
            if (len(line) >= 12 and not line.startswith(("#", "import ", "from ", '"""', "'" * 3))
                    and line not in stub and code_part(line) not in public):
                secret.add(line)
    return secret


def keep_outputs(fresh: nbformat.NotebookNode, previous: Path, keep_slides: bool = False) -> None:
    """Give ``fresh`` the outputs (and the widget state, which follows them) of the notebook at ``previous`` when
    it has the same cells with the same code; with ``keep_slides``, also the slide layout that tools/lecture
    computed from those outputs (the reader edition takes its layout from the instructor notebook instead).

    A change to the text alone (a fixed sentence, a better translation, a comment or docstring: compared with
    :func:`tools.code_text.code_only`) then leaves a notebook that is still executed and valid, so it needs no new
    run; any change to the code leaves the outputs cleared.
    """
    if not previous.exists():
        return
    previous_nb = nbformat.read(previous, as_version=4)
    old = previous_nb.cells
    same = len(old) == len(fresh.cells) and all(
        before.cell_type == after.cell_type
        and (before.cell_type != "code" or code_text.code_only(before.source) == code_text.code_only(after.source))
        for before, after in zip(old, fresh.cells, strict=False))
    if not same:
        return
    for before, after in zip(old, fresh.cells, strict=True):
        if after.cell_type == "code":
            after.outputs, after.execution_count = before.outputs, before.execution_count
        if keep_slides and "slideshow" in before.metadata:
            after.metadata["slideshow"] = before.metadata["slideshow"]
    fresh.metadata.pop("widgets", None)  # the widgets' state belongs to the outputs it was saved with
    if "widgets" in previous_nb.metadata:
        fresh.metadata["widgets"] = previous_nb.metadata["widgets"]


def write_reader_edition(notebooks: list[Path], target: Path = READER, language: str = "en") -> list[Path]:
    """Write the reader edition of each notebook into ``target`` (see :func:`keep_outputs`); returns the paths."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = reader_notebook(nbformat.read(path, as_version=4), chapter_prefix(path), language)
        keep_outputs(nb, target / path.name)
        nbformat.write(nb, target / path.name)
        written.append(target / path.name)
    return written


def comparable(nb: nbformat.NotebookNode) -> list[tuple]:
    """What must agree between a committed reader notebook and a fresh one: cell type, source, metadata (no outputs)."""
    ignored = {"execution", "ExecuteTime", "collapsed", "scrolled"}
    return [(cell.cell_type, cell.source, {k: v for k, v in cell.metadata.items() if k not in ignored})
            for cell in nb.cells]


def stale_reader_edition(source: Path = SOURCE, target: Path = READER, language: str = "en") -> list[str]:
    """What differs between ``target`` and the reader edition of ``source`` ([] when it is current)."""
    problems = []
    wanted = {path.name: path for path in sorted(source.glob("*.ipynb"))}
    present = {path.name for path in target.glob("*.ipynb")}
    problems += [f"missing: {target.name}/{name}" for name in sorted(set(wanted) - present)]
    problems += [f"extra: {target.name}/{name}" for name in sorted(present - set(wanted))]
    for name in sorted(set(wanted) & present):
        fresh = comparable(reader_notebook(nbformat.read(wanted[name], as_version=4), chapter_prefix(wanted[name]),
                                           language))
        committed = comparable(nbformat.read(target / name, as_version=4))
        if fresh != committed:
            where = next((i for i, (a, b) in enumerate(zip(fresh, committed, strict=False)) if a != b),
                         min(len(fresh), len(committed)))
            problems.append(f"stale: {target.name}/{name} (first difference at cell {where})")
    return problems


# ---- nbgrader's metadata in the instructor notebooks ---------------------------------------------------------------

def chapter_prefix(path: Path) -> str:
    """``ch02`` for ``02_scaled_dot_product_attention.ipynb``."""
    return "ch" + path.name[:2]


def _grade_ids(nb: nbformat.NotebookNode, prefix: str) -> list[str]:
    return [f"{prefix}_ex{number}" for number in exercise_numbers(nb)]


def nbgrader_cells(nb: nbformat.NotebookNode, prefix: str) -> dict[int, dict]:
    """The nbgrader metadata each cell should carry: {cell index: metadata}, answers and checkers only."""
    wanted = {}
    for (index, checkers), name in zip(exercises(nb), _grade_ids(nb, prefix), strict=True):
        wanted[index] = {"grade": False, "grade_id": f"{name}_answer", "locked": False, "schema_version": 3,
                         "solution": True}
        graded = [i for i in checkers if checker_calls(nb.cells[i].source)]
        for number, checker in enumerate(graded, start=1):
            wanted[checker] = {"grade": True, "grade_id": f"{name}_check" + (f"{number}" if number > 1 else ""),
                               "locked": True, "points": checker_calls(nb.cells[checker].source),
                               "schema_version": 3, "solution": False}
    return wanted


def add_nbgrader_metadata(nb: nbformat.NotebookNode, prefix: str) -> bool:
    """Mark the solutions and write nbgrader's metadata into ``nb`` in place; True if anything changed."""
    wanted = nbgrader_cells(nb, prefix)
    changed = False
    for index, cell in enumerate(nb.cells):
        if index in wanted and is_solution(cell):
            marked = add_markers(cell.source)
            changed |= marked != cell.source
            cell.source = marked
        if index in wanted and cell.metadata.get("nbgrader") != wanted[index]:
            cell.metadata["nbgrader"] = wanted[index]
            changed = True
        elif index not in wanted and "nbgrader" in cell.metadata:
            del cell.metadata["nbgrader"]
            changed = True
    return changed


def nbgrader_problems(path: Path) -> list[str]:
    """What is missing or wrong in the nbgrader metadata of an instructor notebook ([] when it is right)."""
    nb = nbformat.read(path, as_version=4)
    wanted = nbgrader_cells(nb, chapter_prefix(path))
    problems = []
    for index, cell in enumerate(nb.cells):
        have = cell.metadata.get("nbgrader")
        if index in wanted and have != wanted[index]:
            problems.append(f"{path.name} cell {index}: nbgrader metadata {have} should be {wanted[index]}")
        elif index not in wanted and have is not None:
            problems.append(f"{path.name} cell {index}: nbgrader metadata on a cell that is no exercise")
        if index in wanted and is_solution(cell) and (BEGIN not in cell.source or END not in cell.source):
            problems.append(f"{path.name} cell {index}: the solution is not between {BEGIN!r} and {END!r}")
    ids = [cell.metadata["nbgrader"].get("grade_id") for cell in nb.cells if "nbgrader" in cell.metadata]
    problems += [f"{path.name}: grade_id {name} repeats" for name in sorted({i for i in ids if ids.count(i) > 1})]
    return problems


# ---- command line -------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["reader", "nbgrader", "check", "student"])
    parser.add_argument("--out", type=Path, help="student: the folder to write the notebooks without solutions into")
    parser.add_argument("notebooks", nargs="*", type=Path, help="instructor notebooks (default: all of the language)")
    parser.add_argument("--language", choices=list(LANGUAGES), default="en",
                        help="en: notebooks/ -> chapters/; zh_CN: zh-CN/notebooks/ -> zh-CN/chapters/")
    args = parser.parse_args(argv)
    source, target, _ = LANGUAGES[args.language]
    paths = args.notebooks or sorted(source.glob("*.ipynb"))
    if args.command == "reader":
        for path in write_reader_edition(paths, target, args.language):
            count = len(exercises(nbformat.read(path, as_version=4)))
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {count} exercise(s) unsolved")
        return 0
    if args.command == "student":
        if args.out is None:
            parser.error("student needs --out FOLDER")
        args.out.mkdir(parents=True, exist_ok=True)
        for path in paths:
            nb = student_notebook(nbformat.read(path, as_version=4), chapter_prefix(path), args.language)
            nbformat.write(nb, args.out / path.name)
        print(f"{args.out}: {len(paths)} notebooks without solutions")
        return 0
    if args.command == "nbgrader":
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if add_nbgrader_metadata(nb, chapter_prefix(path)):
                nbformat.write(nb, path)
                print(f"{path.name}: nbgrader metadata written")
        return 0
    problems = (stale_reader_edition(source, target, args.language)
                + [p for path in paths for p in nbgrader_problems(path)])
    for problem in problems:
        print(problem)
    if problems:
        print("run: python -m tools.editions nbgrader && python -m tools.editions reader, then execute chapters/ "
              "(make editions)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
