"""The sandbox that autograde runs a submission's answers in (tools/autograde.py, tools/grade_runner.py), tried from
inside: each secret of a course is a named test that a cell tries to read; no network, no write outside its folder,
a time and a memory limit; a function that is or reaches the library function it should replace is reported.

Runs in ``make test-course``, which needs bubblewrap (``apt-get install bubblewrap``; ``.ci/run`` installs it): without
it these tests fail, as autograde then refuses to run.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import autograde  # noqa: E402


def test_bubblewrap_runs_here():
    bwrap = shutil.which("bwrap")
    assert bwrap and autograde._bwrap_works(bwrap), "install bubblewrap (apt-get install bubblewrap)"


def answers(*cells: str, **options) -> list:
    """Run each cell as an answer cell in the sandbox; the value of ``answer`` after each."""
    steps = []
    for n, cell in enumerate(cells):
        steps += [{"run": cell, "answer": f"a{n}"}, {"probe": f"p{n}", "kind": "value", "name": "answer"}]
    results = autograde.run_sandboxed(steps, **options)
    return [results.get(f"p{n}") for n in range(len(cells))]


READ = '''\
try:
    answer = open({path!r}, "rb").read().decode(errors="replace")
except OSError as error:
    answer = "refused: " + type(error).__name__
'''


@pytest.fixture
def course(tmp_path):
    """A course's secrets where autograde keeps them: its seed, solutions, release, gradebook, other students' work."""
    files = {".generated.json": json.dumps({"seed": "the-course-seed"}),
             "source/ch04/04_multi_head_attention.ipynb": "answer = (5, 0, 5, 0)  # BEGIN SOLUTION",
             "release/ch04/04_multi_head_attention.ipynb": "released",
             "gradebook.db": "SQLite format 3 grades",
             "submitted/alice/ch04/04_multi_head_attention.ipynb": "alice's answers",
             "autograded/alice/ch04/04_multi_head_attention.ipynb": "alice's grades",
             ".course-secret": "00" * 32,  # numbers per student (tools/nbgrader_course.py, course_secret)
             "student-source/bob/ch04/04_multi_head_attention.ipynb": "bob's numbers and solutions"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


SECRETS = [".generated.json", "source/ch04/04_multi_head_attention.ipynb", "release/ch04/04_multi_head_attention.ipynb",
           "gradebook.db", "submitted/alice/ch04/04_multi_head_attention.ipynb",
           "autograded/alice/ch04/04_multi_head_attention.ipynb", ".course-secret",
           "student-source/bob/ch04/04_multi_head_attention.ipynb"]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_submission_cannot_read_the_courses(course, secret):
    (result,) = answers(READ.format(path=str(course / secret)))
    assert result["value"] == "refused: FileNotFoundError", result
    assert (course / secret).read_text()  # it is there, for the grader


@pytest.mark.parametrize("secret", ["grading/ch04.py", "grading/__init__.py", "tools/nbgrader_course.py",
                                    "hub/jupyterhub_config.py"])
def test_a_submission_cannot_read_the_repositorys_grading_bank(secret):
    """The rubrics and model answers of grading/, and the course's tools, are not in the sandbox: the packages are."""
    (result, package) = answers(READ.format(path=str(ROOT / secret)),
                                "import mha_lib.modules\nanswer = mha_lib.modules.__file__")
    assert result["value"] == "refused: FileNotFoundError", result
    assert package["value"] == "/packages/mha_lib/modules.py"


def test_a_submission_sees_only_its_empty_folder_and_writes_nowhere_else():
    listing, written, packages, user, again = answers(
        f"import os\nroot = {str(ROOT)!r}\n"
        "answer = sorted(os.listdir('.')), os.path.isdir(root) and sorted(os.listdir(root)), os.path.exists('/home')",
        "open('notes.txt', 'w').write('for later')\nanswer = open('notes.txt').read()",
        "try:\n    open('/packages/mha_lib/cheat.py', 'w')\n    answer = 'written'\nexcept OSError as e:\n"
        "    answer = type(e).__name__",
        "import os\nanswer = os.getuid(), os.getgid()",
        "import os\nanswer = os.path.exists('notes.txt')")
    here, repository, home = listing["value"]
    # Of the repository only the folders that hold Python's packages can be there (a checkout's .venv, bound
    # read-only with the rest of Python); its course, grading bank and tools never are.
    python_folders = [Path(sys.prefix), *(Path(entry) for entry in sys.path if Path(entry).name == "site-packages")]
    inside = {path.relative_to(ROOT).parts[0] for path in python_folders if path.is_relative_to(ROOT) and path != ROOT}
    assert here == [] and home is False
    assert repository is False or set(repository) <= inside, repository
    assert written["value"] == "for later" and again["value"] is True  # one submission's folder, for its own cells
    assert packages["value"] == "OSError" or packages["value"] in ("PermissionError", "ReadOnlyFileSystemError")
    assert user["value"] == [65534, 65534]  # nobody, in its own user namespace: never root
    assert not (ROOT / "mha_lib" / "cheat.py").exists()
    assert answers("import os\nanswer = os.path.exists('notes.txt')")[0]["value"] is False  # the next submission


def test_a_submission_has_no_network():
    (result,) = answers("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
                        "    answer = 'connected'\nexcept OSError as e:\n    answer = 'refused'")
    assert result["value"] == "refused"


def test_an_answer_that_never_ends_is_stopped_and_earlier_answers_are_kept():
    start = time.monotonic()
    first, endless = answers("answer = 1", "while True:\n    pass", timeout=8)
    assert time.monotonic() - start < 40
    assert first["value"] == 1 and endless is None


def test_an_answer_cannot_take_more_memory_than_its_limit():
    (result,) = answers("try:\n    x = bytearray(6 * 2**30)\n    answer = 'allocated'\nexcept MemoryError:\n"
                        "    answer = 'refused'", memory_mb=4096)
    assert result["value"] == "refused"


def test_the_site_packages_a_venv_takes_from_another_through_a_pth_file_are_bound(monkeypatch, tmp_path):
    """The hub's image is a venv whose .pth file adds another venv's site-packages (torch comes from there): the
    sandbox binds that folder, read-only, and nothing else of the other venv."""
    other = tmp_path / "other" / "lib" / "site-packages"
    other.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(other)])
    command, _ = autograde.sandbox_command(sys.executable, [])
    binds = {(command[i + 1], command[i + 2]) for i, word in enumerate(command) if word == "--ro-bind"}
    assert (str(other.resolve()), str(other.resolve())) in binds
    assert not any(source == str(tmp_path / "other") for source, _ in binds)


def test_without_a_sandbox_autograde_refuses_and_says_what_to_install(monkeypatch):
    monkeypatch.setattr(autograde.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="install bubblewrap"):
        autograde.run_sandboxed([])
    # the explicit opt-out of a lecturer's laptop: the answers run, as this user
    (result,) = answers("answer = 6 * 7", unsafe=True)
    assert result["value"] == 42


# ---- a function that is, wraps or reaches the library function it should replace --------------------------------

LIBRARY = ["mha_lib.grouped:repeat_kv_heads"]
ALIASES = {
    "alias": "from mha_lib.grouped import repeat_kv_heads as f",
    "wrapper": "import mha_lib.grouped\ndef f(X, n):\n    return mha_lib.grouped.repeat_kv_heads(X, n)",
    "through strings": "import importlib\ndef f(X, n):\n    m = importlib.import_module('mha_lib.' + 'grouped')\n"
                       "    return getattr(m, 'repeat_kv' + '_heads')(X, n)",
    "a copy of its code": "import types, mha_lib.grouped as g\nr = g.repeat_kv_heads\n"
                          "f = types.FunctionType(r.__code__, r.__globals__)",
    "partial": "import functools, mha_lib.grouped as g\nf = functools.partial(g.repeat_kv_heads)",
    "the watch taken away": "import sys, mha_lib.grouped as g\ndef f(X, n):\n    sys.setprofile(None)\n"
                            "    return g.repeat_kv_heads(X, n)",
}
OWN = ("def f(X, n):\n    b, kv, s, d = X.shape\n"
       "    return X[:, :, None].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)")


def _probe(cell: str) -> dict:
    import torch
    cases = [[autograde.encode_args(torch.arange(24.0).reshape(1, 2, 3, 4)), 2]]
    steps = [{"run": cell, "answer": "a"}, {"probe": "p", "kind": "function", "name": "f", "cases": cases,
                                             "library": LIBRARY}]
    return autograde.run_sandboxed(steps)["p"]


@pytest.mark.parametrize("cell", ALIASES.values(), ids=ALIASES)
def test_a_function_that_reaches_the_library_function_is_reported(cell):
    result = _probe(cell)
    assert result["alias"] is True, result


def test_a_function_of_ones_own_is_not_reported_and_gives_its_results():
    result = _probe(OWN)
    assert result["alias"] is False and result["outputs"][0]["value"]["tensor"] == [1, 4, 3, 4]


def test_the_grader_also_reads_the_answers_source_for_the_library_functions_name():
    assert autograde.mentions("from mha_lib.grouped import repeat_kv_heads", LIBRARY) == LIBRARY
    assert autograde.mentions("f = getattr(g, 'repeat_kv_heads')", LIBRARY) == LIBRARY
    assert autograde.mentions(OWN, LIBRARY) == []
    assert autograde.mentions("def my_repeat_kv_heads(X, n):\n    return X", LIBRARY) == []


# Ways to the library function that the watch in the sandbox does not see (redteam, tests/autograde/cheats.py): each
# is the student's code undoing a check made in the student's own process. The run without the packages
# (autograde.run_program) is where they get nothing.
EVASIONS = {
    "a private twin": "import mha_lib.grouped as g\nf = g._repeat_kv_heads",
    "the watch off and on again": "import sys, mha_lib.grouped as g\ndef f(X, n):\n    watch = sys.getprofile()\n"
                                  "    sys.setprofile(None)\n    try:\n        return g.repeat_kv_heads(X, n)\n"
                                  "    finally:\n        sys.setprofile(watch)",
    "another thread": "import threading, mha_lib.grouped as g\ndef f(X, n):\n    box = []\n"
                      "    t = threading.Thread(target=lambda: box.append(g.repeat_kv_heads(X, n)))\n"
                      "    t.start()\n    t.join()\n    return box[0]",
    "the runner patched": "import sys, mha_lib.grouped as g\nsys.modules['__main__']._named = lambda path: None\n"
                          "f = g.repeat_kv_heads",
    "an edited copy": "import ast, inspect, mha_lib.grouped as g\n"
                      "tree = ast.parse(inspect.getsource(g.repeat_kv_heads))\n"
                      "tree.body[0].body.insert(1, ast.parse('_copied = 1').body[0])\nspace = dict(vars(g))\n"
                      "exec(compile(tree, 'copy', 'exec'), space)\nf = space['repeat_kv_heads']",
}


def _probe_program(cell: str) -> dict:
    import torch
    cases = [[autograde.encode_args(torch.arange(24.0).reshape(1, 2, 3, 4)), 2]]
    steps = [{"run": cell, "answer": "a"}, {"probe": "p", "kind": "function", "name": "f", "cases": cases,
                                             "library": LIBRARY}]
    return autograde.run_program(steps)["p"]


@pytest.mark.parametrize("cell", EVASIONS.values(), ids=EVASIONS)
def test_a_way_to_the_library_that_the_watch_misses_gives_no_result(cell):
    seen = _probe(cell)  # the full run alone: the library's right result, reported as the student's own
    assert seen["alias"] is False and seen["outputs"][0]["value"]["tensor"] == [1, 4, 3, 4], seen
    result = _probe_program(cell)
    assert ("error" in result or result["alias"] is True
            or all("value" not in output for output in result["outputs"])), result


def test_a_function_of_ones_own_gives_its_results_without_the_packages():
    result = _probe_program(OWN)
    assert result["alias"] is False and result["outputs"][0]["value"]["tensor"] == [1, 4, 3, 4]


def test_the_run_without_the_packages_has_only_the_library_probes_and_the_cells_before_them():
    steps = [{"run": "import torch", "answer": None}, {"probe": "v", "kind": "value", "name": "x"},
             {"probe": "f", "kind": "function", "name": "f", "cases": [], "library": LIBRARY},
             {"run": "y = 1", "answer": "a"}, {"probe": "g", "kind": "function", "name": "g", "cases": [],
                                               "library": []}]
    alone = autograde.without_library(steps)
    assert [s.get("probe") for s in alone] == [None, None, "f"] and alone[0]["run"] == autograde.PLAIN_IMPORTS
    assert autograde.without_library(steps[:2]) == []


def test_the_run_without_the_packages_hides_them_where_they_are_installed(monkeypatch, tmp_path):
    """A hub's image installs mha_lib into site-packages (environment.yml): there too the second run finds none."""
    site = tmp_path / "lib" / "site-packages"
    (site / "mha_lib").mkdir(parents=True)
    (site / "mha_lib" / "__init__.py").write_text("WHERE = 'installed'\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    cell = READ.format(path=str((site / "mha_lib" / "__init__.py").resolve()))
    assert answers(cell, packages=[])[0]["value"] == "WHERE = 'installed'\n"  # bound, as torch's folder is
    hidden = answers(cell, packages=[], hide=autograde.LIBRARY_PACKAGES)[0]["value"]
    assert hidden.startswith("refused: "), hidden
