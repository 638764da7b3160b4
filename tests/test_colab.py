"""tools/colab.py: the first cell that installs mha_lib on Colab, and the badges of docs/online.md."""

import copy
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("colab", ROOT / "tools" / "colab.py")
colab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(colab)


def executed_notebook() -> nbformat.NotebookNode:
    """A small chapter as `make outputs` leaves it: title, two executed code cells, one with a result."""
    first = nbformat.v4.new_code_cell("import mha_lib\nprint('hi')", execution_count=1,
                                      outputs=[nbformat.v4.new_output("stream", name="stdout", text="hi\n")])
    second = nbformat.v4.new_code_cell("1 + 1", execution_count=2,
                                       outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"},
                                                                       execution_count=2)])
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 09 · A chapter\n\ntext"), first,
                                           nbformat.v4.new_markdown_cell("## 1. more"), second])


def test_the_cell_goes_before_the_first_code_cell_and_counts_move_up():
    notebook = executed_notebook()
    assert colab.add_install_cell(notebook)
    nbformat.validate(notebook)
    assert [cell.cell_type for cell in notebook.cells] == ["markdown", "code", "code", "markdown", "code"]
    cell = notebook.cells[1]
    assert cell.source == colab.INSTALL_CELL and cell.metadata.tags == [colab.TAG] and cell.outputs == []
    assert cell.metadata.jupyter == {"source_hidden": True}  # folded: a reader sees one line, not pip boilerplate
    assert [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"] == [1, 2, 3]
    assert notebook.cells[4].outputs[0].execution_count == 3
    assert colab.is_current(notebook)


def test_running_it_twice_changes_nothing():
    notebook = executed_notebook()
    colab.add_install_cell(notebook)
    once = copy.deepcopy(notebook)
    assert not colab.add_install_cell(notebook)
    assert notebook == once


def test_an_old_install_cell_is_replaced_not_duplicated():
    notebook = executed_notebook()
    colab.add_install_cell(notebook)
    notebook.cells[1].source = "# an older install cell"
    assert not colab.is_current(notebook)
    assert colab.add_install_cell(notebook)
    assert sum(colab.is_install_cell(cell) for cell in notebook.cells) == 1
    assert notebook.cells[1].source == colab.INSTALL_CELL
    assert [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"] == [1, 2, 3]


def test_an_unexecuted_notebook_stays_unexecuted():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 09 · A"),
                                               nbformat.v4.new_code_cell("import mha_lib")])
    colab.add_install_cell(notebook)
    assert [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"] == [None, None]


def test_the_cell_is_silent_where_mha_lib_is_installed(capfd):
    exec(compile(colab.INSTALL_CELL, "install-cell", "exec"), {})
    assert capfd.readouterr() == ("", "")


def run_cell(monkeypatch, cell: str, on_colab: bool, pip_fails: bool = False, real_shell=None) -> list:
    """Run an install cell where mha_lib is missing, with subprocess.run recorded; its calls."""
    calls = []

    def run(command, **options):
        calls.append((command, options))
        if real_shell is not None and options.get("shell"):
            return real_shell(command, **options)
        if pip_fails:
            return subprocess.CompletedProcess(command, 1, "", "WARNING: x\nERROR: No matching distribution found\n")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setitem(sys.modules, "mha_lib", None)  # `import mha_lib` now raises ModuleNotFoundError
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", run)
    exec(compile(cell, "install-cell", "exec"), {})
    return calls


PIP = [sys.executable, "-m", "pip", "install", "--quiet", f"mha-notebooks @ git+{colab.REPOSITORY_URL}@{colab.REF}"]


def test_on_colab_the_cell_installs_the_latest_release_quietly(monkeypatch, capfd):
    (pip,) = run_cell(monkeypatch, colab.INSTALL_CELL, on_colab=True)
    assert pip == (PIP, {"capture_output": True, "text": True})
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("cell", [colab.INSTALL_CELL, colab.INSTALL_CELL_ZH], ids=["en", "zh_CN"])
def test_a_failed_install_is_one_line_with_pips_reason_not_a_traceback(monkeypatch, capfd, cell):
    run_cell(monkeypatch, cell, on_colab=True, pip_fails=True)
    out, err = capfd.readouterr()
    assert err == "" and out.count("\n") == 1 and "ERROR: No matching distribution found" in out
    assert ("README" in out) and ("Traceback" not in out)


@pytest.mark.parametrize("cell, words", [(colab.INSTALL_CELL, "This kernel has no mha_lib"),
                                         (colab.INSTALL_CELL_ZH, "这个内核里没有 mha_lib")], ids=["en", "zh_CN"])
def test_off_colab_the_cell_installs_nothing_and_says_what_to_do_in_one_line(monkeypatch, capfd, cell, words):
    # A Jupyter without mha_lib on a reader's own machine: no pip into someone else's environment, no apt-get.
    assert run_cell(monkeypatch, cell, on_colab=False) == []
    out, err = capfd.readouterr()
    assert err == "" and out.count("\n") == 1 and out.startswith(words)
    assert "python3 -m tools.start" in out and "py -m tools.start" in out


def test_the_release_is_mha_libs_version_or_the_release_before_it(tmp_path):
    library = tmp_path / "__init__.py"
    for version, release in [("2026.11.0.post0.dev0", "2026.11.0"), ("2026.12.0", "2026.12.0")]:
        library.write_text(f'"""mha_lib."""\n\n__version__ = "{version}"\n')
        assert colab.latest_release(library) == release
    assert colab.RELEASE == colab.latest_release() and colab.REF == f"v{colab.RELEASE}"
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\] - ", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert colab.RELEASE == newest.group(1)  # the newest release in CHANGELOG.md, not one still to come


def test_the_repository_url_is_a_github_repository():
    assert colab.REPOSITORY_URL == colab.repository_url()  # from pyproject.toml, the one place
    owner_name = colab.REPOSITORY_URL.removeprefix("https://github.com/")
    assert owner_name.count("/") == 1
    # The badges open the release the install cell installs: chapter and library match.
    assert colab.colab_url(Path("03_splitting_heads.ipynb")) == (
        f"https://colab.research.google.com/github/{owner_name}/blob/{colab.REF}/chapters/03_splitting_heads.ipynb")
    assert colab.binder_url(Path("00_start_here.ipynb")) == (
        f"https://mybinder.org/v2/gh/{owner_name}/{colab.REF}?urlpath=lab/tree/chapters/00_start_here.ipynb")


def test_badges_give_binder_and_one_colab_badge_per_chapter():
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    text = colab.badges(paths)
    assert text.count("mybinder.org/badge_logo.svg") == 1
    assert text.count("colab-badge.svg") == len(paths)
    for path in paths:
        assert f"/chapters/{path.name})" in text  # the reader edition: exercises unsolved
    assert "| 00 · Start here |" in text


def test_badges_start_with_the_set_up_workflow_and_the_book_of_this_repository():
    first = colab.badges(sorted((ROOT / "notebooks").glob("00_*.ipynb"))).splitlines()[0]
    owner, name = colab.repository_url().removeprefix("https://github.com/").split("/")
    assert f"{colab.repository_url()}/actions/workflows/setup.yml/badge.svg" in first
    assert (ROOT / ".github" / "workflows" / "setup.yml").is_file()
    assert f"(https://{owner.lower()}.github.io/{name}/)" in first  # where actions/deploy-pages puts a project's site


def test_check_reports_a_notebook_without_the_cell(tmp_path, capsys):
    path = tmp_path / "09_a_chapter.ipynb"
    nbformat.write(executed_notebook(), path)
    assert colab.main(["--check", str(path)]) == 1
    assert "09_a_chapter.ipynb" in capsys.readouterr().out
    assert colab.main([str(path)]) == 0
    assert colab.main(["--check", str(path)]) == 0
    nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.skipif(not any(colab.is_install_cell(cell) for cell in
                            nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4).cells),
                    reason="the install cells have not been added yet (python tools/colab.py)")
def test_every_chapter_starts_with_the_current_install_cell():
    assert colab.main(["--check"]) == 0, "run `python tools/colab.py` and `make editions`, then commit both editions"
    assert all(colab.is_current(nbformat.read(path, as_version=4)) for path in sorted(colab.CHAPTERS.glob("*.ipynb")))


# The Chinese edition's cell (zh-CN/): on Colab it also installs a font with Chinese glyphs for the figures.

def test_the_chinese_cell_installs_mha_lib_then_on_colab_the_cjk_font(monkeypatch):
    (pip, font) = run_cell(monkeypatch, colab.INSTALL_CELL_ZH, on_colab=True)
    assert pip == (PIP, {"capture_output": True, "text": True})
    command, options = font
    assert options == {"shell": True} and "apt-get install" in command and "fonts-noto-cjk" in command


def test_the_chinese_cell_installs_no_font_when_pip_failed(monkeypatch):
    (pip,) = run_cell(monkeypatch, colab.INSTALL_CELL_ZH, on_colab=True, pip_fails=True)
    assert pip[0] == PIP


def test_the_chinese_cell_is_silent_where_mha_lib_is_installed(capfd):
    exec(compile(colab.INSTALL_CELL_ZH, "install-cell", "exec"), {})
    assert capfd.readouterr() == ("", "")


def test_colab_with_stale_package_lists_updates_them_and_tries_again(monkeypatch, tmp_path):
    # A fake apt-get on PATH: `install` fails until `update` has run, as with Colab's stale package lists.
    log = tmp_path / "apt.log"
    fake = tmp_path / "apt-get"
    fake.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
    *update*) touch {tmp_path}/updated ;;
    *install*) test -e {tmp_path}/updated || exit 100 ;;
esac
""")
    fake.chmod(0o755)
    real_run = subprocess.run
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    run_cell(monkeypatch, colab.INSTALL_CELL_ZH, on_colab=True, real_shell=real_run)
    assert log.read_text().splitlines() == ["install --yes --quiet --quiet fonts-noto-cjk", "update --quiet --quiet",
                                            "install --yes --quiet --quiet fonts-noto-cjk"]


def test_each_edition_gets_the_cell_of_its_language(tmp_path):
    for folder, language in [("notebooks", "en"), ("chapters", "en"), ("zh-CN/notebooks", "zh_CN"),
                             ("zh-CN/chapters", "zh_CN")]:
        assert colab.language_of(ROOT / folder / "00_start_here.ipynb") == language
    assert colab.language_of(tmp_path / "09_a_chapter.ipynb") == "en"
    notebook = executed_notebook()
    assert colab.add_install_cell(notebook, "zh_CN")
    assert colab.is_current(notebook, "zh_CN") and not colab.is_current(notebook, "en")
    assert not colab.add_install_cell(notebook, "zh_CN")
    assert colab.add_install_cell(notebook, "en") and colab.is_current(notebook)
    # The Chinese cell installs what the English one does, with the same lines of code.
    def code(cell: str) -> list[str]:
        return [line for line in cell.splitlines() if not line.startswith("#")
                and any(word in line for word in ("import", "subprocess", "release"))]
    assert code(colab.INSTALL_CELL_ZH)[:len(code(colab.INSTALL_CELL))] == code(colab.INSTALL_CELL)
