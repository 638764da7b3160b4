"""JupyterLab as a reader gets it (`make lab`, `make lab-zh`): the reader's own copy of the chapters, no nbgrader.

    python -m tools.reader_lab [--edition zh_CN] [--port 8888]

First the reader's copy is brought up to date (``tools/workcopy.py``: made on first use, new chapters added,
nothing of the reader's overwritten). Then JupyterLab starts in that copy, on 127.0.0.1, at chapter 00, with

- the defaults of ``.jupyter/lab/settings`` (``settings-zh``: JupyterLab in Chinese) as its app settings, so a
  reader's own settings in ``~/.jupyter`` still win;
- the configuration folder ``.jupyter/reader`` in front of ``JUPYTER_CONFIG_PATH``. It turns nbgrader's server
  extensions and its JupyterLab extension off: no Nbgrader menu, no Validate button (it reported "Success!" for
  an unsolved chapter), no Create Assignment panel, no formgrader, and no formgrader error at start. Jupyter
  reads the folder only when it is named there; nothing is written into the reader's ``~/.jupyter``.

nbgrader stays installed for lecturers, whose JupyterLab (`make lab-instructor`) opens ``notebooks/`` with it.
The real-browser test (``tests/browser/conftest.py``) starts its JupyterLab with ``environment()`` and
``arguments()`` as well, so it checks the page a reader gets.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

try:
    from tools.start import hand_over
    from tools.workcopy import EDITIONS, ROOT, bring_up_to_date, say
except ModuleNotFoundError:  # run as a script: python tools/reader_lab.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tools.start import hand_over
    from tools.workcopy import EDITIONS, ROOT, bring_up_to_date, say

READER_CONFIG = ROOT / ".jupyter" / "reader"  # jupyter_server_config.json and labconfig/page_config.json
SETTINGS = {"en": ROOT / ".jupyter" / "lab" / "settings", "zh_CN": ROOT / ".jupyter" / "lab" / "settings-zh"}
START = "00_start_here.ipynb"


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``.jupyter/reader`` first on ``JUPYTER_CONFIG_PATH`` (a path the reader set stays after it)."""
    paths = [str(READER_CONFIG), *filter(None, base.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    return {**base, "JUPYTER_CONFIG_PATH": os.pathsep.join(paths)}


def arguments(edition: str) -> list[str]:
    """JupyterLab's options for a reader of ``edition`` (``en`` or ``zh_CN``): where it opens, which settings."""
    if edition not in SETTINGS:
        raise ValueError(f"edition={edition!r}: the reader editions are {', '.join(SETTINGS)}")
    return [f"--LabApp.default_url=/lab/tree/{START}", f"--LabApp.app_settings_dir={SETTINGS[edition]}"]


def command(edition: str, port: int) -> list[str]:
    """The whole command line of `make lab` (``en``) or `make lab-zh` (``zh_CN``)."""
    if not 1 <= port <= 65535:
        raise ValueError(f"PORT={port}: a port is a number from 1 to 65535")
    running_as_root = hasattr(os, "geteuid") and os.geteuid() == 0  # containers and CI machines often are
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={EDITIONS[edition].copy}",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", *arguments(edition),
            *(["--allow-root"] if running_as_root else [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edition", choices=sorted(SETTINGS), default="en")
    parser.add_argument("--port", type=int, default=8888, help="PORT of `make lab PORT=8899`")
    args = parser.parse_args(argv)
    try:
        lab = command(args.edition, args.port)
    except ValueError as error:
        parser.error(str(error))

    edition = EDITIONS[args.edition]
    bring_up_to_date(edition)
    print(say(edition, "lab"), flush=True)

    return hand_over(lab, environment(os.environ))  # JupyterLab in this process's place, or waited for (Windows)


if __name__ == "__main__":
    sys.exit(main())
