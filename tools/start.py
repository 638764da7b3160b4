"""One set-up on Linux, macOS and Windows: make .venv, install the lock, open the reader's JupyterLab.

    python3 -m tools.start                 set up if needed, then JupyterLab at chapter 00 of my-chapters/
    python3 -m tools.start lab --edition zh_CN --port 8899
    python3 -m tools.start setup           set up only (the reader's `lab` extra)
    python3 -m tools.start setup --extras dev      everything the tests and the maintainers' tools need
    python3 -m tools.start plan            print the commands a set-up would run now, and run none
    python3 -m tools.start plan --platform win32   the same for a fresh checkout on Windows

Run it in the folder of the clone; on Windows as ``py -m tools.start``. `make setup` and `make lab` call it too.
It needs only Python's standard library and runs on Python 3.7 or newer (3.7 to 3.10 measured), so that it can say
plainly when the Python cannot make ``.venv``: older than 3.11, or newer than 3.14 (PyTorch 2.13 has no wheels for
it). Where ``.venv`` is made already, any of these Pythons opens it and updates it: ``.venv``'s own python installs.

What it does (each step printed before it runs):

1. ``python -m venv .venv`` where ``.venv`` has no working pip (a half-made one, left by a failed venv, is made
   again; when venv fails, the half-made folder is removed and the message says what to install). The launcher's
   Python makes it, so that Python must be 3.11 to 3.14; another is refused before anything is made. Where
   ``.venv`` has a working pip it is kept, whatever Python runs the launcher.
2. ``.venv``'s pip installs the checkout with its extras, every version from ``requirements.lock``. On Linux,
   PyPI's torch is the CUDA build (about 4.5 GB more), so ``--torch cpu`` (the default) asks for ``torch==X+cpu``
   from PyTorch's CPU index. The index is probed first (10 s at most: pip would retry an unreachable index for
   every package it looks up); where it is out of reach, pip looks for ``torch==X+cpu`` in the indexes and
   find-links of its own configuration and stops with an error that lists the remedies, never falling back to
   the CUDA build. On macOS and Windows PyPI's torch is the CPU build already (MPS on Apple silicon).
3. A stamp in ``.venv`` (``.installed-lab`` for ``lab``, ``.installed`` for ``dev``, ``.installed-NAME`` for
   ``dev,NAME``) records the install; while it is newer than ``pyproject.toml`` and the lock, step 2 is skipped.
   A stale stamp (after a ``git pull`` that changed the lock) runs step 2 again, with ``.venv``'s python.
4. ``lab``: ``.venv``'s python runs ``tools/reader_lab.py`` (127.0.0.1, a token, the reader's copy).

The environment variables TORCH and TORCH_INDEX are read as the defaults of ``--torch`` and ``--torch-index``, as
`make setup TORCH=cuda` has them. tests/test_start.py checks the plans for linux, darwin and win32.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

ROOT = Path(__file__).resolve().parents[1]
LOCK = "requirements.lock"
VENV = ".venv"
NEEDS = (3, 11)  # requires-python of pyproject.toml (tests/test_start.py checks they agree)
NEWEST = (3, 14)  # the newest Python that the lock's torch (2.13) has wheels for
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PLATFORMS = ("linux", "darwin", "win32")
LAUNCHERS = {"linux": "python3", "darwin": "python3", "win32": "py"}  # how a reader starts Python on each platform


def platform_of(name: str = sys.platform) -> str:
    """``linux``, ``darwin`` or ``win32`` (sys.platform's names; ``cygwin`` counts as win32, other Unixes as linux)."""
    if name.startswith(("win", "cygwin", "msys")):
        return "win32"
    return "darwin" if name == "darwin" else "linux"


def venv_python(root: Path, platform: str) -> Path:
    """The python of ``root/.venv``: ``Scripts\\python.exe`` on Windows, ``bin/python`` elsewhere."""
    return root / VENV / "Scripts" / "python.exe" if platform == "win32" else root / VENV / "bin" / "python"


def locked_torch(root: Path) -> str:
    """The torch version that requirements.lock pins (``2.13.0``)."""
    match = re.search(r"^torch==([^\s;]+)", (root / LOCK).read_text(encoding="utf-8"), re.MULTILINE)
    if match is None:
        raise SystemExit(f"error: {LOCK} pins no torch (a line torch==VERSION was expected); run `make lock`")
    return match[1]


def stamp_name(extras: list[str]) -> str:
    """The stamp of an install: ``lab`` -> ``.installed-lab``, ``dev`` -> ``.installed``, ``dev,NAME`` ->
    ``.installed-NAME`` (the names the Makefile's targets depend on)."""
    others = [extra for extra in extras if extra != "dev"]
    if "dev" in extras:
        return ".installed" + "".join(f"-{extra}" for extra in others)
    return ".installed-" + "-".join(others)


def is_fresh(root: Path, extras: list[str]) -> bool:
    """Whether the install of ``extras`` is recorded and newer than pyproject.toml and the lock. ``lab`` is also
    satisfied by ``dev``, which contains it; an extra beyond ``dev`` must also be newer than ``dev``'s stamp."""
    sources = [root / "pyproject.toml", root / LOCK]
    if extras != ["dev"] and "dev" in extras:
        sources.append(root / VENV / stamp_name(["dev"]))
    newest = max((path.stat().st_mtime for path in sources if path.exists()), default=0.0)
    names = [stamp_name(extras)] + ([stamp_name(["dev"])] if extras == ["lab"] else [])
    return any((root / VENV / name).exists() and (root / VENV / name).stat().st_mtime >= newest for name in names)


@dataclass
class Plan:
    """The commands of a set-up, as lists of arguments, and what to tell the reader if pip fails."""

    platform: str
    make_venv: list[str] | None
    pip: list[str]
    cpu_torch: str | None  # "2.13.0+cpu" where the CPU build is asked for
    torch_index: str | None  # the CPU index added to pip's command (None: not used, or out of reach)
    notes: list[str] = field(default_factory=list)


def plan(root: Path, platform: str, extras: list[str], torch: str = "cpu", torch_index: str = TORCH_INDEX,
         index_reachable: bool = True, has_venv: bool = False, python: str | None = None) -> Plan:
    """What a set-up of ``extras`` on ``platform`` runs; nothing is run here."""
    if platform not in PLATFORMS:
        raise ValueError(f"platform={platform!r}: expected one of {', '.join(PLATFORMS)}")
    if torch not in ("cpu", "cuda"):
        raise ValueError(f"torch={torch!r}: expected 'cpu' (PyTorch's CPU build) or 'cuda' (PyPI's build)")
    target = venv_python(root, platform)
    cpu_torch = f"{locked_torch(root)}+cpu" if platform == "linux" and torch == "cpu" else None
    index = torch_index if cpu_torch and index_reachable else None
    pip = [str(target), "-m", "pip", "install", *(["--extra-index-url", index] if index else []),
           "--constraint", LOCK, "--editable", f".[{','.join(extras)}]",
           *([f"torch=={cpu_torch}"] if cpu_torch else [])]
    notes = []
    if cpu_torch and not index_reachable:
        notes.append(f"{torch_index} is unreachable: looking for torch {cpu_torch} in pip's own indexes and find-links")
    make_venv = None if has_venv else [python or sys.executable, "-m", "venv", VENV]
    return Plan(platform, make_venv, pip, cpu_torch, index, notes)


def remedies(plan_: Plan, torch_index: str) -> list[str]:
    """What the error says after a failed pip install."""
    lines = [f"error: pip could not install mha-notebooks[{plan_.pip[plan_.pip.index('--editable') + 1][2:-1]}] "
             "(see above)."]
    if plan_.cpu_torch and plan_.torch_index is None:
        lines += [f"       {torch_index} was out of reach, and PyPI and its mirrors have no torch {plan_.cpu_torch}.",
                  "       Any one of these installs it:",
                  "         python3 -m tools.start setup --torch-index URL   (make setup TORCH_INDEX=URL)",
                  "           URL: a mirror of PyTorch's CPU index (a simple index with /torch/)",
                  "         PIP_FIND_LINKS=DIR python3 -m tools.start setup  (PIP_FIND_LINKS=DIR make setup)",
                  f"           DIR: a folder or web page holding torch-{plan_.cpu_torch}-*.whl",
                  "         python3 -m tools.start setup --torch cuda        (make setup TORCH=cuda)",
                  "           PyPI's CUDA build instead (about 4.5 GB more)",
                  '       See "Behind a firewall" in docs/platforms.md (docs/platforms.zh-CN.md: 国内网络).']
    elif plan_.cpu_torch:
        lines.append("       For PyPI's CUDA build instead: python3 -m tools.start setup --torch cuda "
                     "(make setup TORCH=cuda)")
    return lines


def another_python(platform: str) -> str:
    """The lines of an error that say how to run the launcher with a Python from 3.11 to 3.14 on ``platform``, and
    how to install one there."""
    low, high = f"{NEEDS[0]}.{NEEDS[1]}", f"{NEWEST[0]}.{NEWEST[1]}"
    if platform == "win32":
        pythons, run = f"Python {low} to {high}", "py -3.12 -m tools.start (py --list shows the Pythons installed)"
        install = "winget install Python.Python.3.12, or the installer from https://www.python.org/downloads/"
    else:
        version = "3.12" if platform == "darwin" else "3.11"
        pythons = f"python{low} to python{high}"
        run = f"python{version} -m tools.start (make lab PYTHON=python{version})"
        install = ("brew install python@3.12, or the installer from https://www.python.org/downloads/"
                   if platform == "darwin" else "sudo apt install python3.11 python3.11-venv (Debian, Ubuntu)")
    return f"       Run this with one of {pythons}, for example: {run}\n       None installed? {install}"


def too_old(version: tuple[int, ...], platform: str) -> str | None:
    """The error for a Python older than the collection needs, or None."""
    if tuple(version[:2]) >= NEEDS:
        return None
    have = ".".join(map(str, version[:3]))
    return (f"error: mha-notebooks needs Python {NEEDS[0]}.{NEEDS[1]} or newer; this is Python {have}.\n"
            f"{another_python(platform)}")


def too_new(version: tuple[int, ...], platform: str) -> str | None:
    """The error for a Python too new to make ``.venv`` with (PyTorch has no wheels for it yet), or None."""
    if tuple(version[:2]) <= NEWEST:
        return None
    have = ".".join(map(str, version[:3]))
    return (f"error: making {VENV} needs Python {NEEDS[0]}.{NEEDS[1]} to {NEWEST[0]}.{NEWEST[1]} (the torch of {LOCK} "
            f"has no wheels for a newer one); this is Python {have}.\n"
            f"{another_python(platform)}")


def refusal(version: tuple[int, ...], platform: str, makes_venv: bool) -> str | None:
    """Why a set-up with this Python stops before it starts, or None. A Python too old or too new is refused only
    where it would make ``.venv``: an existing ``.venv`` keeps the Python it was made with, and that python runs
    the install (after a ``git pull`` made the stamp stale, say) and JupyterLab."""
    if not makes_venv:
        return None
    return too_old(version, platform) or too_new(version, platform)


def reachable(url: str, timeout: float = 10) -> bool:
    try:
        urllib.request.urlopen(f"{url.rstrip('/')}/torch/", timeout=timeout)
    except (OSError, ValueError):
        return False
    return True


def has_pip(python: Path) -> bool:
    if not python.exists():
        return False
    return subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True).returncode == 0


def say(text: str) -> None:
    print(f"==> {text}", flush=True)


def show(command: list[str], root: Path = ROOT, platform: str | None = None) -> str:
    """A command as one line to type on ``platform`` (this machine's by default), with the checkout's paths relative
    to it: on win32 with backslashes and in double quotes (PowerShell and cmd), elsewhere in single quotes."""
    platform = platform or platform_of()
    flavour, quote = (PureWindowsPath, '"') if platform == "win32" else (PurePosixPath, "'")
    parts = [str(flavour(*Path(part).relative_to(root).parts)) if part.startswith(str(root) + os.sep) else part
             for part in command]
    return " ".join(f"{quote}{part}{quote}" if re.search(r"[\s\[\]]", part) else part for part in parts)


def setup(root: Path, extras: list[str], torch: str, torch_index: str) -> int:
    """Make .venv and install ``extras`` where the stamp is not fresh; 0 on success."""
    platform = platform_of()
    if is_fresh(root, extras):  # set up already: this Python only starts the launcher, .venv's runs the rest
        return 0
    has_venv = has_pip(venv_python(root, platform))
    message = refusal(sys.version_info, platform, makes_venv=not has_venv)
    if message:
        print(message, file=sys.stderr)
        return 1
    cpu = platform == "linux" and torch == "cpu"
    steps = plan(root, platform, extras, torch, torch_index, index_reachable=not cpu or reachable(torch_index),
                 has_venv=has_venv)
    if steps.make_venv:
        if (root / VENV).exists():
            shutil.rmtree(root / VENV)  # no working pip in it: a half-made .venv
        say(f"Creating the virtual environment {VENV} with Python {'.'.join(map(str, sys.version_info[:3]))}")
        if subprocess.run(steps.make_venv, cwd=root).returncode != 0:
            shutil.rmtree(root / VENV, ignore_errors=True)
            print(f"error: '{show(steps.make_venv, root)}' failed, so the half-made {VENV} was removed.",
                  file=sys.stderr)
            if platform == "linux":
                print("       On Debian or Ubuntu install the venv module first: sudo apt install python3-venv\n"
                      "       (or python3.X-venv for your Python 3.X), then run this again.", file=sys.stderr)
            return 1
    for note in steps.notes:
        say(note)
    torch_note = f" (torch {steps.cpu_torch})" if steps.cpu_torch else ""
    say(f"Installing mha-notebooks[{','.join(extras)}] and its dependencies at the versions of {LOCK}{torch_note}")
    print(f"+ {show(steps.pip, root)}", flush=True)
    if subprocess.run(steps.pip, cwd=root).returncode != 0:
        print("\n".join(remedies(steps, torch_index)), file=sys.stderr)
        return 1
    (root / VENV / stamp_name(extras)).touch()
    return 0


def planned(root: Path, platform: str, extras: list[str], torch: str, torch_index: str) -> list[str]:
    """The lines ``plan`` prints: the commands a set-up would run now, and nothing is run. On this machine's platform
    they follow ``.venv`` as ``setup`` does (nothing where the stamp is fresh, no venv step where it has a pip, a
    refusal where this Python cannot make it); for another platform they are those of a fresh checkout, as typed
    there (``py -m venv .venv`` and ``.venv\\Scripts\\python.exe`` on win32)."""
    here = platform == platform_of()
    if here and is_fresh(root, extras):
        return [f"# {VENV} has mha-notebooks[{','.join(extras)}] (its stamp is newer than pyproject.toml and {LOCK}): "
                "nothing to install"]
    has_venv = here and has_pip(venv_python(root, platform))
    message = refusal(sys.version_info, platform, makes_venv=not has_venv) if here else None
    if message:
        return [f"# {line}" for line in message.splitlines()]
    steps = plan(root, platform, extras, torch, torch_index, has_venv=has_venv,
                 python=None if here else LAUNCHERS[platform])
    lines = [show(command, root, platform) for command in (steps.make_venv, steps.pip) if command]
    if steps.cpu_torch:
        lines.append(f"# first: is {torch_index}/torch/ reachable (10 s)? If not, --extra-index-url is left out")
    return lines


def extras_list(text: str) -> list[str]:
    extras = [extra.strip() for extra in text.split(",") if extra.strip()]
    if not extras or any(not re.fullmatch(r"[a-z][a-z0-9-]*", extra) for extra in extras):
        raise argparse.ArgumentTypeError(f"--extras {text!r}: expected extras of pyproject.toml, comma-separated "
                                         "(lab, dev, dev,browser)")
    return extras


def main(argv: list[str] | None = None) -> int:
    summary, examples = __doc__.split("\n\n")[:2]  # the first line, and the examples under it
    parser = argparse.ArgumentParser(prog="python3 -m tools.start", description=summary,
                                     epilog=f"examples (on Windows: py -m tools.start):\n{examples}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=["lab", "setup", "plan"], default="lab",
                        help="lab (the default): set up if needed, then open JupyterLab; setup: set up only; "
                             "plan: print the commands, run none")
    parser.add_argument("--extras", type=extras_list, default=["lab"],
                        help="extras of pyproject.toml to install: lab (readers, the default), dev (maintainers)")
    parser.add_argument("--torch", default=os.environ.get("TORCH") or "cpu", choices=["cpu", "cuda"],
                        help="on Linux: cpu (PyTorch's CPU build, the default) or cuda (PyPI's build)")
    parser.add_argument("--torch-index", default=os.environ.get("TORCH_INDEX") or TORCH_INDEX,
                        help="PyTorch's CPU index or a mirror of it")
    parser.add_argument("--edition", choices=["en", "zh_CN"], default="en", help="lab: the reader edition to open")
    parser.add_argument("--port", type=int, default=8888, help="lab: the port (1-65535)")
    parser.add_argument("--platform", choices=PLATFORMS, default=None, help="plan: for this platform")
    args = parser.parse_args(argv)
    if args.platform and args.action != "plan":
        parser.error("--platform is for `plan` only: a set-up runs on this machine's platform")
    if not 1 <= args.port <= 65535:
        parser.error(f"--port {args.port}: a port is a number from 1 to 65535")

    if args.action == "plan":
        print("\n".join(planned(ROOT, args.platform or platform_of(), args.extras, args.torch, args.torch_index)))
        return 0
    code = setup(ROOT, args.extras, args.torch, args.torch_index)
    if code or args.action == "setup":
        return code
    python = venv_python(ROOT, platform_of())
    lab = [str(python), "-m", "tools.reader_lab", "--port", str(args.port),
           *(["--edition", args.edition] if args.edition != "en" else [])]
    os.chdir(ROOT)
    return hand_over(lab)


# Linux and macOS: a command can take this process's place (exec); Windows has no such call.
REPLACES_ITSELF = os.name == "posix"


def hand_over(command: list[str], env: Mapping[str, str] | None = None) -> int:
    """Run ``command`` (JupyterLab, or the launcher's next step) in this process's place; its exit code.

    Where the command can take the process over, it does: Ctrl+C and make see it alone. On Windows it runs as a
    child, and Ctrl+C in the console reaches both: the child acts on it (JupyterLab stops, or asks to confirm)
    while this process goes on waiting for it, instead of killing it and ending in a KeyboardInterrupt traceback.
    """
    environment = dict(os.environ if env is None else env)
    if REPLACES_ITSELF:
        os.execve(command[0], command, environment)
    with subprocess.Popen(command, env=environment) as child:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue


if __name__ == "__main__":
    sys.exit(main())
