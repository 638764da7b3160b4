"""A reader's own copy of a reader edition: the answers typed there survive `git pull`.

    python -m tools.workcopy update  [--edition zh_CN]           # make the copy, add new chapters (`make lab`)
    python -m tools.workcopy status  [--edition zh_CN]           # chapters with a newer edition, chapters you changed
    python -m tools.workcopy reset   [--edition zh_CN] CHAPTER   # a fresh copy of one chapter (`make reset CHAPTER=04`)
    python -m tools.workcopy refresh [--edition zh_CN]           # take in every newer chapter (`make refresh`)

The reader edition ``chapters/`` is tracked by git, so an answer typed into it makes the next `git pull` stop
("Your local changes to the following files would be overwritten by merge"). A reader works in a copy instead,
``my-chapters/`` (``my-chapters-zh/`` for ``zh-CN/chapters/``), which git ignores and which is made on first use.
No change of the reader's is ever lost: ``update`` only adds what the copy lacks, and ``reset`` and ``refresh``
first move the reader's file into the copy's ``backups/`` folder.

The copy remembers, in its hidden ``.workcopy.json``, the SHA-256 of every file as it was copied. That tells a
chapter that changed upstream (a newer edition came with `git pull`) from one the reader changed, or both.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ".workcopy.json"  # {relative path: SHA-256 of the file as it was copied}
BACKUPS = "backups"


@dataclass(frozen=True)
class Edition:
    """A reader edition, the folder of the reader's copy, and the make targets that act on it."""

    language: str  # of the chapters, and of what the command line prints
    source: Path  # the edition, tracked by git
    copy: Path  # the reader's copy, ignored by git
    make_suffix: str  # `make lab{suffix}`, `make refresh{suffix}`, `make reset{suffix}`


EDITIONS = {edition.language: edition for edition in [
    Edition("en", ROOT / "chapters", ROOT / "my-chapters", ""),
    Edition("zh_CN", ROOT / "zh-CN" / "chapters", ROOT / "my-chapters-zh", "-zh"),
]}


@dataclass(frozen=True)
class FileState:
    """One file of the edition, compared with the reader's copy of it."""

    name: str  # path relative to the edition, with "/"
    in_copy: bool  # the copy has the file
    upstream_changed: bool  # the edition's file is not the one that was copied
    edited: bool  # the reader's file is not the one that was copied (saved from JupyterLab counts)


def edition_files(source: Path) -> list[str]:
    """The files of an edition, relative to it: notebooks and anything beside them, hidden entries left out."""
    if not source.is_dir():
        raise NotADirectoryError(f"source: {source} is not a folder")
    return sorted(path.relative_to(source).as_posix() for path in source.rglob("*")
                  if path.is_file() and not any(part.startswith(".") for part in path.relative_to(source).parts))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(copy: Path) -> dict[str, str]:
    path = copy / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def write_manifest(copy: Path, manifest: dict[str, str]) -> None:
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _copy_file(source: Path, copy: Path, name: str, manifest: dict[str, str]) -> None:
    target = copy / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / name, target)
    manifest[name] = sha256(target)


def update(source: Path, copy: Path) -> list[str]:
    """Make ``copy`` from ``source`` on first use; later, copy only the files it lacks. Returns the files added."""
    files = edition_files(source)
    copy.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(copy)
    added = [name for name in files if not (copy / name).exists()]
    for name in added:
        _copy_file(source, copy, name, manifest)
    if added or not (copy / MANIFEST).exists():
        write_manifest(copy, manifest)
    return added


def status(source: Path, copy: Path) -> list[FileState]:
    """Every file of the edition: whether the copy has it, and whether the edition or the reader changed it."""
    manifest = read_manifest(copy)
    states = []
    for name in edition_files(source):
        mine = copy / name
        if not mine.is_file():
            states.append(FileState(name, in_copy=False, upstream_changed=False, edited=False))
            continue
        upstream, current, copied = sha256(source / name), sha256(mine), manifest.get(name)
        if copied is None:  # put there by hand, or the manifest was lost: a difference may be the reader's
            differs = current != upstream
            states.append(FileState(name, in_copy=True, upstream_changed=differs, edited=differs))
        else:
            states.append(FileState(name, in_copy=True, upstream_changed=upstream not in (copied, current),
                                    edited=current != copied))
    return states


class UnknownChapter(ValueError):
    """A CHAPTER that names no chapter of the edition."""

    def __init__(self, chapter: str, source: Path, numbers: str):
        super().__init__(f"CHAPTER={chapter} names no chapter of {source}: give its number ({numbers}) "
                         "or its file name")
        self.chapter, self.numbers = chapter, numbers


def find_chapter(source: Path, chapter: str) -> str:
    """The notebook of ``source`` that ``chapter`` names: ``4``, ``04``, ``04_multi_head_attention`` or a file name."""
    notebooks = [name for name in edition_files(source) if name.endswith(".ipynb") and "/" not in name]
    wanted = chapter.strip().removesuffix(".ipynb")
    if wanted.isdigit():
        matches = [name for name in notebooks if name.startswith(f"{int(wanted):02d}_")]
    else:
        matches = [name for name in notebooks if name.removesuffix(".ipynb") == wanted]
    if len(matches) != 1:
        raise UnknownChapter(chapter, source, ", ".join(name.split("_", 1)[0] for name in notebooks))
    return matches[0]


def back_up(copy: Path, name: str) -> Path:
    """Move the reader's ``copy/name`` to ``copy/backups/``, stamped with the time; returns where it went."""
    mine = copy / name
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = copy / BACKUPS / f"{mine.stem}-{stamp}{mine.suffix}"
    number = 1
    while backup.exists():  # twice in the same second
        number += 1
        backup = copy / BACKUPS / f"{mine.stem}-{stamp}-{number}{mine.suffix}"
    backup.parent.mkdir(parents=True, exist_ok=True)
    mine.replace(backup)
    return backup


def reset(source: Path, copy: Path, chapter: str) -> tuple[str, Path | None]:
    """Replace one chapter of ``copy`` by the edition's, moving the reader's file to backups/ first.

    Returns the chapter's file name and its backup (None when the copy did not have it)."""
    name = find_chapter(source, chapter)
    copy.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(copy)
    backup = back_up(copy, name) if (copy / name).exists() else None
    _copy_file(source, copy, name, manifest)
    write_manifest(copy, manifest)
    return name, backup


def refresh(source: Path, copy: Path) -> list[tuple[str, Path | None]]:
    """Take in every file with a newer edition, and add new ones; each file replaced is backed up first.

    Every one, not only those changed since they were copied: a copy made from a ``chapters/`` the reader had
    already typed answers into records those answers as "as copied". Returns (file, its backup or None) for each
    file replaced or added."""
    manifest = read_manifest(copy)
    changed = []
    for state in status(source, copy):
        if state.in_copy and not state.upstream_changed:
            continue
        backup = back_up(copy, state.name) if state.in_copy else None
        _copy_file(source, copy, state.name, manifest)
        changed.append((state.name, backup))
    write_manifest(copy, manifest)
    return changed


# --- the command line (`make lab`, `make reset`, `make refresh` and their -zh twins) -------------------------------

# What the command line prints, in the language of the edition (a reader of zh-CN/chapters/ reads Chinese)
MESSAGES = {
    "en": {
        "made": "==> Made {copy}/, your own copy of {source}/: your answers live there, and `git pull` never "
                "touches it (git ignores it).",
        "added": "==> New in {source}/, now in {copy}/ too: {names}",
        "newer": "==> {source}/ has a newer edition of {names}; your copy is as it was. `make refresh{suffix}` "
                 "(without make: `{python} -m tools.workcopy refresh{flag}`) takes it in and "
                 "keeps your file in {copy}/backups/.",
        "reset": "==> {path} is the edition's again",
        "refreshed": "==> {path}: the newer edition",
        "kept": "; yours is {backup}",
        "up to date": "==> {copy}/ has the newest edition of every chapter",
        "unknown chapter": "error: CHAPTER={chapter} names no chapter of {source}/: give its number ({numbers}) "
                           "or its file name",
        "lab": "==> JupyterLab in {copy}/, without nbgrader's tools (lecturers: make lab-instructor)",
        "as copied": "as copied", "not copied": "not in your copy yet", "newer edition": "newer edition",
        "edited": "changed by you",
    },
    "zh_CN": {
        "made": "==> 已创建 {copy}/，这是 {source}/ 的你自己的副本：答案写在这里。"
                "Git 忽略它，`git pull` 永远不会碰它。",
        "added": "==> {source}/ 中新增的章节已复制到 {copy}/：{names}",
        "newer": "==> {source}/ 中有 {names} 的新版本；你的副本保持原样。`make refresh{suffix}`（没有 make 时："
                 "`{python} -m tools.workcopy refresh{flag}`）会换成新版本，"
                 "并把你的文件保存在 {copy}/backups/。",
        "reset": "==> {path} 已恢复为当前版本",
        "refreshed": "==> {path}：已换成新版本",
        "kept": "；你原来的文件在 {backup}",
        "up to date": "==> {copy}/ 中的每一章都已是最新版本",
        "unknown chapter": "错误：CHAPTER={chapter} 不是 {source}/ 中的章节，请写章节编号（{numbers}）或文件名",
        "lab": "==> 在 {copy}/ 中启动 JupyterLab，不带 nbgrader 的工具（教师请用 make lab-instructor）",
        "as copied": "与复制时相同", "not copied": "尚未复制到你的副本", "newer edition": "有新版本",
        "edited": "你改过",
    },
}


def say(edition: Edition, message: str, **fields: object) -> str:
    """``MESSAGES[language][message]`` for ``edition``, with its folders, make suffix and --edition flag filled in."""
    flag = "" if edition.language == "en" else f" --edition {edition.language}"
    python = r".venv\Scripts\python" if sys.platform == "win32" else ".venv/bin/python"  # as typed in this OS's shell
    return MESSAGES[edition.language][message].format(source=_show(edition.source), copy=_show(edition.copy),
                                                      suffix=edition.make_suffix, flag=flag, python=python, **fields)


def _show(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def bring_up_to_date(edition: Edition) -> None:
    """``update`` the reader's copy of ``edition``, saying what it did and which chapters have a newer edition."""
    first_use = not edition.copy.exists()
    added = update(edition.source, edition.copy)
    if first_use:
        print(say(edition, "made"))
    elif added:
        print(say(edition, "added", names=", ".join(added)))
    newer = [state.name for state in status(edition.source, edition.copy) if state.upstream_changed]
    if newer:
        print(say(edition, "newer", names=", ".join(newer)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["update", "status", "reset", "refresh"])
    parser.add_argument("chapter", nargs="?", metavar="CHAPTER", help="reset only: the chapter, e.g. 04")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="en")
    args = parser.parse_intermixed_args(argv)  # `reset --edition zh_CN 04` as well as `reset 04 --edition zh_CN`
    edition = EDITIONS[args.edition]
    source, copy = edition.source, edition.copy
    if (args.command == "reset") != (args.chapter is not None):
        parser.error("CHAPTER: reset needs one (make reset CHAPTER=04), and only reset takes one")

    def kept(backup: Path | None) -> str:
        return say(edition, "kept", backup=_show(backup)) if backup else ""

    if args.command == "update":
        bring_up_to_date(edition)
    elif args.command == "status":
        for state in status(source, copy):
            notes = [say(edition, note) for note, flag in [("not copied", not state.in_copy),
                                                           ("newer edition", state.upstream_changed),
                                                           ("edited", state.edited)] if flag]
            print(f"{state.name:50} {', '.join(notes) or say(edition, 'as copied')}")
    elif args.command == "reset":
        try:
            name, backup = reset(source, copy, args.chapter)
        except UnknownChapter as error:
            print(say(edition, "unknown chapter", chapter=error.chapter, numbers=error.numbers), file=sys.stderr)
            return 2
        print(say(edition, "reset", path=_show(copy / name)) + kept(backup))
    else:
        changed = refresh(source, copy)
        for name, backup in changed:
            print(say(edition, "refreshed", path=_show(copy / name)) + kept(backup))
        if not changed:
            print(say(edition, "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
