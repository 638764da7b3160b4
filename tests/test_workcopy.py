"""A reader's answers live in a copy that `git pull` never touches (tools/workcopy.py, `make lab`, issue 35).

The git tests play it out with local git in a temporary folder: a bare "upstream" repository holding the
`.gitignore`, the Makefile and a tiny reader edition, a reader's clone of it, and a maintainer's clone that
pushes a newer edition of the chapter the reader answered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from tools import workcopy

ROOT = Path(__file__).resolve().parents[1]
ANSWER = "answer = ((9, 2, 2), 7)"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def chapter(text: str) -> nbformat.NotebookNode:
    """A one-exercise chapter: a markdown cell and the answer cell, unsolved."""
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text),
                                           nbformat.v4.new_code_cell("answer = ...")])


def write_edition(source: Path, **chapters: str) -> None:
    source.mkdir(parents=True, exist_ok=True)
    for name, text in chapters.items():
        nbformat.write(chapter(text), source / f"{name}.ipynb")


def answer_in(path: Path) -> str:
    return nbformat.read(path, as_version=4).cells[1].source


def type_answer(path: Path) -> None:
    """What a reader does in JupyterLab: type the answer and save."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[1].source = ANSWER
    nbformat.write(notebook, path)


def git(cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
                   "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=environment)


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A bare repository with the project's .gitignore, its Makefile and chapters/ of two chapters."""
    work = tmp_path / "maintainer"
    work.mkdir()
    assert git(work, "init", "--quiet", "--initial-branch=main").returncode == 0
    shutil.copy(ROOT / ".gitignore", work / ".gitignore")
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    write_edition(work / "chapters", **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads"})
    git(work, "add", ".")
    assert git(work, "commit", "--quiet", "-m", "two chapters").returncode == 0
    bare = tmp_path / "upstream.git"
    assert git(tmp_path, "clone", "--quiet", "--bare", str(work), str(bare)).returncode == 0
    assert git(work, "remote", "add", "upstream", str(bare)).returncode == 0
    return bare


def maintainer_pushes(upstream: Path, tmp_path: Path, **chapters: str) -> None:
    """A newer edition of ``chapters`` is committed and pushed upstream."""
    work = tmp_path / "maintainer"
    write_edition(work / "chapters", **chapters)
    git(work, "add", ".")
    assert git(work, "commit", "--quiet", "-m", "a newer edition").returncode == 0
    assert git(work, "push", "--quiet", "upstream", "main").returncode == 0


@needs_git
def test_git_pull_of_a_changed_chapter_succeeds_and_the_answer_stays(upstream, tmp_path):
    reader = tmp_path / "reader"
    assert git(tmp_path, "clone", "--quiet", str(upstream), str(reader)).returncode == 0
    source, copy = reader / "chapters", reader / "my-chapters"
    workcopy.update(source, copy)  # what `make lab` does first
    type_answer(copy / "03_splitting_heads.ipynb")
    assert git(reader, "status", "--porcelain").stdout == "", "the copy must be invisible to git"

    maintainer_pushes(upstream, tmp_path, **{"03_splitting_heads": "Splitting heads, second edition"})
    pull = git(reader, "pull", "--quiet", "--ff-only")
    assert pull.returncode == 0, pull.stderr
    assert nbformat.read(source / "03_splitting_heads.ipynb", as_version=4).cells[0].source.endswith("edition")
    assert answer_in(copy / "03_splitting_heads.ipynb") == ANSWER

    # The next `make lab` leaves the answer alone and tells the newer edition apart from the reader's change
    assert workcopy.update(source, copy) == []
    assert answer_in(copy / "03_splitting_heads.ipynb") == ANSWER
    (state,) = [state for state in workcopy.status(source, copy) if state.name == "03_splitting_heads.ipynb"]
    assert state.upstream_changed and state.edited


@needs_git
def test_answering_in_the_tracked_edition_is_what_stops_git_pull(upstream, tmp_path):
    # The failure the copy exists for: the same answer typed into chapters/ itself.
    reader = tmp_path / "reader"
    git(tmp_path, "clone", "--quiet", str(upstream), str(reader))
    type_answer(reader / "chapters" / "03_splitting_heads.ipynb")
    maintainer_pushes(upstream, tmp_path, **{"03_splitting_heads": "Splitting heads, second edition"})
    pull = git(reader, "pull", "--ff-only")
    assert pull.returncode != 0 and "would be overwritten by merge" in pull.stderr


@needs_git
def test_the_documented_move_of_answers_typed_into_chapters_lets_git_pull_through(upstream, tmp_path):
    # docs/your-answers.md, "Answers you typed into chapters/ before": cp, git checkout, git pull, make lab
    reader = tmp_path / "reader"
    git(tmp_path, "clone", "--quiet", str(upstream), str(reader))
    source, copy = reader / "chapters", reader / "my-chapters"
    type_answer(source / "03_splitting_heads.ipynb")
    maintainer_pushes(upstream, tmp_path, **{"03_splitting_heads": "Splitting heads, second edition"})
    copy.mkdir()
    for path in source.glob("*.ipynb"):
        shutil.copy(path, copy / path.name)
    assert git(reader, "checkout", "--", "chapters").returncode == 0
    assert git(reader, "pull", "--quiet", "--ff-only").returncode == 0
    assert workcopy.update(source, copy) == []
    assert answer_in(copy / "03_splitting_heads.ipynb") == ANSWER
    ((name, backup),) = workcopy.refresh(source, copy)
    assert name == "03_splitting_heads.ipynb" and answer_in(backup) == ANSWER


def test_update_makes_the_copy_then_only_adds_what_it_lacks(tmp_path):
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads"})
    assert workcopy.update(source, copy) == ["00_start_here.ipynb", "03_splitting_heads.ipynb"]
    type_answer(copy / "03_splitting_heads.ipynb")
    write_edition(source, **{"03_splitting_heads": "Splitting heads, second edition", "04_mha": "Four"})
    assert workcopy.update(source, copy) == ["04_mha.ipynb"]  # a chapter added later appears
    assert answer_in(copy / "03_splitting_heads.ipynb") == ANSWER  # and nothing is overwritten


def test_files_beside_the_chapters_are_copied_too(tmp_path):
    # A chapter that shows an image or reads data next to it finds it in the copy as well.
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"00_start_here": "Start here"})
    (source / "images").mkdir()
    (source / "images" / "heads.svg").write_text("<svg/>")
    (source / ".ipynb_checkpoints").mkdir()
    (source / ".ipynb_checkpoints" / "00_start_here-checkpoint.ipynb").write_text("{}")
    assert workcopy.update(source, copy) == ["00_start_here.ipynb", "images/heads.svg"]
    assert (copy / "images" / "heads.svg").read_text() == "<svg/>"


def test_reset_restores_one_chapter_and_keeps_the_readers_file(tmp_path):
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads"})
    workcopy.update(source, copy)
    type_answer(copy / "00_start_here.ipynb")
    type_answer(copy / "03_splitting_heads.ipynb")

    name, backup = workcopy.reset(source, copy, "3")
    assert name == "03_splitting_heads.ipynb"
    assert answer_in(copy / name) == "answer = ..."  # the edition's again
    assert backup.parent == copy / "backups" and answer_in(backup) == ANSWER
    assert answer_in(copy / "00_start_here.ipynb") == ANSWER  # the other chapter is untouched
    assert not any(state.edited for state in workcopy.status(source, copy) if state.name == name)


@pytest.mark.parametrize("chapter", ["03", "3", "03_splitting_heads", "03_splitting_heads.ipynb"])
def test_a_chapter_is_named_by_its_number_or_its_file(tmp_path, chapter):
    write_edition(tmp_path, **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads"})
    assert workcopy.find_chapter(tmp_path, chapter) == "03_splitting_heads.ipynb"


@pytest.mark.parametrize("chapter", ["99", "heads", ""])
def test_a_chapter_that_is_not_there_is_a_clear_error(tmp_path, chapter):
    write_edition(tmp_path, **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads"})
    with pytest.raises(ValueError, match=r"CHAPTER=.* names no chapter .*\(00, 03\)"):
        workcopy.find_chapter(tmp_path, chapter)


def test_refresh_takes_in_newer_chapters_and_keeps_the_readers_files(tmp_path):
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"00_start_here": "Start here", "03_splitting_heads": "Splitting heads",
                             "04_mha": "Four"})
    workcopy.update(source, copy)
    type_answer(copy / "03_splitting_heads.ipynb")
    type_answer(copy / "04_mha.ipynb")
    write_edition(source, **{"00_start_here": "Start here, second edition",
                             "03_splitting_heads": "Splitting heads, second edition"})

    changed = dict(workcopy.refresh(source, copy))
    assert set(changed) == {"00_start_here.ipynb", "03_splitting_heads.ipynb"}
    assert answer_in(changed["03_splitting_heads.ipynb"]) == ANSWER
    assert answer_in(changed["00_start_here.ipynb"]) == "answer = ..."  # every file replaced is kept
    assert nbformat.read(copy / "03_splitting_heads.ipynb", as_version=4).cells[0].source.endswith("edition")
    assert answer_in(copy / "04_mha.ipynb") == ANSWER  # no newer edition: left alone
    assert workcopy.refresh(source, copy) == []


def test_answers_typed_into_chapters_before_the_copy_existed_survive_a_refresh(tmp_path):
    # A reader of an older `make lab` answered in chapters/ itself; the first new `make lab` copies those answers,
    # then `git checkout chapters` (or a pull) puts the edition back: the copy records the answers "as copied".
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"03_splitting_heads": "Splitting heads"})
    type_answer(source / "03_splitting_heads.ipynb")
    workcopy.update(source, copy)
    write_edition(source, **{"03_splitting_heads": "Splitting heads"})
    ((name, backup),) = workcopy.refresh(source, copy)
    assert answer_in(backup) == ANSWER


def test_a_copy_without_its_record_is_never_overwritten_without_a_backup(tmp_path):
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"03_splitting_heads": "Splitting heads"})
    workcopy.update(source, copy)
    type_answer(copy / "03_splitting_heads.ipynb")
    (copy / workcopy.MANIFEST).unlink()  # e.g. a copy made by hand
    ((name, backup),) = workcopy.refresh(source, copy)
    assert backup is not None and answer_in(backup) == ANSWER


def test_the_command_line_names_a_bad_chapter_and_a_missing_one(capsys):
    assert workcopy.main(["reset", "99"]) == 2
    assert "CHAPTER=99 names no chapter of" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        workcopy.main(["reset"])
    assert "CHAPTER" in capsys.readouterr().err


def test_the_command_line_speaks_the_language_of_the_edition(tmp_path, monkeypatch, capsys):
    source, copy = tmp_path / "zh-CN" / "chapters", tmp_path / "my-chapters-zh"
    write_edition(source, **{"00_start_here": "从这里开始", "03_splitting_heads": "拆分注意力头"})
    monkeypatch.setitem(workcopy.EDITIONS, "zh_CN", workcopy.Edition("zh_CN", source, copy, "-zh"))
    assert workcopy.main(["update", "--edition", "zh_CN"]) == 0
    assert "已创建" in capsys.readouterr().out
    type_answer(copy / "03_splitting_heads.ipynb")
    write_edition(source, **{"03_splitting_heads": "拆分注意力头，第二版"})
    assert workcopy.main(["update", "--edition", "zh_CN"]) == 0
    printed = capsys.readouterr().out
    assert "03_splitting_heads.ipynb 的新版本" in printed and "make refresh-zh" in printed
    assert "`.venv/bin/python -m tools.workcopy refresh --edition zh_CN`" in printed  # the command without make
    assert workcopy.main(["refresh", "--edition", "zh_CN"]) == 0
    assert "已换成新版本；你原来的文件在" in capsys.readouterr().out
    assert workcopy.main(["reset", "--edition", "zh_CN", "7"]) == 2
    assert "CHAPTER=7 不是" in capsys.readouterr().err


def test_every_message_is_there_in_every_language():
    english = set(workcopy.MESSAGES["en"])
    assert {language: set(messages) for language, messages in workcopy.MESSAGES.items()} == dict.fromkeys(
        workcopy.EDITIONS, english)


def test_the_copies_are_ignored_by_git_and_kept_by_make_clean():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    for edition in workcopy.EDITIONS.values():
        assert f"{edition.copy.relative_to(ROOT).as_posix()}/" in ignored
        assert edition.source.is_dir()
    clean = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("\trm -rf $(VENV)"))
    assert "my-chapters" not in clean


def test_the_manifest_is_json_a_reader_can_read(tmp_path):
    source, copy = tmp_path / "chapters", tmp_path / "my-chapters"
    write_edition(source, **{"00_start_here": "Start here"})
    workcopy.update(source, copy)
    manifest = json.loads((copy / workcopy.MANIFEST).read_text())
    assert manifest == {"00_start_here.ipynb": workcopy.sha256(source / "00_start_here.ipynb")}


@pytest.mark.parametrize("edition", sorted(workcopy.EDITIONS))
def test_no_chapter_reaches_outside_its_folder(edition):
    # The copy holds the edition's folder and nothing above it: `../` in a link, an image or a path would break there.
    source = workcopy.EDITIONS[edition].source
    for path in sorted(source.glob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            assert "../" not in cell.source, f"{path.relative_to(ROOT)}, cell {index}: a path outside {source.name}/"


@pytest.mark.parametrize("platform, python", [("win32", r".venv\Scripts\python"), ("linux", ".venv/bin/python"),
                                              ("darwin", ".venv/bin/python")])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_newer_edition_message_gives_the_command_as_this_shell_types_it(monkeypatch, platform, python, language):
    monkeypatch.setattr(workcopy.sys, "platform", platform)
    text = workcopy.say(workcopy.EDITIONS[language], "newer", names="04_multi_head_attention.ipynb")
    flag = "" if language == "en" else " --edition zh_CN"
    assert f"`{python} -m tools.workcopy refresh{flag}`" in text  # on Windows `python` may be the Store's alias
