"""A course on a real JupyterHub (``make test-hub``): release, fetch, submit, collect, autograde, with students.

Every step is a REST call of one user with that user's own token, through the hub's proxy, to JupyterHub's API,
to the nbgrader extensions of the user's JupyterLab (Assignments: fetch, submit) or to the formgrader, a hub
service only the instructor may open (release, collect, autograde, the gradebook's submissions). The files move
through nbgrader's exchange. Then a student signs in with the browser and opens the fetched assignment.

The users' servers and the formgrader run the collection as the course's image installs it (a wheel in a venv
outside the checkout), and a chapter runs from an empty home folder there. Run as root, each user's server runs as
that user's system account: one student can neither list nor open another's submission, and a submission made
under another student's name is never collected.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import nbformat
import psutil
import pytest
from conftest import ACCOUNTS, CHAPTER, ROOT, Hub

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from lab_helpers import EXERCISE_TEXT, STDERR, STDOUT, menu_command, new_page, screenshot  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402
from test_nbgrader import CH08_MAX_SCORE, CH08_SCORES, RIGHT_CH08, WRONG_CH08, fill_in  # noqa: E402

COURSE = "mha-notebooks"
ASSIGNMENT = "ch08"
FORMGRADER = f"services/{COURSE}/formgrader/api"
NOTEBOOK = f"{ASSIGNMENT}/{CHAPTER.name}"  # where nbgrader's fetch puts it in the student's home
KERNEL_TIMEOUT_MS = 120_000  # a cold kernel that imports torch on 2 busy cores
RUN_TIMEOUT_MS = 300_000


def assignments(hub: Hub, student: str, action: str = "") -> list[dict]:
    """nbgrader's Assignments extension in the student's JupyterLab: list, fetch or submit this course's ch08."""
    query = urlencode({"course_id": COURSE, "assignment_id": ASSIGNMENT})
    if action:
        answer = hub.ok("POST", f"user/{student}/assignments/{action}?{query}", student, body={})
    else:
        answer = hub.ok("GET", f"user/{student}/assignments?{query}", student)
    assert answer["success"], answer
    return [a for a in answer["value"] if a["assignment_id"] == ASSIGNMENT]


@pytest.fixture(scope="module")
def released(hub: Hub) -> Hub:
    """The instructor releases ch08 from the formgrader, into the exchange."""
    answer = hub.ok("POST", f"{FORMGRADER}/assignment/{ASSIGNMENT}/release", "instructor")
    assert answer["success"], answer["log"]
    return hub


def as_user(hub: Hub, user: str, code: str, cwd: Path | None = None, timeout: int = 600) -> str:
    """Run Python ``code`` in the users' environment as ``user`` would in a terminal of their own JupyterLab: as the
    user's system account (root only), with the server's environment; returns what it printed."""
    home = hub.state / "home" / user
    env = {"HOME": str(home), "USER": user, "JUPYTERHUB_USER": user, "PATH": os.environ["PATH"],
           "JUPYTER_CONFIG_PATH": str(ROOT / "hub" / "jupyter" / "student"),
           "MHA_HUB_EXCHANGE": str(hub.state / "exchange")}
    account = {"user": user, "group": user, "extra_groups": []} if ACCOUNTS else {}
    done = subprocess.run([str(hub.users_env / "bin" / "python"), "-c", code], cwd=cwd or home, env=env,
                          capture_output=True, text=True, timeout=timeout, **account)
    assert done.returncode == 0, f"as {user}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def fetch(hub: Hub, student: str) -> None:
    hub.start_server(student)
    fetched = assignments(hub, student, "fetch")
    assert [a["status"] for a in fetched] == ["fetched"]
    assert [n["path"] for n in fetched[0]["notebooks"]] == [NOTEBOOK]


# --- the hub ------------------------------------------------------------------------------------------------------

def test_hub_and_proxy_listen_on_loopback_only(hub: Hub):
    processes = [psutil.Process(hub.process.pid), *psutil.Process(hub.process.pid).children(recursive=True)]
    addresses = {connection.laddr.ip for process in processes for connection in process.net_connections("inet")
                 if connection.status == psutil.CONN_LISTEN}
    assert addresses == {"127.0.0.1"}
    assert any("configurable-http-proxy" in " ".join(p.cmdline()) for p in processes)


def test_nobody_signs_in_without_the_password(hub: Hub):
    for user, password in [("student1", "not-the-password"), ("student1", hub.passwords["instructor"]),
                           ("instructor", hub.passwords["student1"]), ("stranger", hub.passwords["student1"])]:
        status, _ = hub.call("POST", f"hub/api/users/{user}/tokens",
                             body={"auth": {"username": user, "password": password}})
        assert status == 403, f"{user} got a token with a wrong password"


def test_only_the_instructor_opens_the_formgrader(hub: Hub):
    assert hub.call("GET", f"{FORMGRADER}/assignments", "student1")[0] == 403
    assert hub.call("GET", f"{FORMGRADER}/assignments")[0] in (302, 403)  # no token: the hub's login, or refused
    names = [a["name"] for a in hub.ok("GET", f"{FORMGRADER}/assignments", "instructor")]
    assert names == [ASSIGNMENT]
    # A student's own JupyterLab has the Assignments extension, and no formgrader of its own
    hub.start_server("student1")
    assert hub.call("GET", "user/student1/formgrader/api/assignments", "student1")[0] == 404
    assert hub.call("GET", f"user/student1/assignments?course_id={COURSE}", "student1")[0] == 200


# --- the course loop ----------------------------------------------------------------------------------------------

def test_release_fetch_submit_collect_autograde(released: Hub):
    """Two students fetch ch08; one submits right answers, one a wrong one; the gradebook says 4 and 3 of 6 (the
    written answer, 2 points, waits for a teaching assistant)."""
    hub = released
    answers = {"student1": RIGHT_CH08, "student2": WRONG_CH08}
    for student, answer in answers.items():
        fetch(hub, student)
        # The student answers in their own copy, saved through JupyterLab's contents API, and submits it.
        url = f"user/{student}/api/contents/{NOTEBOOK}"
        nb = nbformat.from_dict(hub.ok("GET", url, student)["content"])
        hub.ok("PUT", url, student, body={"type": "notebook", "format": "json", "content": fill_in(nb, answer)})
        (submitted,) = [a for a in assignments(hub, student, "submit") if a["status"] == "submitted"]
        assert submitted["student_id"] == student  # the hub user, not the system user the servers run as

    answer = hub.ok("POST", f"{FORMGRADER}/assignment/{ASSIGNMENT}/collect", "instructor")
    assert answer["success"], answer["log"]
    assert "Skipping" not in answer["log"]  # each submission was made by the student it names
    for student in answers:
        answer = hub.ok("POST", f"{FORMGRADER}/submission/{ASSIGNMENT}/{student}/autograde", "instructor")
        assert answer["success"], answer["log"]

    submissions = {s["student"]: s for s in hub.ok("GET", f"{FORMGRADER}/submissions/{ASSIGNMENT}", "instructor")}
    assert {name: (s["score"], s["max_score"]) for name, s in submissions.items() if name in answers} == {
        "student1": (CH08_SCORES["right"], CH08_MAX_SCORE), "student2": (CH08_SCORES["wrong"], CH08_MAX_SCORE)}
    assert all(s["autograded"] for name, s in submissions.items() if name in answers)
    # The same scores in nbgrader's gradebook file of the course folder, read with nbgrader's own API.
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{hub.state / 'course' / 'gradebook.db'}") as gradebook:
        expected = {"student1": CH08_SCORES["right"], "student2": CH08_SCORES["wrong"]}
        assert {s: gradebook.find_submission(ASSIGNMENT, s).score for s in answers} == expected


# --- the installed collection, and private submissions -------------------------------------------------------------

WHERE = "import sys, mha_lib; print(sys.executable); print(mha_lib.__file__)"


def test_users_run_the_collection_as_installed_in_the_image(released: Hub):
    """Servers and formgrader run in the image's environment; a chapter runs there from an empty home folder."""
    hub = released
    hub.start_server("student1")
    processes = psutil.Process(hub.process.pid).children(recursive=True)
    servers = [p for p in processes if "jupyterhub.singleuser" in p.cmdline()]
    assert len(servers) >= 2  # student1's and the formgrader
    assert all(Path(p.cmdline()[0]).is_relative_to(hub.users_env) for p in servers)
    if ACCOUNTS:
        owners = {p.environ().get("JUPYTERHUB_SERVICE_NAME") or p.username() for p in servers}
        assert {"student1", COURSE} <= owners

    empty = hub.state / "home" / "student1" / "chapter-04"
    empty.mkdir()
    if ACCOUNTS:
        shutil.chown(empty, "student1", "student1")
    chapter = ROOT / "chapters" / "04_multi_head_attention.ipynb"
    script = ("import nbclient, nbformat, sys; nb = nbformat.read(sys.argv[1], as_version=4); "
              "nb.cells.append(nbformat.v4.new_code_cell(sys.argv[2])); "
              "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3').execute(); "
              "print(nb.cells[-1].outputs[0]['text'], end='')")
    out = as_user(hub, "student1", f"import sys; sys.argv = ['-', {str(chapter)!r}, {WHERE!r}]; {script}", cwd=empty)
    executable, module = out.splitlines()
    assert Path(executable).is_relative_to(hub.users_env), "the kernel runs in the image's environment"
    assert Path(module).is_relative_to(hub.users_env), "mha_lib comes from the installed wheel, not the checkout"
    assert os.listdir(empty) == [], "the chapter wrote nothing into the student's folder"


@pytest.mark.skipif(not ACCOUNTS, reason="each student has a system account only when the hub runs as root")
def test_a_student_cannot_see_another_students_work(released: Hub):
    """student2 cannot list the exchange's inbound folder, nor open student1's home, nor the course folder."""
    hub = released
    inbound = hub.state / "exchange" / COURSE / "inbound"
    assert any(name.startswith("student1+") for name in os.listdir(inbound)), "student1 has submitted"
    probe = f"""
import os
for path in [{str(inbound)!r}, {str(hub.state / "home" / "student1")!r}, {str(hub.state / "course")!r},
             {str(hub.state / "jupyterhub.sqlite")!r}]:
    try:
        os.listdir(path) if os.path.isdir(path) else open(path).read()
        print("opened", path)
    except PermissionError:
        print("refused", path)
"""
    lines = as_user(hub, "student2", probe).splitlines()
    assert len(lines) == 4 and all(line.startswith("refused ") for line in lines), lines


@pytest.mark.skipif(not ACCOUNTS, reason="each student has a system account only when the hub runs as root")
def test_two_students_cannot_read_each_other_s_submissions(released: Hub):
    """Both submitted through JupyterLab; each, told the other's submission's full name, can neither list its
    folder nor read its notebook (PrivateSubmit, hub/jupyter/student/nbgrader_config.py: folder 700, files 600)."""
    hub = released
    inbound = hub.state / "exchange" / COURSE / "inbound"
    mine = {student: [path for path in inbound.iterdir() if path.name.startswith(f"{student}+{ASSIGNMENT}+")
                      and path.owner() == student] for student in ("student1", "student2")}
    assert all(mine.values()), f"both students have submitted: {mine}"
    for reader, owner in [("student1", "student2"), ("student2", "student1")]:
        for folder in mine[owner]:
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
            notebook = next(folder.glob("*.ipynb"))
            assert stat.S_IMODE(notebook.stat().st_mode) == 0o600
            probe = f"""
import os
for action, path in [(os.listdir, {str(folder)!r}), (lambda p: open(p).read(), {str(notebook)!r})]:
    try:
        action(path)
        print("opened", path)
    except PermissionError:
        print("refused", path)
"""
            lines = as_user(hub, reader, probe).splitlines()
            assert len(lines) == 2 and all(line.startswith("refused ") for line in lines), (reader, lines)
    own = as_user(hub, "student1", f"print(len(open({str(next(mine['student1'][0].glob('*.ipynb')))!r}).read()))")
    assert int(own) > 0, "a student can still read their own submission"


@pytest.mark.skipif(not ACCOUNTS, reason="each student has a system account only when the hub runs as root")
def test_a_submission_under_another_students_name_is_not_collected(released: Hub):
    """student2 submits an unanswered ch08 as student1; the formgrader's collect skips it, student1 keeps 4 of 6."""
    hub = released
    before = {s["student"]: s["score"] for s in hub.ok("GET", f"{FORMGRADER}/submissions/{ASSIGNMENT}", "instructor")}
    submitted = hub.state / "course" / "submitted" / "student1" / ASSIGNMENT
    assert (submitted / "timestamp.txt").exists(), "student1's own submission was collected"
    genuine = (submitted / "timestamp.txt").read_text()
    command = ["nbgrader", "submit", ASSIGNMENT, "--CourseDirectory.student_id=student1"]  # in student2's home
    as_user(hub, "student2", f"import runpy, sys; sys.argv = {command!r}; "
                             "runpy.run_module('nbgrader', run_name='__main__')")
    inbound = hub.state / "exchange" / COURSE / "inbound"
    forged = [path for path in inbound.iterdir() if path.name.startswith("student1+")
              and path.owner() == "student2"]
    assert len(forged) == 1, "nbgrader let student2 put student1's name on a submission"

    answer = hub.ok("POST", f"{FORMGRADER}/assignment/{ASSIGNMENT}/collect", "instructor")
    assert answer["success"], answer["log"]
    assert f"Skipping {forged[0].name}: it names student1, but student2 submitted it" in answer["log"]
    assert (submitted / "timestamp.txt").read_text() == genuine
    answer = hub.ok("POST", f"{FORMGRADER}/submission/{ASSIGNMENT}/student1/autograde", "instructor")
    assert answer["success"], answer["log"]
    scores = {s["student"]: s["score"] for s in hub.ok("GET", f"{FORMGRADER}/submissions/{ASSIGNMENT}", "instructor")}
    assert scores["student1"] == before["student1"] == CH08_SCORES["right"]  # the genuine submission, graded again


# --- a student in the browser -------------------------------------------------------------------------------------

# Settings the student would not change, as tests/browser sets them: every cell in the page, no news pop-up.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": '{"fetchNews": "false", '
                                                                        '"checkForUpdates": false}',
}


def test_student_opens_the_fetched_assignment_unsolved(released: Hub, chromium_executable: str, screenshots: Path):
    """student3 signs in, opens ch08 as fetched, runs it: the answers are nbgrader's stubs, the checker says not yet."""
    hub = released
    student = "student3"
    settings = hub.state / "home" / student / ".jupyter" / "lab" / "user-settings"
    for name, text in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(text)
    if ACCOUNTS:  # written by root here: the student's own, as if the student had changed them
        for path in [hub.state / "home" / student, *(hub.state / "home" / student).rglob("*")]:
            shutil.chown(path, student, student)
    fetch(hub, student)
    cells = nbformat.read(hub.state / "home" / student / NOTEBOOK, as_version=4).cells
    answer_cells = [i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("solution")
                    and c.cell_type == "code"]  # the written question's answer cell is markdown
    first_answer = answer_cells[0]  # exercise 1: a function whose body is nbgrader's stub, its checker below
    # The chapter's checker and the well-formed check: locked and ungraded (practice); then the hidden tests
    first_graded = next(i for i in range(first_answer + 1, len(cells))
                        if cells[i].metadata.get("nbgrader", {}).get("grade"))
    practice = [cells[i].metadata.get("nbgrader", {}) for i in range(first_answer + 1, first_graded)]
    assert len(practice) == 2, practice
    assert all(p.get("grade") is False and p.get("locked") is True for p in practice), practice

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable, headless=True)
        page = new_page(browser)
        try:
            page.goto(f"{hub.url}hub/login")
            page.fill("#username_input", student)
            page.fill("#password_input", hub.passwords[student])
            page.click("#login_submit")
            page.wait_for_url(f"{hub.url}user/{student}/lab**")
            page.goto(f"{hub.url}user/{student}/lab/tree/{NOTEBOOK}")
            panel = page.locator(".jp-NotebookPanel")
            expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute(
                "data-status", "idle", timeout=KERNEL_TIMEOUT_MS)
            cell = panel.locator(".jp-Cell")
            expect(cell).to_have_count(len(cells))
            for index in answer_cells:  # unsolved: nbgrader's stub where the instructor's solution was
                expect(cell.nth(index).locator(".cm-content")).to_contain_text("YOUR CODE HERE")
            expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)  # released without outputs
            screenshot(page, screenshots / "hub-1-fetched-assignment.png")

            # The student's Nbgrader menu lists the assignments, not the formgrader (hub/jupyter/student/labconfig)
            page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text="Nbgrader").click()
            items = page.locator(".lm-Menu .lm-Menu-itemLabel")
            expect(items.filter(has_text="Assignment List")).to_have_count(1)
            expect(items.filter(has_text="Formgrader")).to_have_count(0)
            page.keyboard.press("Escape")
            expect(page.locator(".lm-Menu")).to_have_count(0)

            panel.locator(".jp-Cell").first.click()  # the notebook has the focus, so its commands are enabled
            menu_command(page, "Run", "Run All Cells")
            checker = cell.nth(first_answer + 1)
            expect(checker.locator(STDOUT)).to_contain_text(EXERCISE_TEXT["en"]["not yet"], timeout=RUN_TIMEOUT_MS)
            # Run All stops at the next answer cell, whose stub raises where the student has not answered yet.
            expect(cell.nth(answer_cells[1]).locator(STDERR)).to_contain_text("NotImplementedError",
                                                                               timeout=RUN_TIMEOUT_MS)
            screenshot(checker, screenshots / "hub-2-checker-not-yet.png")
        except BaseException:
            page.screenshot(path=screenshots / "hub-failure.png")
            raise
        finally:
            browser.close()
