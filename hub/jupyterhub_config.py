"""JupyterHub for a trial course of mha-notebooks on one machine: `make hub` starts it, `make test-hub` tests it.

What runs (all of it JupyterHub's and nbgrader's own machinery, configured here):
- the hub and its proxy (npm's configurable-http-proxy, locked in hub/package-lock.json), on 127.0.0.1 only;
- one JupyterLab per user (jupyterhub-singleuser from the users' environment, $MHA_HUB_USERS_ENV, by default this
  project's .venv), with its home in $MHA_HUB_DIR/home/<name>. When the hub runs as root, each server runs as the
  system account of its user (instructor, student1, ...; hub/start.py creates missing ones), in a home only that
  account can read: nbgrader's exchange then knows who submitted what (see "Private submissions" below). Without
  root, every server runs as the hub's own system user and nobody is isolated: a trial on your own machine only
  (see docs/teaching.md, "A course on JupyterHub");
- nbgrader's formgrader as a hub service, /services/mha-notebooks/formgrader/, open to the instructor only, on
  the course $MHA_HUB_DIR/course that `make assignments` writes;
- nbgrader's file-system exchange in $MHA_HUB_DIR/exchange, shared by every server on this machine.

Private submissions (root only): nbgrader makes the exchange's inbound folder writable and not listable by
students, so a student cannot list or open another's submission, and each submission is owned by the account that
made it. A student may still put another's name on a submission (nbgrader submit --CourseDirectory.student_id=...):
the formgrader's collect (hub/jupyter/formgrader/nbgrader_config.py) skips every submission whose owner is not the
student it names, where nbgrader's own collect only warns.

Accounts: JupyterHub's SharedPasswordAuthenticator. The instructor signs in with MHA_HUB_INSTRUCTOR_PASSWORD
(at least 32 characters), every student with MHA_HUB_STUDENT_PASSWORD (at least 8): a student who knows it can
sign in as any other student. There is no default: hub/start.py (`make hub`) generates both and prints them
once, and the course loop test (tests/hub/) makes its own. Nobody else can sign in (allowed_users).

Environment: MHA_HUB_DIR (the state folder, default build/hub), MHA_HUB_PORT (default 8000), the two passwords,
MHA_HUB_USERS_ENV (the prefix of the Python environment the users' servers and the formgrader run in; default: the
hub's own, this project's .venv; tests/hub uses a venv with the project's wheel, as in the image).
"""

import os
import pwd
import socket
import sys
from pathlib import Path

from jupyterhub.spawner import SimpleLocalProcessSpawner, set_user_setuid

c = get_config()  # noqa: F821 - JupyterHub's config loader defines it

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STATE = Path(os.environ.get("MHA_HUB_DIR", ROOT / "build" / "hub")).resolve()
VENV_BIN = Path(sys.executable).parent  # the hub runs from the project's .venv
USERS_BIN = Path(os.environ.get("MHA_HUB_USERS_ENV", sys.prefix)).resolve() / "bin"
USERS_PATH = os.pathsep.join([str(USERS_BIN), str(VENV_BIN), os.environ.get("PATH", "")])
COURSE_ID = "mha-notebooks"  # the course id that tools/nbgrader_course.py writes into the course's config
INSTRUCTOR = "instructor"
STUDENTS = ["student1", "student2", "student3"]
USERS = [INSTRUCTOR, *STUDENTS]
ACCOUNTS = os.geteuid() == 0  # root: each user's server runs as that user's system account


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
COURSE = STATE / "course"


class AccountSpawner(SimpleLocalProcessSpawner):
    """SimpleLocalProcessSpawner's homes in the state folder, with LocalProcessSpawner's switch to the user's own
    system account (set_user_setuid) before the server starts."""

    def make_preexec_fn(self, name):
        become = set_user_setuid(name, chdir=False)
        home = self.home_dir

        def preexec():
            become()
            os.chdir(home)

        return preexec


def make_home(spawner) -> None:
    """The user's home, owned by the user's account and closed to everyone else (run by the hub, as root)."""
    try:
        account = pwd.getpwnam(spawner.user.name)
    except KeyError:
        raise RuntimeError(f"no system account {spawner.user.name!r}: hub/start.py (`make hub`) creates it") from None
    home = Path(spawner.home_dir)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(0o700)


c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
if ACCOUNTS:
    c.JupyterHub.spawner_class = AccountSpawner
    c.Spawner.pre_spawn_hook = make_home
    for folder, mode in [(STATE, 0o711), (STATE / "home", 0o711), (EXCHANGE, 0o755), (COURSE, 0o700)]:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(mode)  # students pass through to their home and the exchange, and see nothing else
    (STATE / "jupyterhub.sqlite").touch(mode=0o600)  # the hub's database: root's only (the cookie secret is)
    (STATE / "jupyterhub.sqlite").chmod(0o600)
else:
    c.JupyterHub.spawner_class = "simple"  # one system user for everyone: a trial on one machine, nobody isolated
c.Spawner.cmd = [str(USERS_BIN / "python"), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {
    # nbgrader_config.py (exchange, course, the student's name) and the server settings of a student's Lab
    "JUPYTER_CONFIG_PATH": str(HERE / "jupyter" / "student"),
    "MHA_HUB_EXCHANGE": str(EXCHANGE),
    "PATH": USERS_PATH,
}
c.Spawner.start_timeout = 120  # a cold JupyterLab on two busy cores
c.Spawner.http_timeout = 120

# --- the formgrader, a hub service that only the instructor may open ----------------------------------------------
# As in nbgrader's "Using nbgrader with JupyterHub" (one class, several graders): jupyterhub-singleuser started by
# the hub in the course folder, whose nbgrader_config.py names the course; its formgrader releases, collects and
# autogrades through the same exchange, and its gradebook is $MHA_HUB_DIR/course/gradebook.db.
c.JupyterHub.services = [{
    "name": COURSE_ID,
    "url": f"http://127.0.0.1:{free_port()}",
    "command": [str(USERS_BIN / "python"), "-m", "jupyterhub.singleuser",
                *(["--allow-root"] if os.geteuid() == 0 else [])],  # as the hub's own user, root here
    "cwd": str(COURSE),
    "environment": {
        "JUPYTERHUB_DEFAULT_URL": "/formgrader",
        "JUPYTER_CONFIG_PATH": str(HERE / "jupyter" / "formgrader"),
        "MHA_HUB_EXCHANGE": str(EXCHANGE),
        "HOME": str(STATE / "home" / f"grader-{COURSE_ID}"),
        "PATH": USERS_PATH,
    },
    "oauth_no_confirm": True,
}]
c.JupyterHub.load_groups = {f"formgrade-{COURSE_ID}": {"users": [INSTRUCTOR]}}
c.JupyterHub.load_roles = [{
    "name": f"formgrade-{COURSE_ID}",
    "groups": [f"formgrade-{COURSE_ID}"],
    "scopes": [f"access:services!service={COURSE_ID}"],
}]
