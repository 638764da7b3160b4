"""The hosted-CI workflows cannot run here (no hosted runner): their structure is checked, and zizmor (a linter from
PyPI, in the test extra) lints each of them.

- .github/workflows/setup.yml runs the documented set-up and chapter 00 on Linux, macOS and Windows.
- .github/workflows/book.yml builds the book from each release tag and deploys it to the repository's pages.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
SETUP, BOOK = WORKFLOWS / "setup.yml", WORKFLOWS / "book.yml"


def read(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as True
    return workflow


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_the_workflows_are_these_two():
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == ["book.yml", "setup.yml"]


@pytest.mark.parametrize("path", [SETUP, BOOK], ids=lambda p: p.name)
def test_actions_are_pinned_to_a_commit_and_the_token_reads_only(path: Path):
    workflow = read(path)
    for step in steps(workflow):
        if "uses" in step:
            ref = step["uses"].split("@")[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), step["uses"]
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    assert workflow["permissions"] == {"contents": "read"}
    for job in workflow["jobs"].values():
        assert "timeout-minutes" in job


def test_the_set_up_workflow_runs_the_documented_set_up_on_linux_macos_and_windows():
    workflow = read(SETUP)
    (job,) = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs[0] == "python -m tools.start setup --extras dev"  # the launcher of README.md, no make, no shell syntax
    assert "chapters/00_start_here.ipynb" in runs[1] and "nbval" in runs[1]  # runs there, never here (not slow)


def test_the_book_workflow_deploys_make_book_from_each_release_tag():
    """The tag is what tools/colab.py pins (`vVERSION`): the pages and their launch buttons show the same release."""
    workflow = read(BOOK)
    assert workflow["on"]["push"] == {"tags": ["v*"]}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert [step["run"] for step in build["steps"] if "run" in step] == ["make book"]
    (upload,) = [step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload["with"]["path"] == "build/book"  # where the Makefile's book target writes it
    assert "--out build/book" in (ROOT / "Makefile").read_text()
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}  # only the deploying job may write
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]


LINTER = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(LINTER is None, reason="zizmor is not installed: the test extra has it (pip install zizmor)")
@pytest.mark.parametrize("path", [SETUP, BOOK], ids=lambda p: p.name)
def test_zizmor_finds_nothing(path: Path):
    result = subprocess.run([LINTER, "--offline", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings" in result.stdout + result.stderr
