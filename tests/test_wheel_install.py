"""The Colab path: chapter 07 runs top to bottom from a plain wheel install of the project, outside the checkout.

On Colab (and after any ``pip install``) mha_lib is a wheel in site-packages, not the checkout, so the
recorded benchmark results must travel with the package. This test builds the wheel from a copy of the
sources, installs it into a temporary venv outside the checkout (tests/wheel_env.py, shared with the hub's
test), and executes chapter 07 there from a temporary directory.
About a minute; ``pytest -m "not wheel"`` leaves it out, and so does ``make test-quick`` (``-m "not slow"``).
"""

from pathlib import Path

import nbformat
import pytest
from wheel_env import make_wheel_venv, run

from mha_chapters.bench.records import newest_recording

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "07_batching_cpu_vs_gpu.ipynb"

pytestmark = [pytest.mark.wheel, pytest.mark.slow]  # builds a wheel, executes chapter 07

WHERE_FROM = """\
import sys
import mha_chapters
import mha_lib
from mha_chapters.bench.records import load_results, results_directory
print("executable", sys.executable)
print("mha_lib", mha_lib.__file__)
print("mha_chapters", mha_chapters.__file__)
print("results", results_directory())
print("recorded", sorted(load_results()))
"""


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A venv outside the checkout with the project's wheel installed (and .venv's packages visible)."""
    return make_wheel_venv(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_carries_the_recorded_results(wheel_venv):
    out = run([wheel_venv / "bin" / "python", "-c", WHERE_FROM], cwd=wheel_venv.parent)
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert Path(lines["mha_lib"]).is_relative_to(wheel_venv), "the checkout's mha_lib shadows the wheel"
    assert Path(lines["mha_chapters"]).is_relative_to(wheel_venv), "the checkout's mha_chapters shadows the wheel"
    assert Path(lines["results"]).is_relative_to(wheel_venv)
    assert not Path(lines["results"]).is_relative_to(ROOT)
    assert newest_recording("batching").name in lines["recorded"]  # the checkout's newest recording travels


def test_chapter_07_runs_top_to_bottom_from_the_wheel(wheel_venv):
    work = wheel_venv.parent / "work"
    work.mkdir()
    notebook = nbformat.read(CHAPTER, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(WHERE_FROM))  # where the kernel found mha_lib
    nbformat.write(notebook, work / CHAPTER.name)
    script = ("import nbclient, nbformat, sys; nb = nbformat.read(sys.argv[1], as_version=4); "
              "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3').execute(); "
              "nbformat.write(nb, sys.argv[1])")
    run([wheel_venv / "bin" / "python", "-c", script, CHAPTER.name], cwd=work, timeout=400)

    executed = nbformat.read(work / CHAPTER.name, as_version=4)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "every code cell ran"
    text = {i: "".join(o.get("text", "") for o in cell.outputs) for i, cell in enumerate(code)}
    assert not any(o.output_type == "error" for cell in code for o in cell.outputs)
    where = dict(line.split(" ", 1) for line in text[len(code) - 1].splitlines())
    assert Path(where["executable"]).is_relative_to(wheel_venv), "the kernel ran in the temporary venv"
    assert Path(where["mha_lib"]).is_relative_to(wheel_venv)
    name = newest_recording("batching").name
    assert any(f"{name}: recorded on" in out for out in text.values()), "the recorded run was found"
