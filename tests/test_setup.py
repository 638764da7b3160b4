"""What `make setup` and `make lab` do on a reader's machine: the commands they run, and how they fail.

Each test runs make on a copy of the Makefile in a temporary folder, most with `make -n`, which prints the
commands without running them, so nothing is installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import reader_lab, workcopy

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_VERSION = re.search(r"^torch==([^ ;\n]+)", (ROOT / "requirements.lock").read_text(), re.MULTILINE)[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml", "requirements.lock"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def make(checkout: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *arguments], cwd=checkout, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})


def recipe(checkout: Path, *arguments: str) -> str:
    result = make(checkout, "-n", *arguments)
    assert result.returncode == 0, result.stderr
    return result.stdout


# What the launcher plans on each platform, and how it fails, is tests/test_start.py's; here: make calls it.
def test_setup_is_the_launchers_reader_set_up_with_make_s_torch_choice(checkout):
    assert recipe(checkout, "setup").strip() == f"python3 -m tools.start setup --torch cpu --torch-index {CPU_INDEX}"
    assert "--torch cuda --torch-index https://mirror.example/cpu" in recipe(
        checkout, "setup", "TORCH=cuda", "TORCH_INDEX=https://mirror.example/cpu")
    assert recipe(checkout, "setup", "PYTHON=python3.12").startswith("python3.12 -m tools.start setup ")


def test_the_targets_for_tests_and_maintainers_install_the_dev_extra_through_the_launcher(checkout):
    assert "python3 -m tools.start setup --extras dev --torch cpu" in recipe(checkout, "test-quick")
    assert "-m tools.start setup --extras dev,browser --torch cpu" in recipe(checkout, ".venv/.installed-browser")
    assert "--constraint $(LOCK) --editable" not in (ROOT / "Makefile").read_text()  # the install: tools/start.py


# --- make lab ----------------------------------------------------------------------------------------------------

def test_lab_and_lab_zh_start_the_readers_lab_through_the_launcher_on_the_chosen_port(checkout):
    assert recipe(checkout, "lab", "PORT=8899").startswith("python3 -m tools.start lab --port 8899 --torch cpu")
    assert recipe(checkout, "lab-zh", "PORT=8899").startswith("python3 -m tools.start lab --edition zh_CN --port 8899")


@pytest.mark.parametrize("edition, copy, settings", [("en", "my-chapters", "settings"),
                                                     ("zh_CN", "my-chapters-zh", "settings-zh")])
def test_the_readers_lab_opens_chapter_00_of_the_readers_copy_on_localhost(edition, copy, settings):
    command = reader_lab.command(edition, 8899)
    assert f"--ServerApp.root_dir={ROOT / copy}" in command  # the copy: answers never meet `git pull`
    (start,) = [option.split("/lab/tree/")[1] for option in command if option.startswith("--LabApp.default_url=")]
    assert (workcopy.EDITIONS[edition].source / start).is_file() and start.startswith("00_")
    assert "--ServerApp.port=8899" in command and "--ServerApp.ip=127.0.0.1" in command
    assert f"--LabApp.app_settings_dir={ROOT / '.jupyter' / 'lab' / settings}" in command
    assert (ROOT / ".jupyter" / "lab" / settings / "overrides.json").is_file()


@pytest.mark.parametrize("port", [0, 70000])
def test_a_port_out_of_range_is_named(port):
    with pytest.raises(ValueError, match=f"PORT={port}"):
        reader_lab.command("en", port)


def test_the_readers_config_comes_first_and_a_readers_own_path_stays():
    assert reader_lab.environment({})["JUPYTER_CONFIG_PATH"] == str(reader_lab.READER_CONFIG)
    paths = reader_lab.environment({"JUPYTER_CONFIG_PATH": "/etc/mine"})["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert paths == [str(reader_lab.READER_CONFIG), "/etc/mine"]


def test_the_readers_config_turns_off_every_nbgrader_extension_that_is_installed():
    # nbgrader enables itself in the environment's etc/jupyter; the reader's config must name each extension.
    enabled = Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/nbgrader.json"
    lab_extension = Path(sys.prefix) / "share/jupyter/labextensions/@jupyter/nbgrader/package.json"
    if not enabled.exists() or not lab_extension.exists():
        pytest.skip("nbgrader is not installed here")
    server = json.loads((reader_lab.READER_CONFIG / "jupyter_server_config.json").read_text())
    switched = server["ServerApp"]["jpserver_extensions"]
    installed = json.loads(enabled.read_text())["ServerApp"]["jpserver_extensions"]
    assert {name: switched.get(name) for name in installed} == dict.fromkeys(installed, False)
    page = json.loads((reader_lab.READER_CONFIG / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"] == {json.loads(lab_extension.read_text())["name"]: True}


def test_lecturers_keep_nbgrader_in_their_own_lab(checkout):
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / ".installed").touch()
    result = make(checkout, "-n", "lab-instructor")
    assert "--LabApp.default_url=/lab/tree/notebooks/00_" in result.stdout
    assert "JUPYTER_CONFIG_PATH" not in result.stdout and "reader_lab" not in result.stdout


@pytest.mark.parametrize("target", ["reset", "reset-zh"])
def test_reset_without_a_chapter_says_how_to_name_one(checkout, target):
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / ".installed-lab").touch()  # newer than pyproject.toml and the lock: no install
    result = make(checkout, "-n", target)
    assert result.returncode != 0 and f"make {target} CHAPTER=04" in result.stderr
    result = make(checkout, "-n", target, "CHAPTER=04")
    assert result.returncode == 0 and "tools.workcopy reset" in result.stdout and "'04'" in result.stdout


@pytest.mark.parametrize("target", ["help", "help-all"])
def test_help_shows_no_variable_unexpanded(checkout, target):
    result = make(checkout, target)
    assert result.returncode == 0 and "make lab " in result.stdout
    assert "$(" not in result.stdout and "$$" not in result.stdout


def described_targets(text: str) -> list[str]:
    """The targets that `make help` and `make help-all` print: the lines `name: ... ## description`."""
    return [line.split(":")[0] for line in text.splitlines() if re.match(r"[a-z-]+:.*## ", line)]


def listed_targets(stdout: str) -> list[str]:
    return [match[1] for match in re.finditer(r"^  make (\S+) +\S", stdout, flags=re.MULTILINE)]


def test_help_shows_the_readers_targets_and_help_all_every_target(checkout):
    """A reader meets seven targets, each with its description; the rest wait behind `make help-all`."""
    every = described_targets((ROOT / "Makefile").read_text())
    reader = make(checkout, "help").stdout
    assert listed_targets(reader) == ["setup", "lab", "lab-zh", "reset", "refresh", "test-quick", "test"]
    assert "make help-all" in reader.splitlines()[-1]
    assert listed_targets(make(checkout, "help-all").stdout) == every
    assert len(every) > 30 and {"help", "help-all", "lab-instructor", "outputs", "zh", "lock"} <= set(every)


def test_shipped_settings_turn_off_the_news_prompt_with_names_jupyterlab_knows():
    overrides = json.loads((ROOT / ".jupyter" / "lab" / "settings" / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}
    schema = Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/notification.json"
    if not schema.exists():
        pytest.skip("JupyterLab is not installed here")
    properties = json.loads(schema.read_text())["properties"]
    assert {value["const"] for value in properties["fetchNews"]["oneOf"]} >= {"false"}
    assert properties["checkForUpdates"]["type"] == "boolean"


def test_the_docs_name_the_locked_torch():
    assert f"torch=={TORCH_VERSION}+cpu" in (ROOT / "docs" / "platforms.md").read_text()
    assert f"torch=={TORCH_VERSION}+cpu" in (ROOT / "docs" / "platforms.zh-CN.md").read_text()
    for page in [*ROOT.glob("README*.md"), *(ROOT / "docs").glob("*.md")]:
        other = re.findall(r"torch==(?!" + re.escape(TORCH_VERSION) + r")\d", page.read_text())
        assert not other, f"{page.name} names another torch"
