"""tools/editions.py: the reader edition chapters/ and nbgrader's metadata, both made from notebooks/.

The committed reader edition must be exactly what the tool makes from the instructor notebooks (sources, cell
types, tags and metadata; outputs are nbval's business), must store no "✅ Correct", and must show each exercise
unsolved with its solution collapsed below; every exercise in notebooks/ must carry nbgrader's metadata.
"""

import ast
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from mha_chapters.exercises._engine import CORRECT, NOT_YET
from tools import editions

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHAPTERS = ROOT / "chapters"
REMAKE = "run `python -m tools.editions reader` and execute chapters/ (`make editions`), then commit chapters/"


def solution_cell(source: str, **metadata) -> nbformat.NotebookNode:
    cell = new_code_cell(source, execution_count=3, outputs=[new_output("stream", name="stdout", text="secret\n")])
    cell.metadata.update({"tags": ["solution"], **metadata})
    return cell


def executed(source: str, count: int, text: str) -> nbformat.NotebookNode:
    return new_code_cell(source, execution_count=count, outputs=[new_output("stream", name="stdout", text=text)])


FUNCTION = ('import math\n\n\ndef my_fn(X, num_heads=2):\n    """(b, n, h*d) -> (b*h, n, d)"""\n'
            '    # a comment inside the body goes\n    return X * math.pi\n\n\nprint(my_fn(3))')


def small_notebook() -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_markdown_cell("# Title"),
        executed("import torch\nprint(1)", 1, "1\n"),
        new_markdown_cell("**Exercise 1 (predict).**"),
        solution_cell("# (shape, sample)\nanswer = ((9, 2, 2), 7)"),
        executed("check_answer(answer)", 4, "✅ Correct: yes\n"),
        new_markdown_cell("**Exercise 2 (code).**"),
        solution_cell(FUNCTION),
        executed("check_fn(my_fn)", 6, "✅ Correct: yes\n"),
        executed("check_more(my_fn)\ncheck_again(my_fn)", 7, "✅ Correct: also\n"),
        new_markdown_cell("Next"),
        executed("print(2)", 8, "2\n"),
    ])


# ---- stubs -----------------------------------------------------------------------------------------------------

def test_a_value_answer_becomes_an_ellipsis_that_runs():
    stub = editions.make_stub("# (shape, sample)\nanswer = ((9, 2, 2), 7)")
    assert stub == "# (shape, sample)\nanswer = ..."
    namespace = {}
    exec(stub, namespace)  # no raise: the checker explains what to do
    assert namespace["answer"] is ...
    two = editions.make_stub("shape = (2, 3)\nsample: int = 7")
    assert two.splitlines() == ["shape = ...", "sample: int = ..."]


def test_a_function_keeps_imports_signature_and_docstring_and_raises_only_when_called():
    stub = editions.make_stub(FUNCTION)
    assert stub == ('import math\ndef my_fn(X, num_heads=2):\n    """(b, n, h*d) -> (b*h, n, d)"""\n'
                    '    raise NotImplementedError("Exercise: write the body of my_fn")')
    namespace = {}
    exec(stub, namespace)  # defining it works
    with pytest.raises(NotImplementedError, match="Exercise: write the body of my_fn"):
        namespace["my_fn"](None)


def test_the_chinese_reader_edition_says_in_chinese_what_to_write():
    stub = editions.make_stub(FUNCTION, "zh_CN")
    assert stub.endswith('raise NotImplementedError("练习：请写出 my_fn 的函数体")')
    with pytest.raises(NotImplementedError, match="请写出 my_fn 的函数体"):
        exec(stub + "\nmy_fn(1)", {})


def test_multi_line_signatures_and_decorators_are_kept():
    source = "@staticmethod\ndef f(a,\n      b):\n    return a + b\n"
    stub = '@staticmethod\ndef f(a,\n      b):\n    raise NotImplementedError("Exercise: write the body of f")'
    assert editions.make_stub(source) == stub
    assert editions.make_stub(editions.add_markers(source)) == stub


def test_nbgrader_markers_go_inside_functions_after_the_docstring_and_around_values():
    marked = editions.add_markers(FUNCTION)
    assert marked.splitlines()[4:8] == ['    """(b, n, h*d) -> (b*h, n, d)"""', "    ### BEGIN SOLUTION",
                                        "    # a comment inside the body goes", "    return X * math.pi"]
    assert marked.splitlines()[8] == "    ### END SOLUTION"
    assert editions.add_markers("# Exercise 1: what\ndef f(x):\n    # how\n    return x").splitlines() == [
        "# Exercise 1: what", "def f(x):", "    ### BEGIN SOLUTION", "    # how", "    return x",
        "    ### END SOLUTION"]
    assert editions.add_markers("# (a, b)\nanswer = (1,\n          2)  # why") == (
        "# (a, b)\n### BEGIN SOLUTION\nanswer = (1,\n          2)  # why\n### END SOLUTION")
    for source in (FUNCTION, "# (a, b)\nanswer = (1, 2)", "def f(a,\n      b):\n    return a"):
        marked = editions.add_markers(source)
        ast.parse(marked)
        assert editions.add_markers(marked) == marked  # once is enough
        assert editions.strip_markers(marked) == source.rstrip("\n")
        assert editions.make_stub(marked) == editions.make_stub(source)


# ---- the reader notebook ---------------------------------------------------------------------------------------

def test_reader_notebook_has_stubs_unchanged_checkers_and_collapsed_solutions():
    instructor = small_notebook()
    instructor.cells[3].metadata["nbgrader"] = {"solution": True}
    reader = editions.reader_notebook(instructor, "ch01")
    nbformat.validate(reader)
    cells = reader.cells
    assert [c.cell_type for c in cells] == ["markdown", "code", "markdown", "code", "code", "markdown",
                                            "markdown", "code", "code", "code", "markdown", "markdown", "code"]
    assert cells[3].source == "# (shape, sample)\nanswer = ..."
    assert cells[4].source == "check_answer(answer)" and cells[4].outputs == []  # checker kept, its ✅ gone
    assert cells[5].source == (f"{editions.SUMMARY}\n\n```python\n# (shape, sample)\nanswer = ((9, 2, 2), 7)\n"
                               "```\n\n</details>")
    assert cells[5].id == "ch01_ex1_shown"
    assert cells[7].source.endswith('raise NotImplementedError("Exercise: write the body of my_fn")')
    assert cells[10].source.startswith(editions.SUMMARY) and "return X * math.pi" in cells[10].source
    assert [cells[i].outputs for i in (3, 4, 7, 8, 9)] == [[]] * 5
    assert cells[1].outputs == instructor.cells[1].outputs  # other cells keep theirs until executed
    assert all("nbgrader" not in cell.metadata for cell in cells)
    assert cells[3].metadata["tags"] == ["solution"]
    assert instructor.cells[3].source.endswith("(9, 2, 2), 7)") and instructor.cells[4].outputs  # untouched


def test_a_cell_may_give_its_own_stub():
    nb = new_notebook(cells=[solution_cell("x = compute()", stub="x = ...  # your turn")])
    cell = editions.reader_notebook(nb, "ch01").cells[0]
    assert cell.source == "x = ...  # your turn" and "stub" not in cell.metadata


def test_write_and_compare_editions(tmp_path):
    source, target = tmp_path / "notebooks", tmp_path / "chapters"
    source.mkdir()
    nbformat.write(small_notebook(), source / "01_small.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell("no exercises")]), source / "02_plain.ipynb")
    assert editions.stale_reader_edition(source, target) == ["missing: chapters/01_small.ipynb",
                                                            "missing: chapters/02_plain.ipynb"]
    editions.write_reader_edition(sorted(source.glob("*.ipynb")), target)
    assert editions.stale_reader_edition(source, target) == []
    nb = nbformat.read(target / "01_small.ipynb", as_version=4)
    nb.cells[4].outputs = [new_output("stream", name="stdout", text="❌ Not yet: ...\n")]  # executing is fine
    nbformat.write(nb, target / "01_small.ipynb")
    assert editions.stale_reader_edition(source, target) == []
    nb.cells[3].source = "answer = 42"  # a reader's answer committed by mistake
    nbformat.write(nb, target / "01_small.ipynb")
    assert editions.stale_reader_edition(source, target) == ["stale: chapters/01_small.ipynb (first difference at "
                                                            "cell 3)"]
    nbformat.write(nb, target / "03_old.ipynb")
    assert "extra: chapters/03_old.ipynb" in editions.stale_reader_edition(source, target)


# ---- the committed reader edition ------------------------------------------------------------------------------

def test_the_committed_reader_edition_is_what_the_tool_makes():
    assert editions.stale_reader_edition(ROOT / "notebooks", CHAPTERS) == [], REMAKE


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_reader_chapters_store_no_correct_and_show_each_exercise_unsolved(path):
    instructor = nbformat.read(path, as_version=4)
    reader = nbformat.read(CHAPTERS / path.name, as_version=4)
    assert CORRECT not in str([cell.get("outputs", []) for cell in reader.cells]), REMAKE
    found = editions.exercises(reader)
    assert len(found) == len(editions.exercises(instructor))
    solutions = [instructor.cells[index].source for index, _ in editions.exercises(instructor)]
    for (index, checkers), solution in zip(found, solutions, strict=True):
        assert reader.cells[index].source == editions.make_stub(solution)
        assert editions.BEGIN not in reader.cells[index].source
        for checker in checkers:
            printed = "".join(output.get("text", "") for output in reader.cells[checker].outputs)
            assert printed.startswith(NOT_YET), f"cell {checker} of chapters/{path.name} prints {printed!r}"
        shown = reader.cells[checkers[-1] + 1]
        assert shown.cell_type == "markdown" and shown.source.startswith(editions.SUMMARY)
        code = shown.source.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
        assert code == editions.strip_markers(solution).strip()


# ---- nbgrader's metadata in notebooks/ ------------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_carries_nbgrader_metadata(path):
    assert editions.nbgrader_problems(path) == [], "run `python -m tools.editions nbgrader` and commit notebooks/"


def test_grade_ids_are_unique_across_the_collection():
    ids = [cell.metadata["nbgrader"]["grade_id"] for path in NOTEBOOKS
           for cell in nbformat.read(path, as_version=4).cells if "nbgrader" in cell.metadata]
    assert len(ids) == len(set(ids)) > 80


def test_missing_or_wrong_metadata_and_repeated_grade_ids_are_reported(tmp_path):
    path = tmp_path / "04_small.ipynb"
    nb = small_notebook()
    nbformat.write(nb, path)
    assert any("should be" in problem for problem in editions.nbgrader_problems(path))  # none yet
    assert editions.add_nbgrader_metadata(nb, "ch04")
    assert not editions.add_nbgrader_metadata(nb, "ch04")  # a second run changes nothing
    nbformat.write(nb, path)
    assert editions.nbgrader_problems(path) == []
    metadata = [cell.metadata.get("nbgrader") for cell in nb.cells]
    assert metadata[3] == {"grade": False, "grade_id": "ch04_ex1_answer", "locked": False, "schema_version": 3,
                           "solution": True}
    assert metadata[4]["grade_id"] == "ch04_ex1_check" and metadata[4]["points"] == 1 and metadata[4]["locked"]
    assert [metadata[8]["grade_id"], metadata[8]["points"]] == ["ch04_ex2_check2", 2]  # two checker calls
    assert nb.cells[3].source == "# (shape, sample)\n### BEGIN SOLUTION\nanswer = ((9, 2, 2), 7)\n### END SOLUTION"
    nb.cells[5].source = "**Exercise 1 (again).**"  # two exercises numbered 1: the second takes its place, 2
    assert editions.exercise_numbers(nb) == [1, 2]
    nb.cells[5].source = "**Exercise 2 (code).**"
    nb.cells[7].metadata["nbgrader"]["grade_id"] = "ch04_ex1_check"  # copied from another cell
    del nb.cells[8].metadata["nbgrader"]
    nbformat.write(nb, path)
    problems = editions.nbgrader_problems(path)
    assert [p.split(":")[0] for p in problems] == ["04_small.ipynb cell 7", "04_small.ipynb cell 8",
                                                   "04_small.ipynb"]
    assert problems[-1] == "04_small.ipynb: grade_id ch04_ex1_check repeats"
