"""The Colab path: chapter 07 runs top to bottom from a plain wheel install of the project, outside the checkout.

On Colab (and after any ``pip install``) mha_lib is a wheel in site-packages, not the checkout, so the
recorded benchmark results must travel with the package. This test builds the wheel from a copy of the
sources, installs it with ``--no-deps --no-index`` into a temporary venv outside the checkout, and executes
chapter 07 there from a temporary directory. torch, jupyter and the rest come from this checkout's .venv
through a ``.pth`` line (no download); the editable mha_lib of the checkout cannot shadow the wheel there,
because its import hook lives in a ``.pth`` file of .venv that a path added this way never runs.
About a minute; ``pytest -m "not wheel"`` leaves it out.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "07_batching_cpu_vs_gpu.ipynb"

pytestmark = pytest.mark.wheel

WHERE_FROM = """\
import sys
import mha_lib
from mha_lib._bench.records import load_results, results_directory
print("executable", sys.executable)
print("mha_lib", mha_lib.__file__)
print("results", results_directory())
print("recorded", sorted(load_results()))
"""


def _run(command: list, cwd: Path, timeout: int = 300) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command[:4]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A venv outside the checkout with the project's wheel installed (and .venv's packages visible)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # build from a copy: the checkout gets no build/ or egg-info
    shutil.copytree(ROOT / "mha_lib", source / "mha_lib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
          "-w", tmp / "dist", source], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("mha_notebooks-*.whl")

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd=tmp)
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).strip())
    # torch, jupyter, nbclient ... from this .venv, after the venv's own site-packages (where the wheel goes)
    (site / "dev_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet", wheel],
         cwd=tmp)
    return venv


def test_the_wheel_carries_the_recorded_results(wheel_venv):
    out = _run([wheel_venv / "bin" / "python", "-c", WHERE_FROM], cwd=wheel_venv.parent)
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert Path(lines["mha_lib"]).is_relative_to(wheel_venv), "the checkout's mha_lib shadows the wheel"
    assert Path(lines["results"]).is_relative_to(wheel_venv)
    assert not Path(lines["results"]).is_relative_to(ROOT)
    assert "cpu-2026-11-21.json" in lines["recorded"]


def test_chapter_07_runs_top_to_bottom_from_the_wheel(wheel_venv):
    work = wheel_venv.parent / "work"
    work.mkdir()
    notebook = nbformat.read(CHAPTER, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(WHERE_FROM))  # where the kernel found mha_lib
    nbformat.write(notebook, work / CHAPTER.name)
    script = ("import nbclient, nbformat, sys; nb = nbformat.read(sys.argv[1], as_version=4); "
              "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3').execute(); "
              "nbformat.write(nb, sys.argv[1])")
    _run([wheel_venv / "bin" / "python", "-c", script, CHAPTER.name], cwd=work, timeout=400)

    executed = nbformat.read(work / CHAPTER.name, as_version=4)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "every code cell ran"
    text = {i: "".join(o.get("text", "") for o in cell.outputs) for i, cell in enumerate(code)}
    assert not any(o.output_type == "error" for cell in code for o in cell.outputs)
    where = dict(line.split(" ", 1) for line in text[len(code) - 1].splitlines())
    assert Path(where["executable"]).is_relative_to(wheel_venv), "the kernel ran in the temporary venv"
    assert Path(where["mha_lib"]).is_relative_to(wheel_venv)
    assert any("cpu-2026-11-21.json: recorded on" in out for out in text.values()), "the recorded run was found"
