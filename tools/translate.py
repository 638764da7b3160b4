"""Translations of the chapters, kept in gettext PO catalogues: one catalogue per chapter and language.

    python -m tools.translate update [LANG]   # refresh translations/LANG/*.po from the English notebooks/
    python -m tools.translate check [LANG]    # list the blocks that are untranslated or stale; exit 1 if any
    python -m tools.translate build [LANG]    # write the translated notebooks (zh-CN/notebooks/), outputs cleared

The translated edition has the English notebook's code cells, unchanged, and one more code cell after the
Colab install cell, tagged ``language``, that switches mha_lib's printed messages to the language. ``make
zh`` builds it and executes it; ``tests/test_translations.py`` fails when a committed translated notebook is
not what ``build`` makes, or when a catalogue is incomplete or stale.

A markdown cell is cut into blocks at its blank lines (a ``$$`` formula or a fenced code block stays whole);
each block is one catalogue entry: its English text is the ``msgid``, its translation the ``msgstr``. This is
how gettext detects a stale translation: when an English block changes, its old entry no longer matches. The
update keeps that entry's translation as a draft, marked ``fuzzy`` with the previous English text beside it
(``#| msgid``), so a translator sees exactly what changed; ``check`` fails until a person has revised it and
removed the mark. Blocks without words (a lone formula) are not translated. Poedit, Lokalize or any text
editor can edit the catalogues.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import nbformat
import polib

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks"
CATALOGUES = ROOT / "translations"
LANGUAGES = {"zh_CN": "Simplified Chinese"}
EDITIONS = {"zh_CN": ROOT / "zh-CN" / "notebooks"}  # where each language's notebooks are written
LANGUAGE_TAG = "language"
LANGUAGE_CELL = {
    "zh_CN": 'import mha_lib\n\nmha_lib.set_language("zh_CN")  # 练习检查器、表格和图中的文字使用中文',
}
WORD = re.compile(r"[A-Za-z]{2,}")


def split_blocks(markdown: str) -> list[str]:
    """Cut a markdown cell into blocks at its blank lines, never inside a ``$$`` formula or a fenced block."""
    blocks, lines, fence = [], [], None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is None and not stripped and lines:
            blocks.append("\n".join(lines))
            lines = []
            continue
        if fence in (None, "```") and stripped.startswith("```"):
            fence = None if fence else "```"
        elif fence in (None, "$$") and stripped.count("$$") % 2:  # a formula opens or closes on this line
            fence = None if fence else "$$"
        if stripped or lines:
            lines.append(line)
    if lines:
        blocks.append("\n".join(lines))
    return blocks


def needs_translation(block: str) -> bool:
    """A block with words outside its formulas and code; a lone formula is the same in every language."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", block, flags=re.DOTALL)
    return bool(WORD.search(text))


def chapter_blocks(notebook: Path) -> list[tuple[str, str]]:
    """(where, English block) for every block of the chapter's markdown cells that needs translation."""
    nb = nbformat.read(notebook, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found += [(f"{notebook.name}:{index}", block) for block in split_blocks(cell.source)
                      if needs_translation(block)]
    return found


def update_catalogue(notebook: Path, path: Path, language: str) -> polib.POFile:
    """Write ``path`` for ``notebook``: the same translations where the English is unchanged, drafts where not."""
    old = polib.pofile(str(path)) if path.exists() else polib.POFile()
    done = {entry.msgid: entry for entry in old if not entry.obsolete and entry.msgstr}
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {
        "Project-Id-Version": "mha-notebooks",
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    for where, block in chapter_blocks(notebook):
        known = catalogue.find(block)
        if known is not None:
            known.occurrences.append((where, ""))
            continue
        entry = polib.POEntry(msgid=block, occurrences=[(where, "")])
        if block in done:
            entry.msgstr, entry.flags = done[block].msgstr, list(done[block].flags)
            entry.previous_msgid = done[block].previous_msgid
            entry.tcomment = done[block].tcomment
        else:  # a new or changed block: start from the translation of the most similar old block, if any
            close = difflib.get_close_matches(block, list(done), n=1, cutoff=0.6)
            if close:
                entry.msgstr, entry.flags, entry.previous_msgid = done[close[0]].msgstr, ["fuzzy"], close[0]
        catalogue.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalogue.save(str(path))
    return catalogue


def problems(catalogue: polib.POFile) -> list[str]:
    """Human-readable reasons why the catalogue is not ready: untranslated or fuzzy entries."""
    found = []
    for entry in catalogue:
        if entry.obsolete:
            continue
        where = entry.occurrences[0][0] if entry.occurrences else "?"
        first = entry.msgid.split("\n")[0][:60]
        if not entry.msgstr:
            found.append(f"{where}: untranslated: {first!r}")
        elif entry.fuzzy:
            found.append(f"{where}: the English changed, revise the draft: {first!r}")
    return found


def catalogue_path(notebook: Path, language: str) -> Path:
    return CATALOGUES / language / f"{notebook.stem}.po"


def translate_notebook(notebook: Path, language: str) -> nbformat.NotebookNode:
    """The chapter in ``language``: every markdown block translated, the code cells as they are, outputs cleared.

    Raises ValueError naming the first block whose translation is missing or stale.
    """
    catalogue = polib.pofile(str(catalogue_path(notebook, language)))
    ready = {entry.msgid: entry.msgstr for entry in catalogue
             if entry.msgstr and not entry.fuzzy and not entry.obsolete}
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            blocks = split_blocks(cell.source)
            for block in blocks:
                if needs_translation(block) and block not in ready:
                    raise ValueError(f"{notebook.name}: no translation into {language} of the block {block[:80]!r}; "
                                     f"run: python -m tools.translate update {language}, then translate it")
            cell.source = "\n\n".join(ready.get(block, block) for block in blocks)
        elif cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    install = next(index for index, cell in enumerate(nb.cells) if "colab-install" in cell.metadata.get("tags", []))
    switch = nbformat.v4.new_code_cell(LANGUAGE_CELL[language], id=LANGUAGE_TAG,
                                       metadata={"tags": [LANGUAGE_TAG], "slideshow": {"slide_type": "skip"}})
    nb.cells.insert(install + 1, switch)
    return nb


def build(language: str) -> list[Path]:
    """Write the translated notebooks of ``language`` into its edition folder; return their paths."""
    folder = EDITIONS[language]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for notebook in sorted(SOURCE.glob("[0-9][0-9]_*.ipynb")):
        nbformat.write(translate_notebook(notebook, language), folder / notebook.name)
        written.append(folder / notebook.name)
    return written


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("update", "check", "build"):
        print(__doc__)
        return 2
    language = argv[1] if len(argv) > 1 else "zh_CN"
    if language not in LANGUAGES:
        print(f"unknown language {language!r}; known: {', '.join(LANGUAGES)}", file=sys.stderr)
        return 2
    if argv[0] == "build":
        for path in build(language):
            print(f"{path.relative_to(ROOT)} written (outputs cleared: execute it, e.g. make zh)")
        return 0
    failures = 0
    for notebook in sorted(SOURCE.glob("[0-9][0-9]_*.ipynb")):
        path = catalogue_path(notebook, language)
        if argv[0] == "update":
            catalogue = update_catalogue(notebook, path, language)
        else:
            catalogue = polib.pofile(str(path)) if path.exists() else None
            if catalogue is None:
                print(f"{path.relative_to(ROOT)}: missing (run: python -m tools.translate update {language})")
                failures += 1
                continue
        found = problems(catalogue)
        failures += len(found)
        print(f"{path.relative_to(ROOT)}: {len(catalogue)} blocks, {len(found)} to do")
        if argv[0] == "check":
            for line in found:
                print("  " + line)
    return 1 if argv[0] == "check" and failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
