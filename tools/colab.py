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
stored outputs and nbval are unaffected. Where it is missing, the cell installs on Colab the collection's latest
release (the tag ``vVERSION`` of ``latest_release()``, which the badges open too, so chapter and library match) and
elsewhere prints one line, in the edition's language, that says what to do; a failed install is one line too. In the
Chinese edition (zh-CN/) it also installs Debian's fonts-noto-cjk on Colab, which has no font with Chinese glyphs;
mha_lib draws the figures' text in Chinese only where it finds one. The cell is folded in every edition
(``jupyter.source_hidden``). The Chinese cell is the only code cell besides the language switch that differs between
the editions; tools/translate.py takes it from here.
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
from packaging.version import Version

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
BOOK_LINK = {"en": "the book, online", "zh_CN": "在线阅读本书"}
TAG = "colab-install"
_GITHUB = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_BADGE_URL = re.compile(r"https://(?:colab\.research\.google\.com/github|mybinder\.org/v2/gh|github\.com/[^/)\s]+/[^/)\s]+/actions"
                        r"|[a-z0-9-]+\.github\.io)/[^)\s]*")


def repository_url(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The repository address, ``[project.urls] Repository`` in pyproject.toml: a https://github.com/owner/name."""
    url = tomllib.loads(pyproject.read_text())["project"]["urls"]["Repository"]
    if not _GITHUB.fullmatch(url):
        raise ValueError(f"[project.urls] Repository in {pyproject.name} must be https://github.com/<owner>/<name>, "
                         f"got {url!r}")
    return url


# A placeholder until the collection is published; change it in pyproject.toml only.
REPOSITORY_URL = repository_url()

def latest_release(library: Path = ROOT / "mha_lib" / "__init__.py") -> str:
    """The release the chapters belong to: ``mha_lib.__version__`` itself at a release, the release before it
    between releases (2026.11.0.post0.dev0 is on its way from 2026.11.0 to the next)."""
    version = re.search(r'^__version__ = "([^"]+)"', library.read_text(), re.MULTILINE).group(1)
    return Version(version).base_version


# The release the install cell installs and the badges open, by its tag (tools/release.py makes the release; after
# `python -m tools.release prepare VERSION`, run this tool so the release commit's chapters pin that release).
RELEASE = latest_release()
REF = f"v{RELEASE}"
REQUIREMENT = f"mha-notebooks @ git+{REPOSITORY_URL}@{REF}"

# The cell does nothing where mha_lib is installed. Where it is missing, it installs the release on Colab and says in
# one line what to do anywhere else, or when the install fails: never a traceback (issue 53). Hidden in every
# edition (``jupyter.source_hidden``): a reader sees a folded cell, not pip boilerplate, and can unfold it.
INSTALL_CELL = f"""\
# Where mha_lib is missing: on Google Colab, install the collection's release {RELEASE}; elsewhere, say what to do.
import sys

try:
    import mha_lib  # noqa: F401
except ModuleNotFoundError:
    if "google.colab" in sys.modules:
        import subprocess

        release = "{REQUIREMENT}"
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", release],
                             capture_output=True, text=True)
        if pip.returncode != 0:
            print("mha_lib could not be installed (pip: " + (pip.stderr.strip().splitlines() or ["no message"])[-1]
                  + "): run this cell again, or run the chapter on your own computer "
                    "(README, Set up and open the chapters).")
    else:
        print("This kernel has no mha_lib: in the collection's folder, run `python3 -m tools.start` "
              "(Windows: `py -m tools.start`): it sets everything up and opens the chapters (README).")"""

# The Chinese edition's cell: the same, with its lines in Chinese, and on Colab a font for the figures' Chinese text
# (Colab's package lists may be stale, so apt-get update runs only when the first try fails). Without the font the
# figures stay English and mha_lib.set_language says why.
FONT = "fonts-noto-cjk"
INSTALL_CELL_ZH = f"""\
# 缺少 mha_lib 时：在 Google Colab 上安装本系列的 {RELEASE} 版及图中中文所需的字体；在其他地方说明该怎么做。
import sys

try:
    import mha_lib  # noqa: F401
except ModuleNotFoundError:
    if "google.colab" in sys.modules:
        import subprocess

        release = "{REQUIREMENT}"
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", release],
                             capture_output=True, text=True)
        if pip.returncode != 0:
            print("无法安装 mha_lib（pip：" + (pip.stderr.strip().splitlines() or ["没有信息"])[-1]
                  + "）：请再运行一次这个单元格，或在自己的电脑上运行本章（见 README.zh-CN.md 的“安装并打开各章”）。")
        else:  # Colab 没有中文字体：安装 Noto Sans CJK（{FONT}）
            apt = "apt-get install --yes --quiet --quiet {FONT} > /dev/null"
            subprocess.run(f"{{apt}} || (apt-get update --quiet --quiet && {{apt}})", shell=True)
    else:
        print("这个内核里没有 mha_lib：请在本系列的文件夹中运行 `python3 -m tools.start`"
              "（Windows 上为 `py -m tools.start`），它会安装所需的一切并打开各章（见 README.zh-CN.md）。")"""
HIDDEN = {"jupyter": {"source_hidden": True}}
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
        if cell.source == source and not cell.outputs and _hidden(cell):
            return False
        cell.source, cell.outputs = source, []
        cell.metadata.update(HIDDEN)
        return True
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    position = code[0] if code else len(notebook.cells)
    executed = bool(code) and notebook.cells[code[0]].execution_count is not None
    if executed:
        for index in code:
            _shift_execution_count(notebook.cells[index])
    cell = nbformat.v4.new_code_cell(source, execution_count=1 if executed else None,
                                     metadata={"tags": [TAG], **HIDDEN})
    if notebook.nbformat_minor < 5:  # cell ids came with nbformat 4.5
        cell.pop("id", None)
    notebook.cells.insert(position, cell)
    return True


def _hidden(cell: nbformat.NotebookNode) -> bool:
    return cell.metadata.get("jupyter", {}).get("source_hidden") is True


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
            and not code[0].outputs and _hidden(code[0]))


def colab_url(path: Path, reader: Path = CHAPTERS) -> str:
    return f"https://colab.research.google.com/github/{_repository()}/blob/{REF}/{_folder(reader)}/{path.name}"


def binder_url(path: Path, reader: Path = CHAPTERS) -> str:
    return f"https://mybinder.org/v2/gh/{_repository()}/{REF}?urlpath=lab/tree/{_folder(reader)}/{path.name}"


def _folder(reader: Path) -> str:
    return reader.relative_to(ROOT).as_posix()


def _repository() -> str:
    return REPOSITORY_URL.removeprefix("https://github.com/")


def ci_badge() -> str:
    """The status of .github/workflows/setup.yml (the set-up and chapter 00 on Linux, macOS and Windows)."""
    workflow = f"{REPOSITORY_URL}/actions/workflows/setup.yml"
    return f"[![set-up on every OS]({workflow}/badge.svg)]({workflow})"


def book_url() -> str:
    """Where .github/workflows/book.yml publishes the book: the repository's GitHub Pages."""
    owner, name = _repository().split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def badges(paths: list[Path], language: str = "en") -> str:
    """Markdown for docs/online.md: the CI status and the book's address, a Binder badge, then one Colab badge per
    chapter with its title."""
    _, reader, _, header = LANGUAGES[language]
    lines = [f"{ci_badge()} · [{BOOK_LINK[language]}]({book_url()})", "",
             f"[![Binder](https://mybinder.org/badge_logo.svg)]({binder_url(paths[0], reader)})", "",
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
