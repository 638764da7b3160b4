"""The trial JupyterHub of hub/jupyterhub_config.py, started for the course loop test (``make test-hub``).

The hub runs from this project's ``.venv`` with the committed configuration, on 127.0.0.1 and a free port, with a
state folder of its own (users' homes, exchange, course, hub database) in a temporary directory. The users' servers
and the formgrader run in another environment, as in the course's image: a venv outside the checkout where the
project is installed from its wheel, not editable (tests/wheel_env.py). The course is chapter 08 only, written by
tools/nbgrader_course.py as `make assignments` writes every chapter. Run as root (as CI runs), the test creates the
system accounts that hub/start.py would (instructor, student1..3), and removes those it created at the end. The
passwords are random, made here and known to this test only. Hub, proxy, formgrader, users' servers and kernels are
stopped even when a test fails. Chromium is Debian's, driven by Playwright (never downloaded), as in tests/browser.

Environment variables:
    CHROMIUM  path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "hub"))
from start import USERS, ensure_accounts  # noqa: E402
from wheel_env import make_wheel_venv, python_for_everyone  # noqa: E402

VENV_BIN = ROOT / ".venv" / "bin"
ACCOUNTS = os.geteuid() == 0  # as in hub/jupyterhub_config.py: each user's server runs as that user's account
HUB_CONFIG = ROOT / "hub" / "jupyterhub_config.py"
CHAPTER = ROOT / "notebooks" / "08_pitfalls.ipynb"
START_TIMEOUT = 120  # seconds for the hub, or a user's server, to answer (2 slow cores, cold caches)
REQUEST_TIMEOUT = 300  # one REST call; autograding one submission runs the whole chapter


# Debian's Chromium, the screenshots folder and the clean-up helpers of the real-browser tests (tests/browser)
def _browser_conftest():
    sys.path.insert(0, str(ROOT / "tests" / "browser"))  # its lab_helpers, which test_course_loop.py uses too
    spec = importlib.util.spec_from_file_location("browser_conftest", ROOT / "tests" / "browser" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_browser = _browser_conftest()
chromium_executable, screenshots = _browser.chromium_executable, _browser.screenshots


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect to the login page stays a 302


_NO_REDIRECTS = urllib.request.build_opener(_KeepRedirects)


@dataclass
class Hub:
    """A running trial hub, and the REST calls of its users (each with a token of their own)."""

    url: str  # http://127.0.0.1:PORT/
    state: Path
    users_env: Path  # the environment the users' servers and the formgrader run in
    passwords: dict[str, str]  # user name -> password
    process: subprocess.Popen
    tokens: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, user: str | None = None, body: dict | None = None):
        """One request to the hub or through its proxy as ``user`` (with that user's token); returns (status, JSON)."""
        headers = {"Content-Type": "application/json"}
        if user is not None:
            headers["Authorization"] = f"token {self.token(user)}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path.lstrip("/"), data=data, method=method, headers=headers)
        try:
            with _NO_REDIRECTS.open(request, timeout=REQUEST_TIMEOUT) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, None

    def ok(self, method: str, path: str, user: str | None = None, body: dict | None = None):
        status, answer = self.call(method, path, user, body)
        assert status in (200, 201), f"{method} {path} as {user}: HTTP {status}\n{self.log()}"
        return answer

    def token(self, user: str) -> str:
        """An API token of ``user``, asked for with the user's name and password (JupyterHub's token API)."""
        if user not in self.tokens:
            auth = {"auth": {"username": user, "password": self.passwords[user]}}
            status, answer = self.call("POST", f"hub/api/users/{user}/tokens", body=auth)
            assert status == 201, f"no token for {user}: HTTP {status}"
            self.tokens[user] = answer["token"]
        return self.tokens[user]

    def start_server(self, user: str) -> None:
        """Start the user's JupyterLab through the hub's REST API and wait until the hub says it is ready."""
        status, _ = self.call("POST", f"hub/api/users/{user}/server", user)
        # 400: already running
        assert status in (201, 202, 400), f"starting {user}'s server: HTTP {status}\n{self.log()}"
        deadline = time.monotonic() + START_TIMEOUT
        while not (self.ok("GET", f"hub/api/users/{user}", user)["servers"].get("") or {}).get("ready"):
            assert time.monotonic() < deadline, f"{user}'s server did not start in {START_TIMEOUT} s\n{self.log()}"
            time.sleep(0.5)  # polling the hub's own record of the server, not waiting blindly

    def log(self) -> str:
        return (self.state / "hub.log").read_text()[-6000:]


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM lets JupyterHub stop what it started (servers, formgrader, proxy); leftovers are killed."""
    if process.poll() is not None:
        return
    children = _browser._descendants(process.pid)  # kernels and servers run in sessions of their own
    _browser._terminate(process, timeout=60)
    _browser._kill(children)


@pytest.fixture(scope="session")
def accounts() -> Iterator[list[str]]:
    """The hub users' system accounts (root only), created as hub/start.py creates them; removed if made here."""
    if not ACCOUNTS:
        yield []
        return
    created = ensure_accounts(USERS)
    try:
        yield USERS
    finally:
        for name in created:
            subprocess.run(["userdel", name], check=False)


@pytest.fixture(scope="session")
def base() -> Iterator[Path]:
    """A temporary folder the users' accounts can enter (pytest's own is root's only); removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="mha-hub-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def hub(base: Path, accounts: list[str]) -> Iterator[Hub]:
    jupyterhub = VENV_BIN / "jupyterhub"
    if not jupyterhub.exists():
        pytest.fail(f"{jupyterhub} is missing: `make test-hub` installs the hub extra")
    if not (ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        pytest.fail("configurable-http-proxy is missing: `make test-hub` runs npm ci in hub/ (needs Node.js 20)")
    sys.path.insert(0, str(ROOT))
    from tools.nbgrader_course import nbgrader, write_course

    image = base / "image"
    image.mkdir()
    users_env = make_wheel_venv(image, python_for_everyone() if ACCOUNTS else None)  # as the course's image has it
    state = base / "hub"
    course = state / "course"
    assert write_course(course, [CHAPTER]) == ["ch08"]
    nbgrader(course, "generate_assignment", "ch08", "--force")
    for folder in ("home", "exchange"):
        (state / folder).mkdir()

    passwords = {"instructor": secrets.token_urlsafe(32),
                 **dict.fromkeys(["student1", "student2", "student3"], secrets.token_urlsafe(12))}
    port = _browser._free_port()
    env = {**os.environ, "MHA_HUB_DIR": str(state), "MHA_HUB_PORT": str(port),
           "MHA_HUB_INSTRUCTOR_PASSWORD": passwords["instructor"], "MHA_HUB_STUDENT_PASSWORD": passwords["student1"],
           "MHA_HUB_USERS_ENV": str(users_env)}
    log = (state / "hub.log").open("w")
    process = subprocess.Popen([str(jupyterhub), "--config", str(HUB_CONFIG)], cwd=state, env=env,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    atexit.register(_stop, process)  # also when the run is interrupted
    previous = signal.signal(signal.SIGTERM, _browser._raise_keyboard_interrupt)  # `timeout` sends TERM: clean up first
    hub = Hub(url=f"http://127.0.0.1:{port}/", state=state, users_env=users_env, passwords=passwords, process=process)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (_listening(port) and hub.call("GET", "hub/api/")[0] == 200):
            if process.poll() is not None:
                pytest.fail(f"JupyterHub exited with {process.returncode}:\n{hub.log()}")
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterHub did not answer in {START_TIMEOUT} s:\n{hub.log()}")
            time.sleep(0.25)
        yield hub
    finally:
        _stop(process)
        log.close()
        signal.signal(signal.SIGTERM, previous)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
