"""The set-up (tools/start.py, which `make setup` calls) where PyTorch's CPU index is out of reach (mainland China,
a firewall): torch from a folder of wheels.

The documented recipe (docs/platforms.zh-CN.md, 国内网络) is `PIP_FIND_LINKS=DIR make setup`. Here a local folder with a
tiny stand-in wheel torch-X+cpu plays the mirror, and a local empty index plays PyPI's mirror, which has no +cpu
build. The launcher runs its real steps: the probe of TORCH_INDEX (a closed local port, refused at once), then the real
pip command, with pip told through its environment to resolve without installing (PIP_DRY_RUN, PIP_NO_DEPS) and to
say where each package came from (PIP_REPORT). Offline, and a few seconds.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCH_VERSION = re.search(r"^torch==([^ ;\n]+)", (ROOT / "requirements.lock").read_text(), re.MULTILINE)[1]
UNREACHABLE = "http://127.0.0.1:9/whl/cpu"  # the discard port: nothing listens, the connection is refused at once

# the launcher runs pip's resolver, twice: seconds
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CPU build is asked for on Linux")]


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel with nothing in it but its metadata: enough for pip to choose it."""
    dist_info = f"{name}-{version}.dist-info"
    files = {f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for path, text in files.items()]
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name_in_wheel, text in files.items():
            wheel.writestr(name_in_wheel, text)
    return path


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The Makefile and the lock, a project with no dependencies of its own, and a .venv that is this one."""
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("tools/start.py", "requirements.lock"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, work / name)
    (work / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\nbuild-backend = '
                                         '"setuptools.build_meta"\n\n[project]\nname = "mha-notebooks"\nversion = '
                                         '"0"\n\n[project.optional-dependencies]\ndev = []\n\n[tool.setuptools]\n'
                                         'packages = []\n')
    (work / ".venv" / "bin").mkdir(parents=True)
    python = work / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return work


def make_setup(checkout: Path, tmp_path: Path, **pip_environment: str) -> subprocess.CompletedProcess:
    mirror = tmp_path / "pypi-mirror"  # a PyPI mirror: a simple index without torch==X+cpu (empty here)
    mirror.mkdir(exist_ok=True)
    own = {name: value for name, value in os.environ.items() if not name.startswith("PIP_")}  # this machine's pip
    environment = {**own, "PIP_INDEX_URL": mirror.as_uri(), "PIP_DRY_RUN": "1",
                   "PIP_NO_DEPS": "1", "PIP_IGNORE_INSTALLED": "1",  # this .venv has torch already
                   "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling: 0 turns isolation off
                   "PIP_REPORT": str(tmp_path / "report.json"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                   "PIP_CONFIG_FILE": os.devnull, **pip_environment}  # devnull: no pip.conf either
    return subprocess.run([sys.executable, "-m", "tools.start", "setup", "--extras", "dev",
                           "--torch-index", UNREACHABLE], cwd=checkout, capture_output=True, text=True, timeout=120,
                          env=environment)


def test_torch_comes_from_the_folder_when_the_cpu_index_is_out_of_reach(checkout, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = stand_in_wheel(wheels, "torch", f"{TORCH_VERSION}+cpu")
    stand_in_wheel(wheels, "torch", TORCH_VERSION)  # the CUDA build's version: never taken instead
    result = make_setup(checkout, tmp_path, PIP_FIND_LINKS=str(wheels))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"==> {UNREACHABLE} is unreachable: looking for torch {TORCH_VERSION}+cpu" in result.stdout
    assert "--extra-index-url" not in result.stdout  # the unreachable index is left out of pip's command
    chosen = {item["metadata"]["name"]: item for item in json.loads((tmp_path / "report.json").read_text())["install"]}
    assert chosen["torch"]["metadata"]["version"] == f"{TORCH_VERSION}+cpu"
    assert chosen["torch"]["download_info"]["url"] == wheel.as_uri()
    assert (checkout / ".venv" / ".installed").exists()


def test_without_the_folder_make_stops_and_says_what_to_do(checkout, tmp_path):
    result = make_setup(checkout, tmp_path)
    assert result.returncode != 0
    assert f"Cannot install torch=={TORCH_VERSION}+cpu" in result.stderr  # pip's own words: a "conflict"
    said = result.stderr
    assert "error: pip could not install mha-notebooks[dev]" in said
    assert f"{UNREACHABLE} was out of reach, and PyPI and its mirrors have no torch {TORCH_VERSION}+cpu" in said
    for remedy in ("--torch-index URL", "PIP_FIND_LINKS=DIR python3 -m tools.start setup", "--torch cuda",
                   "docs/platforms.zh-CN.md: 国内网络"):
        assert remedy in said, remedy
    assert not (checkout / ".venv" / ".installed").exists()
