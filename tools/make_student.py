"""Write student copies of the notebooks: every solution is replaced by a stub that raises NotImplementedError.

Usage: python tools/make_student.py SOURCE_DIR TARGET_DIR    (``make student`` runs it on notebooks/ -> student/)

The notebooks in SOURCE_DIR are the instructor versions. A code cell tagged ``solution`` (cell metadata
``"tags": ["solution"]``) holds the answer to an exercise; the code cells right after it (up to the next
markdown cell) call its checker. In the student copy:

- a solution cell becomes a stub: imports and comments on their own line are kept; each function keeps its
  signature and docstring and gets the body ``raise NotImplementedError("Exercise: ...")``; each
  ``name = value`` becomes ``name = ...``, followed by one ``raise NotImplementedError(...)`` line.
  Other statements are dropped. A cell may give its own stub as a string in its metadata, ``"stub"``.
- outputs and execution counts are cleared in the solution cells and in the checker cells after them;
  every other cell keeps its outputs, so the student reads the chapter as executed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat

SOLUTION_TAG = "solution"


def is_solution(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def make_stub(source: str) -> str:
    """The student's version of a solution cell's code."""
    tree = ast.parse(source)
    lines = source.splitlines()
    pieces: list[tuple[int, str]] = []  # (first line number, text), put back in source order
    inside: set[int] = set()  # line numbers covered by a statement
    answers = []
    for node in tree.body:
        inside.update(range(_first_line(node), node.end_lineno + 1))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            pieces.append((node.lineno, "\n".join(lines[node.lineno - 1:node.end_lineno])))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pieces.append((_first_line(node), _function_stub(node, lines)))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = " = ".join(ast.get_source_segment(source, target) for target in targets)
            if isinstance(node, ast.AnnAssign):
                names += ": " + ast.get_source_segment(source, node.annotation)
            pieces.append((node.lineno, f"{names} = ..."))
            answers.append(names)
    for number, line in enumerate(lines, start=1):  # comments on their own line, outside any statement
        if number not in inside and line.strip().startswith("#"):
            pieces.append((number, line))
    pieces.sort(key=lambda piece: piece[0])
    text = "\n".join(text for _, text in pieces)
    if answers:
        what = "each ..." if len(answers) > 1 or "," in answers[0] else "the ..."
        text += f'\nraise NotImplementedError("Exercise: replace {what} with your answer, then delete this line")'
    return text


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _function_stub(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str:
    """Signature (with decorators) and docstring, then a body that raises NotImplementedError."""
    body = node.body
    has_docstring = (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                     and isinstance(body[0].value.value, str))
    indent = " " * body[0].col_offset
    header = lines[_first_line(node) - 1:body[0].lineno - 1]
    if has_docstring:
        header += lines[body[0].lineno - 1:body[0].end_lineno]
    return "\n".join(header + [f'{indent}raise NotImplementedError("Exercise: write the body of {node.name}")'])


def make_student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with stubs in place of solutions and the outputs of solution and checker cells cleared."""
    nb = nbformat.from_dict(nb)  # a deep copy; the instructor notebook stays as it is
    after_solution = False
    for cell in nb.cells:
        if is_solution(cell):
            stub = cell.metadata.get("stub")
            cell.source = ("".join(stub) if isinstance(stub, list) else stub) if stub else make_stub(cell.source)
            cell.metadata.pop("stub", None)
            _clear(cell)
            after_solution = True
        elif cell.cell_type == "code" and after_solution:
            _clear(cell)  # a checker cell: its stored output would show the right answer
        else:
            after_solution = False
    return nb


def _clear(cell: nbformat.NotebookNode) -> None:
    cell.outputs = []
    cell.execution_count = None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    source, target = Path(argv[0]), Path(argv[1])
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        print(f"no notebooks found in {source}", file=sys.stderr)
        return 1
    target.mkdir(parents=True, exist_ok=True)
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        student = make_student_notebook(nb)
        nbformat.write(student, target / path.name)
        count = sum(is_solution(cell) for cell in nb.cells)
        print(f"{target / path.name}: {count} exercise{'s' if count != 1 else ''} turned into stubs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
