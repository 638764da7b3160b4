"""tools/make_student.py: student copies have stubs in place of solutions, and run up to their first exercise."""

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

_spec = importlib.util.spec_from_file_location("make_student", ROOT / "tools" / "make_student.py")
make_student = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_student)


def solution_cell(source: str, **metadata) -> nbformat.NotebookNode:
    cell = new_code_cell(source, execution_count=3, outputs=[new_output("stream", name="stdout", text="secret\n")])
    cell.metadata.update({"tags": ["solution"], **metadata})
    return cell


def executed(source: str, count: int, text: str) -> nbformat.NotebookNode:
    return new_code_cell(source, execution_count=count, outputs=[new_output("stream", name="stdout", text=text)])


def small_notebook() -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_markdown_cell("# Title"),
        executed("import torch\nprint(1)", 1, "1\n"),
        new_markdown_cell("**Exercise 1.**"),
        solution_cell("# (shape, sample)\nanswer = ((9, 2, 2), 7)"),
        executed("check_answer(answer)", 4, "✅ Correct: yes\n"),
        new_markdown_cell("**Exercise 2.**"),
        solution_cell('import math\n\n\ndef my_fn(X, num_heads=2):\n    """(b, n, h*d) -> (b*h, n, d)"""\n'
                      '    # a comment inside the body goes\n    return X * math.pi\n\n\nprint(my_fn(3))'),
        executed("check(my_fn)", 6, "✅ Correct: yes\n"),
        executed("extra_check(my_fn)", 7, "✅ Correct: also\n"),
        new_markdown_cell("Next"),
        executed("print(2)", 8, "2\n"),
    ])


def test_answer_cells_keep_the_name_and_raise():
    assert make_student.make_stub("# (shape, sample)\nanswer = ((9, 2, 2), 7)") == (
        "# (shape, sample)\nanswer = ...\n"
        'raise NotImplementedError("Exercise: replace the ... with your answer, then delete this line")'
    )
    two = make_student.make_stub("shape = (2, 3)\nsample: int = 7")
    assert two.splitlines()[:2] == ["shape = ...", "sample: int = ..."]
    assert "replace each ..." in two


def test_function_cells_keep_imports_signature_and_docstring_only():
    stub = make_student.make_stub(small_notebook().cells[6].source)
    assert stub == (
        "import math\n"
        "def my_fn(X, num_heads=2):\n"
        '    """(b, n, h*d) -> (b*h, n, d)"""\n'
        '    raise NotImplementedError("Exercise: write the body of my_fn")'
    )


def test_multi_line_signatures_and_decorators_are_kept():
    source = "@staticmethod\ndef f(a,\n      b):\n    return a + b\n"
    assert make_student.make_stub(source) == (
        '@staticmethod\ndef f(a,\n      b):\n    raise NotImplementedError("Exercise: write the body of f")'
    )


def test_stubs_raise_not_implemented_error():
    namespace = {}
    exec(make_student.make_stub(small_notebook().cells[6].source), namespace)  # defining is fine
    with pytest.raises(NotImplementedError, match="Exercise: write the body of my_fn"):
        namespace["my_fn"](None)
    with pytest.raises(NotImplementedError, match="replace the ..."):
        exec(make_student.make_stub("answer = 3"), {})


def test_student_notebook_clears_solutions_and_their_checkers_only():
    instructor = small_notebook()
    student = make_student.make_student_notebook(instructor)
    nbformat.validate(student)
    cells = student.cells
    assert [c.source for c in cells[:3]] == [c.source for c in instructor.cells[:3]]
    assert cells[1].outputs == instructor.cells[1].outputs and cells[1].execution_count == 1  # kept
    for i in (3, 4, 6, 7, 8):  # solutions and the checker cells after them
        assert cells[i].outputs == [] and cells[i].execution_count is None, i
    assert cells[3].source.startswith("# (shape, sample)\nanswer = ...")
    assert cells[4].source == "check_answer(answer)"  # the checker call stays
    assert cells[10].outputs[0].text == "2\n" and cells[10].execution_count == 8  # after a markdown cell: kept
    assert cells[3].metadata["tags"] == ["solution"]
    # The instructor notebook is untouched.
    assert instructor.cells[3].source.endswith("(9, 2, 2), 7)") and instructor.cells[4].outputs


def test_a_cell_may_give_its_own_stub():
    nb = new_notebook(cells=[solution_cell("x = compute()", stub="x = ...  # your turn\nraise NotImplementedError")])
    cell = make_student.make_student_notebook(nb).cells[0]
    assert cell.source == "x = ...  # your turn\nraise NotImplementedError"
    assert "stub" not in cell.metadata


def test_main_writes_every_notebook(tmp_path, capsys):
    source = tmp_path / "notebooks"
    source.mkdir()
    nbformat.write(small_notebook(), source / "01_small.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell("no exercises")]), source / "02_plain.ipynb")
    assert make_student.main([str(source), str(tmp_path / "student")]) == 0
    written = sorted(p.name for p in (tmp_path / "student").iterdir())
    assert written == ["01_small.ipynb", "02_plain.ipynb"]
    assert "2 exercises turned into stubs" in capsys.readouterr().out
    student = json.loads((tmp_path / "student" / "01_small.ipynb").read_text())
    assert "NotImplementedError" in "".join(student["cells"][3]["source"])
    assert make_student.main([str(tmp_path / "empty"), str(tmp_path / "out")]) == 1


# ---- the real notebooks ----------------------------------------------------------------------------------------

STUB_PROBE = '''
import inspect as _inspect
_results = []
for _source in {stubs!r}:
    _namespace = dict(globals())
    try:
        exec(_source, _namespace)
    except NotImplementedError:
        _results.append("cell raises")
        continue
    _new = [v for k, v in _namespace.items() if k not in globals() and _inspect.isfunction(v)]
    for _function in _new:
        try:
            _function(*[None] * len(_inspect.signature(_function).parameters))
        except NotImplementedError:
            _results.append("function raises")
        else:
            _results.append(f"{{_function.__name__}} does NOT raise")
    if not _new:
        _results.append("nothing raises")
print(_results)
'''


def with_exercises():
    return [path for path in NOTEBOOKS
            if any(make_student.is_solution(cell) for cell in nbformat.read(path, as_version=4).cells)]


@pytest.mark.parametrize("path", with_exercises(), ids=lambda p: p.name)
def test_student_copy_runs_until_its_first_exercise_and_its_stubs_raise(path):
    """Execute the student copy up to its first solution cell, then run every stub in that kernel."""
    nbclient = pytest.importorskip("nbclient")
    student = make_student.make_student_notebook(nbformat.read(path, as_version=4))
    first = next(i for i, cell in enumerate(student.cells) if make_student.is_solution(cell))
    stubs = [cell.source for cell in student.cells if make_student.is_solution(cell)]
    student.cells = student.cells[:first] + [new_code_cell(STUB_PROBE.format(stubs=stubs))]
    client = nbclient.NotebookClient(student, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, with the failing cell, if any cell before the exercises fails
    results = eval(student.cells[-1].outputs[0].text)  # the probe's printed list
    assert len(results) >= len(stubs) and all(r in ("cell raises", "function raises") for r in results), results


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p not in with_exercises()], ids=lambda p: p.name)
def test_a_notebook_without_exercises_is_copied_unchanged(path):
    """Its student copy is the instructor version, which nbval already executes: no need to run it twice."""
    nb = nbformat.read(path, as_version=4)
    assert make_student.make_student_notebook(nb) == nb
