"""A venv outside the checkout with this project installed from its wheel, as an image or Colab installs it.

Used by tests/test_wheel_install.py (chapter 07 from the wheel) and tests/hub (the hub's users run in it, as in the
Kubernetes image). The wheel is built from a copy of the sources and installed with ``--no-deps --no-index``, so
mha_lib lives in the venv's site-packages, not in the checkout: no folder mounted over the checkout (a home volume)
can hide it. torch, jupyter and the rest come from this checkout's .venv through a ``.pth`` line (no download); the
editable mha_lib of the checkout cannot shadow the wheel there, because its import hook lives in a ``.pth`` file of
.venv that a path added this way never runs. JupyterLab's extensions and server settings (nbgrader's included) are
the .venv's too, linked into the venv's share/jupyter and etc/jupyter; its kernel is the venv's own python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV_PREFIX = Path(sys.prefix)  # this checkout's .venv
LINKED = ["share/jupyter/lab", "share/jupyter/labextensions", "share/jupyter/nbconvert", "etc/jupyter"]


def run(command: list, cwd: Path, timeout: int = 300, **kwargs) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{command[:4]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def open_to_everyone(path: Path) -> bool:
    """True when every user of the machine may run ``path`` (the file and each folder above it allow others)."""
    path = path.resolve()
    return all(folder.stat().st_mode & 0o001 for folder in path.parents) and bool(path.stat().st_mode & 0o005)


def python_for_everyone() -> Path:
    """A Python of this .venv's version that every account may run: the .venv's own base interpreter, or else one of
    the same version on PATH (a python in root's home, as pyenv puts it, is closed to other accounts)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    folders = [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin", "/usr/bin"]
    candidates = [Path(sys._base_executable), *(Path(f) / version for f in folders if (Path(f) / version).is_file())]
    for candidate in candidates:
        if open_to_everyone(candidate):
            return candidate
    raise RuntimeError(f"no {version} that every account may run: tried {[str(c) for c in candidates]}")


def make_wheel_venv(tmp: Path, python: Path | None = None) -> Path:
    """Build the project's wheel in ``tmp`` and install it into the venv ``tmp/venv``, made by ``python`` (default:
    this .venv's base interpreter; it must be Python of the same version); returns the venv."""
    source = tmp / "source"  # build from a copy: the checkout gets no build/ or egg-info
    for package in ("mha_lib", "mha_chapters"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "-w", tmp / "dist", source], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("mha_notebooks-*.whl")

    venv = tmp / "venv"
    run([python or sys.executable, "-m", "venv", "--without-pip", *([] if python else ["--system-site-packages"]),
         venv], cwd=tmp)
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).strip())
    # torch, jupyter, nbclient ... from this .venv, after the venv's own site-packages (where the wheel goes)
    (site / "dev_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet", wheel],
        cwd=tmp)
    for path in LINKED:
        (venv / path).parent.mkdir(parents=True, exist_ok=True)
        (venv / path).symlink_to(DEV_PREFIX / path, target_is_directory=True)
    return venv
