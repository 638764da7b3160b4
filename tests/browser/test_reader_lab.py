"""A reader's JupyterLab is a reader's (issue 35): no instructor tooling in `make lab` or `make lab-zh`.

nbgrader is installed with the collection for lecturers (`make lab-instructor`, `make assignments`, the hub). Its
JupyterLab extension adds an "Nbgrader" menu, a "Validate" button that says "Success! Your notebook passes all
the tests." of an unsolved chapter, a "Create Assignment" panel and the formgrader; its server extensions print a
red "[E ...] The course directory root is not a subdirectory of the notebook server root" when `make lab-zh`
starts. The server of these tests starts as `make lab` and `make lab-zh` start theirs (``tools/reader_lab.py``),
and each test opens chapter 00 without running it: none of that may be there, in either language.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_helpers import LabServer, http_status, reader_page
from playwright.sync_api import Browser, expect

START = "00_start_here.ipynb"
INSTRUCTOR_LABELS = ("Nbgrader", "Validate", "Create Assignment", "Formgrader", "Assignments", "Courses")


@pytest.mark.parametrize("server", ["lab_server", "lab_server_zh"])
def test_the_readers_lab_shows_no_instructor_tooling(server: str, request: pytest.FixtureRequest,
                                                     browser: Browser, screenshots: Path):
    lab: LabServer = request.getfixturevalue(server)
    with reader_page(browser, screenshots / f"FAILED-{server}-instructor-tooling.png") as page:
        page.goto(lab.lab_url(START))
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.evaluate("() => window.jupyterapp.restored.then(() => true)")
        # The chapter is open and drawn, with its toolbar filled (where nbgrader put its Validate button)
        expect(page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible()
        expect(page.locator(".jp-NotebookPanel .jp-Spinner")).to_have_count(0)
        expect(page.locator('.jp-NotebookPanel-toolbar [data-command="docmanager:save"]')).to_be_visible()
        page.screenshot(path=screenshots / f"{server}-0-chapter-00-unexecuted.png")

        # nbgrader's plugins (menu, validate, create-assignment, course and assignment lists) and commands
        plugins = page.evaluate("() => window.jupyterapp.listPlugins()")
        commands = page.evaluate("() => window.jupyterapp.commands.listCommands()")
        assert [plugin for plugin in plugins if "nbgrader" in plugin] == []
        assert [command for command in commands if "nbgrader" in command] == []
        # and what a reader would see of them: the menu, the toolbar button, the side panels
        menus = page.locator("#jp-MainMenu .lm-MenuBar-itemLabel").all_inner_texts()
        assert "Nbgrader" not in menus and len(menus) >= 5
        for label in INSTRUCTOR_LABELS:
            expect(page.get_by_text(label, exact=True)).to_have_count(0)
            expect(page.get_by_title(label, exact=True)).to_have_count(0)

    # nbgrader printed nothing while the server started and the page opened (the terminal of `make lab-zh`
    # showed a red English nbgrader error), and its server extensions answer none of their addresses
    log = lab.log.read_text(encoding="utf-8")
    assert [line for line in log.splitlines() if "nbgrader" in line.lower()] == []
    for path in ("formgrader", "formgraders", "assignments", "nbgrader_version"):
        assert http_status(f"{lab.url}{path}?token={lab.token}") == 404, f"/{path} is served"
