"""Give every chapter a first code cell that installs mha_lib where it is missing, as on Google Colab.

Usage: python tools/colab.py [NOTEBOOK ...]   add or update the cell (default: every chapter of every edition,
                                              notebooks/, chapters/, zh-CN/notebooks/, zh-CN/chapters/)
       python tools/colab.py --check          exit 1 if a notebook of notebooks/ or chapters/ lacks the current
                                              cell or the badges of docs/online.md differ from what --badges prints
       python tools/colab.py --badges         print the badges of docs/online.md: Binder, and Colab for each chapter
       python tools/colab.py --badges --language zh_CN   the same for docs/online.zh-CN.md and the Chinese edition

The repository address lives in one place, ``[project.urls] Repository`` in pyproject.toml; the cell and the
badges are made from it. After changing it, run this tool, remake the reader edition (``make editions``), paste
the output of ``--badges`` into docs/online.md, and ``--check`` passes again. The badges open the reader edition,
``chapters/`` (exercises unsolved, solutions one click away); its notebooks get the install cell from notebooks/.

Where ``import mha_lib`` works (``make lab``, Binder, CI) the cell does nothing and prints nothing, so the
stored outputs and nbval are unaffected. On Colab it pip-installs the collection from its repository; in the
Chinese edition (zh-CN/) it also installs Debian's fonts-noto-cjk there, since Colab has no font with Chinese
glyphs and mha_lib draws the figures' text in Chinese only where it finds one. The Chinese cell is the only code
cell besides the language switch that differs between the editions; tools/translate.py takes it from here.
The cell is found again by its tag, so running the tool twice changes nothing, and a changed cell text
replaces the old one. When the cell is added to an executed notebook, it gets execution count 1 and the
later counts move up by one, so the notebook still reads as run top to bottom in a fresh kernel.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = ROOT / "chapters"  # the reader edition (tools/editions.py): what the Binder and Colab badges open
# The page that holds the badges. The READMEs only link to it: until the collection is published, the address is a
# placeholder and the badges open nothing, so a README must not offer them (issue 35).
BADGE_PAGE = ROOT / "docs" / "online.md"
# Each language's instructor notebooks (their titles), reader edition (what the badges open), badge page, and the
# header of the badge table. The Chinese notebooks are built from the English ones (tools/translate.py).
LANGUAGES = {
    "en": (NOTEBOOKS, CHAPTERS, BADGE_PAGE, "Chapter"),
    "zh_CN": (ROOT / "zh-CN" / "notebooks", ROOT / "zh-CN" / "chapters", ROOT / "docs" / "online.zh-CN.md", "章节"),
}
BRANCH = "main"
TAG = "colab-install"
_GITHUB = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_BADGE_URL = re.compile(r"https://(?:colab\.research\.google\.com/github|mybinder\.org/v2/gh)/[^)\s]+")


def repository_url(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The repository address, ``[project.urls] Repository`` in pyproject.toml: a https://github.com/owner/name."""
    url = tomllib.loads(pyproject.read_text())["project"]["urls"]["Repository"]
    if not _GITHUB.fullmatch(url):
        raise ValueError(f"[project.urls] Repository in {pyproject.name} must be https://github.com/<owner>/<name>, "
                         f"got {url!r}")
    return url


# A placeholder until the collection is published; change it in pyproject.toml only.
REPOSITORY_URL = repository_url()

INSTALL_CELL = f"""\
# On Google Colab, mha_lib is not installed yet: this installs it from the collection's repository.
# Everywhere else (`make lab`, Binder) mha_lib is there already and this cell does nothing.
try:
    import mha_lib  # noqa: F401
except ModuleNotFoundError:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "mha-notebooks @ git+{REPOSITORY_URL}"],
                   check=True)"""

# The Chinese edition's cell: the same, and on Colab a font for the figures' Chinese text (Colab's package lists
# may be stale, so apt-get update runs only when the first try fails). Without it the figures stay English and
# mha_lib.set_language says why.
FONT = "fonts-noto-cjk"
INSTALL_CELL_ZH = f"""\
# 在 Google Colab 上还没有 mha_lib：这个单元格从本系列的仓库安装它，再安装图中中文所需的字体。
# 在其他地方（`make lab-zh`、Binder）mha_lib 已经装好，这个单元格什么也不做。
try:
    import mha_lib  # noqa: F401
except ModuleNotFoundError:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "mha-notebooks @ git+{REPOSITORY_URL}"],
                   check=True)
    if "google.colab" in sys.modules:  # Colab 没有中文字体：安装 Noto Sans CJK（{FONT}）
        apt = "apt-get install --yes --quiet --quiet {FONT} > /dev/null"
        subprocess.run(f"{{apt}} || (apt-get update --quiet --quiet && {{apt}})", shell=True)"""
INSTALL_CELLS = {"en": INSTALL_CELL, "zh_CN": INSTALL_CELL_ZH}


def language_of(path: Path) -> str:
    """The language of a chapter by its folder: "zh_CN" under zh-CN/notebooks or zh-CN/chapters, else "en"."""
    folder = path.resolve().parent
    return next((language for language, (source, reader, _, _) in LANGUAGES.items() if folder in (source, reader)),
                "en")


def is_install_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and TAG in cell.get("metadata", {}).get("tags", [])


def add_install_cell(notebook: nbformat.NotebookNode, language: str = "en") -> bool:
    """Put the current install cell before the first code cell, or refresh it; True if anything changed."""
    source = INSTALL_CELLS[language]
    existing = [cell for cell in notebook.cells if is_install_cell(cell)]
    if existing:
        cell = existing[0]
        if cell.source == source and not cell.outputs:
            return False
        cell.source, cell.outputs = source, []
        return True
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    position = code[0] if code else len(notebook.cells)
    executed = bool(code) and notebook.cells[code[0]].execution_count is not None
    if executed:
        for index in code:
            _shift_execution_count(notebook.cells[index])
    cell = nbformat.v4.new_code_cell(source, execution_count=1 if executed else None,
                                     metadata={"tags": [TAG]})
    if notebook.nbformat_minor < 5:  # cell ids came with nbformat 4.5
        cell.pop("id", None)
    notebook.cells.insert(position, cell)
    return True


def _shift_execution_count(cell: nbformat.NotebookNode) -> None:
    if cell.execution_count is not None:
        cell.execution_count += 1
    for output in cell.outputs:
        if output.get("execution_count") is not None:
            output.execution_count += 1


def is_current(notebook: nbformat.NotebookNode, language: str = "en") -> bool:
    """The notebook's first code cell is the current install cell of its language."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return (bool(code) and is_install_cell(code[0]) and code[0].source == INSTALL_CELLS[language]
            and not code[0].outputs)


def colab_url(path: Path, reader: Path = CHAPTERS) -> str:
    return f"https://colab.research.google.com/github/{_repository()}/blob/{BRANCH}/{_folder(reader)}/{path.name}"


def binder_url(path: Path, reader: Path = CHAPTERS) -> str:
    return f"https://mybinder.org/v2/gh/{_repository()}/HEAD?urlpath=lab/tree/{_folder(reader)}/{path.name}"


def _folder(reader: Path) -> str:
    return reader.relative_to(ROOT).as_posix()


def _repository() -> str:
    return REPOSITORY_URL.removeprefix("https://github.com/")


def badges(paths: list[Path], language: str = "en") -> str:
    """Markdown for docs/online.md: a Binder badge, then one Colab badge per chapter with its title."""
    _, reader, _, header = LANGUAGES[language]
    lines = [f"[![Binder](https://mybinder.org/badge_logo.svg)]({binder_url(paths[0], reader)})", "",
             f"| {header} | Colab |", "| --- | --- |"]
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        heading = next(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
        title = re.match(r"#\s*(.+)", heading.splitlines()[0]).group(1).strip()
        badge = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        lines.append(f"| {title} | {badge}({colab_url(path, reader)}) |")
    return "\n".join(lines)


def readme_drift(readme: str, paths: list[Path], language: str = "en") -> list[str]:
    """What a badge page lacks of the current badges, and badge links in it that are not current ([] if none)."""
    expected = [line for line in badges(paths, language).splitlines() if line]
    present = set(readme.splitlines())
    missing = [f"missing: {line}" for line in expected if line not in present]
    current = set(_BADGE_URL.findall(badges(paths, language)))
    stale = [f"not current: {url}" for url in _BADGE_URL.findall(readme) if url not in current]
    return missing + stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report notebooks without the current cell")
    mode.add_argument("--badges", action="store_true", help="print the badges of docs/online.md")
    parser.add_argument("--language", choices=list(LANGUAGES), default="en", help="which badge page's badges to print")
    args = parser.parse_args(argv)
    if args.badges:
        source = LANGUAGES[args.language][0]
        print(badges(args.notebooks or sorted(source.glob("[0-9][0-9]_*.ipynb")), args.language))
        return 0
    paths = args.notebooks or [path for source, reader, _, _ in LANGUAGES.values() for folder in (source, reader)
                               for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]
    if not args.check:
        for path in paths:
            notebook = nbformat.read(path, as_version=4)
            if add_install_cell(notebook, language_of(path)):
                nbformat.write(notebook, path)
                where = path.resolve()
                print(f"updated {where.relative_to(ROOT) if where.is_relative_to(ROOT) else path}")
        return 0
    # --check: every edition of every language has the current cell, and each badge page the current badges
    stale, drift = [], []
    for language, (source, reader, readme, _) in LANGUAGES.items():
        checked = paths if args.notebooks else [path for folder in (source, reader)
                                                for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]
        for path in checked:
            if not is_current(nbformat.read(path, as_version=4), language_of(path)):
                stale.append(path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name)
        if args.notebooks:
            break
        titles = sorted(source.glob("[0-9][0-9]_*.ipynb"))
        if titles:
            drift += [f"{readme.name}: {line}" for line in readme_drift(readme.read_text(), titles, language)]
    if stale:
        print(f"without the current install cell (run `python tools/colab.py`): {', '.join(stale)}")
    if drift:
        print("The badges of docs/online*.md differ from `python tools/colab.py --badges [--language zh_CN]`:", *drift,
              sep="\n  ")
    return 1 if stale or drift else 0


if __name__ == "__main__":
    sys.exit(main())
