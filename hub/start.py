"""Start the trial JupyterHub of hub/jupyterhub_config.py (`make hub`): new passwords, printed once.

    python hub/start.py [--port 8000] [--state build/hub]

The course ($STATE/course, written by `make assignments COURSE=$STATE/course`) must exist. Each start makes new
passwords for the instructor and the students and prints them here, once; they live only in the hub's
environment, never in a file. Ctrl+C stops the hub, its proxy, the formgrader and every user's server.

Run as root, it first creates a system account for each hub user that lacks one (useradd: no login shell, no
password, no home of its own; the hub gives each a home in $STATE/home), so that each user's server runs as its
own account (hub/jupyterhub_config.py). `userdel NAME` removes one.
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
USERS = ["instructor", "student1", "student2", "student3"]  # as hub/jupyterhub_config.py lets them in


def ensure_accounts(names: list[str]) -> list[str]:
    """Create a system account (and its own group) for each name that has none; returns the names created."""
    existing = {entry.pw_name for entry in pwd.getpwall()}
    created = []
    for name in names:
        if name not in existing:
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", "--comment", "mha-notebooks trial hub", name], check=True)
            created.append(name)
    return created


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--state", type=Path, default=ROOT / "build" / "hub")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    if not (state / "course" / "release").is_dir():
        sys.exit(f"error: no course in {state / 'course'}: run `make hub` (it runs make assignments first)")
    if not (HERE / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        sys.exit("error: the proxy is not installed: run `make hub` (it runs npm ci in hub/)")
    for folder in ("home", "exchange"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        created = ensure_accounts(USERS)
        if created:
            print(f"Created system accounts: {', '.join(created)} (each user's server runs as its own account)")

    instructor_password = secrets.token_urlsafe(32)  # SharedPasswordAuthenticator asks for 32 characters at least
    student_password = secrets.token_urlsafe(12)
    url = f"http://127.0.0.1:{args.port}/"
    print(f"""
The trial course runs at {url} (this machine only). Sign in as
    instructor                    password {instructor_password}
    student1, student2, student3  password {student_password}   (one password for all students)
The instructor grades at {url}services/mha-notebooks/formgrader/ ; students fetch and submit in their
JupyterLab (Nbgrader > Assignment List). New passwords at each start; Ctrl+C stops the hub.
Users' files, the exchange and the gradebook stay in {state}.
""", flush=True)
    os.environ.update(MHA_HUB_DIR=str(state), MHA_HUB_PORT=str(args.port),
                      MHA_HUB_INSTRUCTOR_PASSWORD=instructor_password, MHA_HUB_STUDENT_PASSWORD=student_password)
    jupyterhub = Path(sys.executable).parent / "jupyterhub"
    os.chdir(state)
    os.execv(jupyterhub, [str(jupyterhub), "--config", str(HERE / "jupyterhub_config.py")])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
