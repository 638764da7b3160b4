"""The launcher a reader runs on any OS (tools/start.py): the commands it plans for Linux, macOS and Windows, its
stamps, and how it fails. Nothing here installs anything; the real run is tests/test_start.py's one slow test."""

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tools import start

ROOT = Path(__file__).resolve().parents[1]
TORCH_VERSION = re.search(r"^torch==([^ ;\n]+)", (ROOT / "requirements.lock").read_text(), re.MULTILINE)[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SOURCE = (ROOT / "tools" / "start.py").read_text(encoding="utf-8")


def test_the_launcher_runs_on_a_bare_python_3_7_with_the_standard_library_alone():
    tree = ast.parse(SOURCE, feature_version=(3, 7))  # a SyntaxError here: the Mac's 3.9 could not even start it
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported - {"__future__"} <= sys.stdlib_module_names, imported - sys.stdlib_module_names
    assert "tomllib" not in imported  # 3.11's: the launcher must get as far as saying the Python is too old


def test_the_launcher_needs_the_python_that_pyproject_requires():
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={start.NEEDS[0]}.{start.NEEDS[1]}"


@pytest.mark.parametrize("name, platform", [("linux", "linux"), ("darwin", "darwin"), ("win32", "win32"),
                                            ("cygwin", "win32"), ("freebsd14", "linux")])
def test_platform_names(name, platform):
    assert start.platform_of(name) == platform


def test_linux_asks_for_the_cpu_build_of_the_locked_torch_from_the_cpu_index():
    plan = start.plan(ROOT, "linux", ["lab"], python="python3")
    assert plan.make_venv == ["python3", "-m", "venv", ".venv"]
    assert plan.pip == [str(ROOT / ".venv" / "bin" / "python"), "-m", "pip", "install", "--extra-index-url", CPU_INDEX,
                        "--constraint", "requirements.lock", "--editable", ".[lab]", f"torch=={TORCH_VERSION}+cpu"]
    assert plan.notes == []


def test_linux_without_the_cpu_index_looks_for_the_cpu_build_elsewhere_and_never_takes_cuda():
    plan = start.plan(ROOT, "linux", ["lab"], torch_index="http://127.0.0.1:9/whl/cpu", index_reachable=False)
    assert "--extra-index-url" not in plan.pip and plan.pip[-1] == f"torch=={TORCH_VERSION}+cpu"
    assert plan.notes == [f"http://127.0.0.1:9/whl/cpu is unreachable: looking for torch {TORCH_VERSION}+cpu "
                          "in pip's own indexes and find-links"]
    said = "\n".join(start.remedies(plan, "http://127.0.0.1:9/whl/cpu"))
    assert "error: pip could not install mha-notebooks[lab]" in said
    for remedy in ("--torch-index URL", "make setup TORCH_INDEX=URL", "PIP_FIND_LINKS=DIR make setup",
                   "--torch cuda", "make setup TORCH=cuda", "docs/platforms.zh-CN.md: 国内网络"):
        assert remedy in said, remedy


@pytest.mark.parametrize("platform, torch", [("linux", "cuda"), ("darwin", "cpu"), ("win32", "cpu")])
def test_elsewhere_pypi_torch_at_the_locked_version(platform, torch):
    plan = start.plan(ROOT, platform, ["dev"], torch=torch, has_venv=True)
    assert plan.make_venv is None  # a .venv with a working pip is kept
    assert plan.cpu_torch is None and not any("+cpu" in part or CPU_INDEX in part for part in plan.pip)
    assert plan.pip[1:] == ["-m", "pip", "install", "--constraint", "requirements.lock", "--editable", ".[dev]"]


@pytest.mark.parametrize("platform, python", [("win32", ("Scripts", "python.exe")), ("darwin", ("bin", "python")),
                                              ("linux", ("bin", "python"))])
def test_each_platform_uses_the_python_of_its_venv(platform, python):
    assert start.venv_python(ROOT, platform) == ROOT / ".venv" / Path(*python)
    assert start.plan(ROOT, platform, ["lab"]).pip[0] == str(ROOT / ".venv" / Path(*python))


def test_no_command_goes_through_a_shell():
    tree = ast.parse(SOURCE)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert not [ast.unparse(call) for call in calls if any(k.arg == "shell" for k in call.keywords)]
    assert "os.system" not in SOURCE


@pytest.mark.parametrize("arguments, message", [(["plan", "--platform", "amiga"], "invalid choice: 'amiga'"),
                                                (["setup", "--platform", "win32"], "--platform is for `plan` only"),
                                                (["setup", "--extras", "Lab;rm"], "--extras 'Lab;rm': expected"),
                                                (["lab", "--port", "70000"], "--port 70000: a port is a number")])
def test_bad_arguments_are_named(arguments, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        start.main(arguments)
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_plan_and_torch_names_are_checked():
    with pytest.raises(ValueError, match="platform='beos': expected one of linux, darwin, win32"):
        start.plan(ROOT, "beos", ["lab"])
    with pytest.raises(ValueError, match="torch='rocm': expected 'cpu'"):
        start.plan(ROOT, "linux", ["lab"], torch="rocm")


@pytest.mark.parametrize("extras, stamp", [(["lab"], ".installed-lab"), (["dev"], ".installed"),
                                           (["dev", "browser"], ".installed-browser"),
                                           (["dev", "hub"], ".installed-hub")])
def test_stamps_are_the_names_the_makefile_depends_on(extras, stamp):
    assert start.stamp_name(extras) == stamp
    assert f"$(VENV)/{stamp}" in (ROOT / "Makefile").read_text() or stamp == ".installed"


def touch(path: Path, when: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path, (when, when))


def test_a_stamp_is_fresh_while_newer_than_pyproject_and_the_lock(tmp_path):
    touch(tmp_path / "pyproject.toml", 1000)
    touch(tmp_path / "requirements.lock", 1000)
    assert not start.is_fresh(tmp_path, ["lab"])
    touch(tmp_path / ".venv" / ".installed-lab", 2000)
    assert start.is_fresh(tmp_path, ["lab"]) and not start.is_fresh(tmp_path, ["dev"])
    touch(tmp_path / "requirements.lock", 3000)  # the lock moved: install again
    assert not start.is_fresh(tmp_path, ["lab"])
    touch(tmp_path / ".venv" / ".installed", 4000)  # dev contains lab
    assert start.is_fresh(tmp_path, ["lab"]) and start.is_fresh(tmp_path, ["dev"])
    touch(tmp_path / ".venv" / ".installed-browser", 3500)  # older than dev's install: made again
    assert not start.is_fresh(tmp_path, ["dev", "browser"])


@pytest.mark.parametrize("version, platform, fine", [((3, 10, 12), "linux", False), ((3, 10, 4), "win32", False),
                                                     ((3, 11, 0), "linux", True), ((3, 13, 1), "darwin", True)])
def test_a_python_older_than_the_collection_needs_is_named_with_what_to_run(version, platform, fine):
    message = start.too_old(version, platform)
    assert (message is None) == fine
    if not fine:
        assert f"needs Python 3.11 or newer; this is Python {'.'.join(map(str, version))}" in message
        assert RUN_INSTEAD[platform] in message and INSTALL[platform] in message


# What a refusal tells a reader to run instead, and how to install that Python, on each platform.
RUN_INSTEAD = {"linux": "one of python3.11 to python3.14, for example: python3.11 -m tools.start "
                        "(make lab PYTHON=python3.11)",
               "darwin": "one of python3.11 to python3.14, for example: python3.12 -m tools.start "
                         "(make lab PYTHON=python3.12)",
               "win32": "one of Python 3.11 to 3.14, for example: py -3.12 -m tools.start"}
INSTALL = {"linux": "sudo apt install python3.11 python3.11-venv", "darwin": "brew install python@3.12",
           "win32": "winget install Python.Python.3.12"}


def test_a_failed_venv_is_removed_and_the_message_says_what_to_install(tmp_path, monkeypatch, capsys):
    # Debian without python3-venv: `python3 -m venv` leaves a .venv with a python and no pip, and fails.
    for name in ("pyproject.toml", "requirements.lock"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    fake = tmp_path / "python3-without-venv"
    fake.write_text(f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && ln -s {sys.executable} "$3/bin/python"
    echo "The virtual environment was not created successfully because ensurepip is not available." >&2
    exit 1
fi
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    monkeypatch.setattr(start.sys, "executable", str(fake))
    monkeypatch.setattr(start, "platform_of", lambda name=None: "linux")
    monkeypatch.chdir(tmp_path)  # the fake's "$3" is the relative .venv
    assert start.setup(tmp_path, ["lab"], "cuda", CPU_INDEX) == 1  # cuda: no probe of the CPU index
    assert not (tmp_path / ".venv").exists(), "the half-made .venv stays and every later run fails"
    assert "sudo apt install python3-venv" in capsys.readouterr().err


@pytest.mark.parametrize("version, platform, fine", [((3, 14, 2), "linux", True), ((3, 15, 0), "darwin", False),
                                                     ((3, 15, 0), "win32", False), ((3, 16, 1), "linux", False)])
def test_a_python_newer_than_torch_has_wheels_for_is_named_with_the_range_and_what_to_run(version, platform, fine):
    message = start.too_new(version, platform)
    assert (message is None) == fine
    if not fine:
        assert f"needs Python 3.11 to 3.14 (the torch of requirements.lock has no wheels for a newer one); " \
               f"this is Python {'.'.join(map(str, version))}" in message
        assert RUN_INSTEAD[platform] in message and INSTALL[platform] in message


def checkout(root: Path) -> None:
    """A checkout without .venv: the two files a set-up reads."""
    for name in ("pyproject.toml", "requirements.lock"):
        (root / name).write_text((ROOT / name).read_text())


def test_setup_refuses_a_python_too_new_before_it_makes_the_venv(tmp_path, monkeypatch, capsys):
    checkout(tmp_path)
    monkeypatch.setattr(start.sys, "version_info", (3, 15, 0, "final", 0))
    monkeypatch.setattr(start, "reachable", lambda url: pytest.fail("probed the index before refusing"))
    monkeypatch.setattr(start.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a[0]} before refusing"))
    assert start.setup(tmp_path, ["lab"], "cpu", CPU_INDEX) == 1
    said = capsys.readouterr().err
    assert "making .venv needs Python 3.11 to 3.14" in said and "this is Python 3.15.0" in said
    assert not (tmp_path / ".venv").exists()


def test_setup_stops_at_once_on_an_old_python(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(start.sys, "version_info", (3, 10, 12, "final", 0))
    assert start.setup(tmp_path, ["lab"], "cpu", CPU_INDEX) == 1
    assert "needs Python 3.11 or newer" in capsys.readouterr().err and not (tmp_path / ".venv").exists()


def test_a_stale_stamp_is_installed_again_by_the_venvs_python_whatever_python_starts_the_launcher(
        tmp_path, monkeypatch, capsys):
    # `python3.12 -m tools.start` made .venv; a `git pull` moved the lock; the Mac's python3 (3.9) or Ubuntu 22.04's
    # (3.10) starts the launcher: .venv's python installs again, and nothing is refused or made
    checkout(tmp_path)
    touch(tmp_path / ".venv" / ".installed-lab", os.stat(tmp_path / "requirements.lock").st_mtime - 60)
    ran = []
    monkeypatch.setattr(start.sys, "version_info", (3, 10, 12, "final", 0))
    monkeypatch.setattr(start, "platform_of", lambda name=None: "linux")
    monkeypatch.setattr(start, "has_pip", lambda python: True)
    monkeypatch.setattr(start.subprocess, "run", lambda command, **k: ran.append(command) or
                        subprocess.CompletedProcess(command, 0))
    assert start.setup(tmp_path, ["lab"], "cuda", CPU_INDEX) == 0, capsys.readouterr().err
    (pip,) = ran  # no venv step
    assert pip[:4] == [str(tmp_path / ".venv" / "bin" / "python"), "-m", "pip", "install"]
    assert start.is_fresh(tmp_path, ["lab"])
    assert f"+ {start.show(pip, tmp_path)}" in capsys.readouterr().out  # the command, printed before it runs
    touch(tmp_path / "requirements.lock", os.stat(tmp_path / ".venv" / ".installed-lab").st_mtime + 60)
    assert plan_here(tmp_path, monkeypatch, capsys) == [start.show(pip, tmp_path)]  # plan says the same


@pytest.mark.parametrize("version", [(3, 9, 6, "final", 0), (3, 15, 0, "final", 0)])
def test_any_python_still_starts_a_venv_that_is_set_up(tmp_path, monkeypatch, version):
    # after `python3.12 -m tools.start`, the Mac's python3 (3.9), Ubuntu 22.04's (3.10) or a 3.15 only starts it
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / start.stamp_name(["lab"])).touch()
    monkeypatch.setattr(start.sys, "version_info", version)
    assert start.setup(tmp_path, ["lab"], "cpu", CPU_INDEX) == 0


def test_on_windows_the_launcher_waits_through_ctrl_c_for_jupyterlab(monkeypatch):
    # Ctrl+C reaches JupyterLab and its launcher alike: the launcher must neither kill it nor end in a traceback
    waits = iter([KeyboardInterrupt, KeyboardInterrupt, 3])

    class Child:
        def __init__(self, command, env):
            self.command, self.env = command, env

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def wait(self):
            result = next(waits)
            if result is KeyboardInterrupt:
                raise KeyboardInterrupt
            return result

    monkeypatch.setattr(start, "REPLACES_ITSELF", False)
    monkeypatch.setattr(start.subprocess, "Popen", Child)
    assert start.hand_over(["jupyter", "lab"], {"A": "1"}) == 3  # JupyterLab's own exit code, after two Ctrl+C


def test_plan_prints_the_commands_and_runs_none():
    # another platform than this machine's: the plan of a fresh checkout there, whatever this checkout's .venv holds
    other = "darwin" if start.platform_of() == "win32" else "win32"
    result = subprocess.run([sys.executable, "-m", "tools.start", "plan", "--platform", other, "--extras", "dev"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == FRESH_CHECKOUT[other]


# The plan of a fresh checkout as a reader types it there: the platform's own Python, its paths and its quotes.
FRESH_CHECKOUT = {
    "win32": ["py -m venv .venv",
              '.venv\\Scripts\\python.exe -m pip install --constraint requirements.lock --editable ".[dev]"'],
    "darwin": ["python3 -m venv .venv",
               ".venv/bin/python -m pip install --constraint requirements.lock --editable '.[dev]'"],
}


@pytest.mark.parametrize("platform", sorted(FRESH_CHECKOUT))
def test_plan_for_another_platform_shows_its_python_paths_and_quotes(platform, monkeypatch):
    monkeypatch.setattr(start, "platform_of", lambda name=None: "linux")  # this machine is another one
    assert start.planned(ROOT, platform, ["dev"], "cpu", CPU_INDEX) == FRESH_CHECKOUT[platform]


def plan_here(root: Path, monkeypatch, capsys) -> list[str]:
    """What ``python3 -m tools.start plan --torch cuda`` prints in the checkout ``root`` (cuda: no probe line)."""
    monkeypatch.setattr(start, "ROOT", root)
    assert start.main(["plan", "--torch", "cuda"]) == 0
    return capsys.readouterr().out.splitlines()


def test_plan_prints_what_the_set_up_would_really_run_with_the_venv_there(tmp_path, monkeypatch, capsys):
    checkout(tmp_path)
    monkeypatch.setattr(start, "has_pip", lambda python: False)
    venv, pip = plan_here(tmp_path, monkeypatch, capsys)  # no .venv: both steps
    assert venv == f"{sys.executable} -m venv .venv" and " -m pip install " in pip
    monkeypatch.setattr(start, "has_pip", lambda python: True)
    assert plan_here(tmp_path, monkeypatch, capsys) == [pip]  # a .venv with a pip is kept, as setup keeps it
    touch(tmp_path / ".venv" / ".installed-lab", os.stat(tmp_path / "requirements.lock").st_mtime + 1)
    (done,) = plan_here(tmp_path, monkeypatch, capsys)  # the stamp is fresh: setup runs nothing
    assert done.startswith("# .venv has mha-notebooks[lab]") and done.endswith("nothing to install")


def test_plan_prints_the_refusal_of_a_python_too_new(tmp_path, monkeypatch, capsys):
    checkout(tmp_path)
    monkeypatch.setattr(start.sys, "version_info", (3, 15, 0, "final", 0))
    first, run, install = plan_here(tmp_path, monkeypatch, capsys)
    assert first.startswith("# error: making .venv needs Python 3.11 to 3.14") and "3.11 to " in run
    assert install.startswith("#        None installed? ")


def test_help_shows_the_examples_with_the_windows_launcher(capsys):
    with pytest.raises(SystemExit) as exit:
        start.main(["--help"])
    assert exit.value.code == 0
    text = capsys.readouterr().out
    assert "py -m tools.start" in text
    assert "python3 -m tools.start lab --edition zh_CN --port 8899" in text  # the docstring's examples, kept verbatim
    assert "usage: python3 -m tools.start" in text  # macOS and Ubuntu have python3, not python
