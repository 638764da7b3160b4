"""JupyterHub for a trial course of mha-notebooks on one machine: `make hub` starts it, `make test-hub` tests it.

What runs (all of it JupyterHub's and nbgrader's own machinery, configured here):
- the hub and its proxy (npm's configurable-http-proxy, locked in hub/package-lock.json), on 127.0.0.1 only;
- one JupyterLab per user (jupyterhub-singleuser from this project's .venv, where mha_lib is installed), started
  by SimpleLocalProcessSpawner as the hub's own system user, with its home in $MHA_HUB_DIR/home/<name>. It
  creates no system users and isolates nobody: good for a trial on your own machine, never for real students
  (see docs/teaching.md, "A course on JupyterHub");
- nbgrader's formgrader as a hub service, /services/mha-notebooks/formgrader/, open to the instructor only, on
  the course $MHA_HUB_DIR/course that `make assignments` writes;
- nbgrader's file-system exchange in $MHA_HUB_DIR/exchange, shared by every server on this machine.

Accounts: JupyterHub's SharedPasswordAuthenticator. The instructor signs in with MHA_HUB_INSTRUCTOR_PASSWORD
(at least 32 characters), every student with MHA_HUB_STUDENT_PASSWORD (at least 8): a student who knows it can
sign in as any other student. There is no default: hub/start.py (`make hub`) generates both and prints them
once, and the course loop test (tests/hub/) makes its own. Nobody else can sign in (allowed_users).

Environment: MHA_HUB_DIR (the state folder, default build/hub), MHA_HUB_PORT (default 8000), the two passwords.
"""

import os
import socket
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - JupyterHub's config loader defines it

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STATE = Path(os.environ.get("MHA_HUB_DIR", ROOT / "build" / "hub")).resolve()
VENV_BIN = Path(sys.executable).parent  # the hub runs from the project's .venv; so do the users' servers
COURSE_ID = "mha-notebooks"  # the course id that tools/nbgrader_course.py writes into the course's config
INSTRUCTOR = "instructor"
STUDENTS = ["student1", "student2", "student3"]


def required(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        sys.exit(f"error: {name} is not set; `make hub` generates the passwords (hub/start.py)")
    return value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the hub and its proxy: 127.0.0.1 only ------------------------------------------------------------------------
c.JupyterHub.bind_url = f"http://127.0.0.1:{int(os.environ.get('MHA_HUB_PORT', '8000'))}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = free_port()  # the hub's internal API; free ports let a test run beside `make hub`
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# --- who signs in -------------------------------------------------------------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.admin_password = required("MHA_HUB_INSTRUCTOR_PASSWORD")
c.SharedPasswordAuthenticator.user_password = required("MHA_HUB_STUDENT_PASSWORD")
c.Authenticator.admin_users = {INSTRUCTOR}
c.Authenticator.allowed_users = {INSTRUCTOR, *STUDENTS}

# --- each user's JupyterLab ---------------------------------------------------------------------------------------
EXCHANGE = STATE / "exchange"
c.JupyterHub.spawner_class = "simple"  # jupyterhub.spawner.SimpleLocalProcessSpawner: a trial on one machine
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {
    # nbgrader_config.py (exchange, course, the student's name) and the server settings of a student's Lab
    "JUPYTER_CONFIG_PATH": str(HERE / "jupyter" / "student"),
    "MHA_HUB_EXCHANGE": str(EXCHANGE),
    "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
}
c.Spawner.start_timeout = 120  # a cold JupyterLab on two busy cores
c.Spawner.http_timeout = 120
if os.geteuid() == 0:  # containers and CI machines run as root; so does every server SimpleLocalProcessSpawner starts
    c.Spawner.args = ["--allow-root"]

# --- the formgrader, a hub service that only the instructor may open ----------------------------------------------
# As in nbgrader's "Using nbgrader with JupyterHub" (one class, several graders): jupyterhub-singleuser started by
# the hub in the course folder, whose nbgrader_config.py names the course; its formgrader releases, collects and
# autogrades through the same exchange, and its gradebook is $MHA_HUB_DIR/course/gradebook.db.
COURSE = STATE / "course"
c.JupyterHub.services = [{
    "name": COURSE_ID,
    "url": f"http://127.0.0.1:{free_port()}",
    "command": [str(VENV_BIN / "jupyterhub-singleuser"), *(["--allow-root"] if os.geteuid() == 0 else [])],
    "cwd": str(COURSE),
    "environment": {
        "JUPYTERHUB_DEFAULT_URL": "/formgrader",
        "JUPYTER_CONFIG_PATH": str(HERE / "jupyter" / "formgrader"),
        "MHA_HUB_EXCHANGE": str(EXCHANGE),
        "HOME": str(STATE / "home" / f"grader-{COURSE_ID}"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    },
    "oauth_no_confirm": True,
}]
c.JupyterHub.load_groups = {f"formgrade-{COURSE_ID}": {"users": [INSTRUCTOR]}}
c.JupyterHub.load_roles = [{
    "name": f"formgrade-{COURSE_ID}",
    "groups": [f"formgrade-{COURSE_ID}"],
    "scopes": [f"access:services!service={COURSE_ID}"],
}]
