"""A real JupyterLab server and a headless Chromium for the real-browser tests (``make test-browser``).

The server runs from this project's ``.venv`` (so its kernel has ``mha_lib``), listens on 127.0.0.1 on a
free port, and accepts only requests that carry a fresh random token. It starts as `make lab` and `make lab-zh`
start it (``tools/reader_lab.py``: the configuration that turns nbgrader off, the app settings, chapter 00), and
serves a temporary copy of ``chapters/`` made as the reader's ``my-chapters/`` is made (``tools/workcopy.py``),
with its own user settings and runtime folders, so a run never writes into the checkout or reads a user's
JupyterLab settings. The browser is Debian's ``chromium`` driven by Playwright; no browser is downloaded.
Server, kernels and browser are stopped even when a test fails.

Environment variables:
    CHROMIUM           path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
    MHA_NOTEBOOKS_DIR  serve the notebooks of this folder instead of ``chapters/`` (to try the test on a
                       scratch notebook, or on the solved edition ``notebooks/``)
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from chromium_fixtures import browser, chromium_executable  # noqa: F401 - fixtures, shared with tests/book
from lab_helpers import LabServer, http_status

from tools import reader_lab, workcopy

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
SCREENSHOTS = ROOT / "build" / "screenshots"
SERVER_START_TIMEOUT = 90  # seconds for JupyterLab to answer /api/status (2 slow cores, cold caches)

# Settings a reader would not change, fixed so the test sees a predictable page: every cell stays in the
# page (no virtual scrolling), nothing is saved back, and no news or update pop-up covers the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status_or_none(url: str) -> int | None:
    try:
        return http_status(url)
    except OSError:  # not listening yet
        return None


def _descendants(pid: int) -> list[int]:
    """The process ids started by ``pid`` (kernels are started in their own sessions, so not in its group)."""
    try:
        import psutil  # ipykernel depends on it
    except ImportError:  # pragma: no cover
        return []
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _stop(process: subprocess.Popen, url: str, token: str) -> None:
    """Ask the server to shut down (it stops its kernels), then make sure nothing it started is left."""
    if process.poll() is not None:
        return
    children = _descendants(process.pid)
    request = urllib.request.Request(f"{url}api/shutdown", method="POST",
                                     headers={"Authorization": f"token {token}"})
    try:
        urllib.request.urlopen(request, timeout=10).close()
        process.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        _terminate(process, timeout=15)
    _kill(children)


def _terminate(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM, then SIGKILL if ``process`` has not ended after ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


def _kill(pids: list[int]) -> None:
    """SIGKILL every process left of ``pids`` (kernels and servers run in sessions of their own)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def running_lab(tmp_path_factory: pytest.TempPathFactory, source: Path, edition: str = "en",
                settings: dict[str, dict] = LAB_SETTINGS) -> Iterator[LabServer]:
    """JupyterLab from .venv as a reader of ``edition`` gets it, on 127.0.0.1, a free port and a random token,
    serving a copy of ``source``."""
    jupyter = VENV_BIN / "jupyter"
    if not jupyter.exists():
        pytest.fail(f"{jupyter} is missing: run `make setup` first")
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    workcopy.update(source, root)
    settings_dir = home / "user-settings"
    for name, values in settings.items():
        (settings_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (settings_dir / name).write_text(json.dumps(values))

    port, token = _free_port(), secrets.token_hex(24)
    env = reader_lab.environment({  # .jupyter/reader first on JUPYTER_CONFIG_PATH, as for `make lab`
        **os.environ,
        # Nothing from the user's own Jupyter and IPython set-up, nothing written there.
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    command = [
        str(jupyter), "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", "--PasswordIdentityProvider.hashed_password=",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings_dir}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp.restored: the page is ready for keys
        *reader_lab.arguments(edition),  # chapter 00 and the settings of `make lab` / `make lab-zh`
    ]
    if os.geteuid() == 0:  # CI machines and containers run as root
        command.append("--allow-root")
    log = (home / "server.log").open("w")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    atexit.register(_stop, process, url, token)  # also when the run is interrupted
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)  # `timeout` sends TERM: clean up first
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while _status_or_none(f"{url}api/status?token={token}") != 200:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n{(home / 'server.log').read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer in {SERVER_START_TIMEOUT} s:\n"
                            f"{(home / 'server.log').read_text()}")
            time.sleep(0.25)  # polling the server's own readiness, not waiting for the page
        yield LabServer(url=url, token=token, root=root, pid=process.pid, log=home / "server.log")
    finally:
        _stop(process, url, token)
        log.close()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The reader edition (or MHA_NOTEBOOKS_DIR) in an English JupyterLab."""
    with running_lab(tmp_path_factory, Path(os.environ.get("MHA_NOTEBOOKS_DIR", ROOT / "chapters"))) as server:
        yield server


@pytest.fixture(scope="session")
def lab_server_zh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The Chinese reader edition in a Chinese JupyterLab (the language pack, as `make lab-zh` opens it)."""
    with running_lab(tmp_path_factory, ROOT / "zh-CN" / "chapters", "zh_CN") as server:
        yield server


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
