"""Translations of the chapters, kept in gettext PO catalogues: one catalogue per chapter and language.

    python -m tools.translate update [LANG]   # refresh translations/LANG/*.po from the English notebooks/
    python -m tools.translate check [LANG]    # list the blocks that are untranslated or stale; exit 1 if any
    python -m tools.translate build [LANG]    # write the translated notebooks (zh-CN/notebooks/), outputs cleared
    python -m tools.translate update-lib [LANG]  # refresh mha_lib's and mha_chapters' catalogues, compile them

The translated edition has the English notebook's code cells, the same code with their comments and docstrings
translated (tools/code_text.py finds them with Python's tokenizer), but for the Colab install cell (the
language's own, from tools/colab.py), and one more code cell after it, tagged ``language``, that switches
what mha_lib and mha_chapters print to the language. ``make
zh`` builds it and executes it; ``tests/test_translations.py`` fails when a committed translated notebook is
not what ``build`` makes, or when a catalogue is incomplete or stale.

A markdown cell is cut into blocks at its blank lines (a ``$$`` formula or a fenced code block stays whole);
each block is one catalogue entry: its English text is the ``msgid``, its translation the ``msgstr``. This is
how gettext detects a stale translation: when an English block changes, its old entry no longer matches. The
update keeps that entry's translation as a draft, marked ``fuzzy`` with the previous English text beside it
(``#| msgid``), so a translator sees exactly what changed; ``check`` fails until a person has revised it and
removed the mark. Blocks without words (a lone formula) are not translated; a formula that writes words as
``\\text{...}`` (``$$\\text{score bytes} = \\dots$$``) is a block like prose, whose translation changes the words
inside the formula (``\\text{分数字节数}``). A code cell's comments and docstrings are entries of the same
catalogue, after the chapter's markdown: a run of comment lines is one entry (its lines joined by newlines, without
the ``#``; the translation may have more or fewer lines), a comment after code on its line another, a docstring
another; markers (``# NBVAL_IGNORE_OUTPUT``, ``# noqa``, nbgrader's ``### BEGIN SOLUTION``) and ``%magic`` lines
are never entries. The entry's ``#.`` note says which kind it is and whether it is in an exercise's answer cell,
the cell a reader types into. Poedit, Lokalize or any text editor can edit the catalogues.

A cell's speaker notes for the lecture decks (cell metadata ``lecture.notes``, tools/lecture/deck.py) are one
message each, translated into the same catalogue.

The packages' own messages are marked in the source as ``_("English")``, ``N_("English")`` or
``figure_text("English")`` (see mha_lib/i18n.py and mha_chapters/i18n.py): mha_lib's errors, and mha_chapters'
checkers' verdicts and hints, table headers, widget labels and figure text. Each package has its own catalogue,
``PACKAGE/locale/LANG/LC_MESSAGES/PACKAGE.po``; mha_chapters' also holds what the chapters' code cells print
(``tr``, ``figure_text``). ``update-lib`` extracts every such literal with ``ast`` by the same rules (an unchanged
message keeps its translation, a changed one becomes a fuzzy draft with ``#| msgid``) and compiles the ``.mo``
beside each, which is committed so that the packages need no polib. ``check`` checks those catalogues too: every
marked message present and translated, none fuzzy, the same ``{placeholders}`` in the translation, the ``.mo`` up
to date.
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
import tempfile
from pathlib import Path

import nbformat
import polib

from tools import code_text, colab
from tools.editions import is_solution, keep_outputs
from tools.lecture.deck import LECTURE_KEY, speaker_notes
from tools.markdown_blocks import split_blocks

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks"
CATALOGUES = ROOT / "translations"
LANGUAGES = {"zh_CN": "Simplified Chinese"}
EDITIONS = {"zh_CN": ROOT / "zh-CN" / "notebooks"}  # where each language's notebooks are written
LANGUAGE_TAG = "language"
LANGUAGE_CELL = {
    "zh_CN": 'import mha_chapters\n\nmha_chapters.set_language("zh_CN")  # 练习检查器、表格和图中的文字使用中文',
}
WORD = re.compile(r"[A-Za-z]{2,}")
FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", flags=re.DOTALL)
TEXT_IN_FORMULA = re.compile(r"\\text\{([^{}]*)\}")  # \text{score bytes}; \mathrm{softmax} names an operator


def needs_translation(block: str) -> bool:
    """A block with words outside its formulas and code, or with words that a formula writes as text.

    ``$$\\text{score bytes} = \\dots$$`` is translated like prose (its ``msgstr`` has ``\\text{分数字节数}``); a lone
    formula without such words is the same in every language: operators (``\\mathrm{softmax}``) and code names
    (``\\text{num\\_heads}``) are not words to translate.
    """
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", block, flags=re.DOTALL)
    return bool(WORD.search(text)) or any(
        WORD.search(words) and "\\_" not in words
        for formula in FORMULA.findall(re.sub(r"`[^`]*`", " ", block)) for words in TEXT_IN_FORMULA.findall(formula))


def chapter_blocks(notebook: Path) -> list[tuple[str, str]]:
    """(where, English text) for every block of the chapter's markdown cells that needs translation, then every
    comment and docstring of its code cells (:func:`code_texts`)."""
    nb = nbformat.read(notebook, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found += [(f"{notebook.name}:{index}", block) for block in split_blocks(cell.source)
                      if needs_translation(block)]
        notes = speaker_notes(cell)
        if notes:  # a lecture deck's speaker notes (tools/lecture/deck.py), one message each
            found.append((f"{notebook.name}:{index}:notes", notes))
    return found + [(where, text) for where, text, _note in code_texts(notebook)]


CODE_NOTES = {"comment": "code comment", "inline": "comment after code", "docstring": "docstring"}


def code_texts(notebook: Path) -> list[tuple[str, str, str]]:
    """(where, English text, note) for every comment and docstring of the chapter's code cells (not the Colab
    install cell, which is the language's own). The note says what the text is: ``code comment``, ``comment after
    code`` or ``docstring``, with ``, answer cell`` in an exercise's answer cell (the stub keeps its comments)."""
    nb = nbformat.read(notebook, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and not colab.is_install_cell(cell):
            answer = ", answer cell" if is_solution(cell) else ""
            found += [(f"{notebook.name}:{index}", text.message, CODE_NOTES[text.kind] + answer)
                      for text in code_text.texts(cell.source)]
    return found


def merge_catalogue(path: Path, messages: list[tuple[str, list[tuple[str, str]]]],
                    metadata: dict[str, str]) -> polib.POFile:
    """Write ``path`` with ``messages`` (English text, where it occurs), as gettext's msgmerge does.

    A message whose English is unchanged keeps its translation; a new or changed one starts from the
    translation of the most similar old message, if any, marked ``fuzzy`` with that message as ``previous_msgid``.
    """
    old = polib.pofile(str(path)) if path.exists() else polib.POFile()
    done = {entry.msgid: entry for entry in old if not entry.obsolete and entry.msgstr}
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {"MIME-Version": "1.0", "Content-Type": "text/plain; charset=UTF-8",
                          "Content-Transfer-Encoding": "8bit", **metadata}
    for message, occurrences in messages:
        known = catalogue.find(message)
        if known is not None:
            known.occurrences += occurrences
            continue
        entry = polib.POEntry(msgid=message, occurrences=list(occurrences))
        if message in done:
            entry.msgstr, entry.flags = done[message].msgstr, list(done[message].flags)
            entry.previous_msgid, entry.tcomment = done[message].previous_msgid, done[message].tcomment
        else:
            close = difflib.get_close_matches(message, list(done), n=1, cutoff=0.6)
            if close:
                entry.msgstr, entry.flags, entry.previous_msgid = done[close[0]].msgstr, ["fuzzy"], close[0]
        catalogue.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalogue.save(str(path))
    return catalogue


def update_catalogue(notebook: Path, path: Path, language: str) -> polib.POFile:
    """Write ``path`` for ``notebook``: the same translations where the English is unchanged, drafts where not."""
    blocks = [(block, [(where, "")]) for where, block in chapter_blocks(notebook)]
    catalogue = merge_catalogue(path, blocks, {"Project-Id-Version": "mha-notebooks", "Language": language})
    notes: dict[str, list[str]] = {}
    for _where, text, note in code_texts(notebook):
        notes.setdefault(text, []).append(note)
    for entry in catalogue:
        entry.comment = "; ".join(sorted(set(notes[entry.msgid]))) if entry.msgid in notes else ""
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
    """The chapter in ``language``: every markdown block translated, the code cells' comments and docstrings
    translated and their code as it is, outputs cleared.

    Raises ValueError naming the first block, comment or docstring whose translation is missing or stale.
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
            if colab.is_install_cell(cell):
                continue
            for text in code_text.texts(cell.source):
                if text.message not in ready:
                    raise ValueError(f"{notebook.name}: no translation into {language} of the {CODE_NOTES[text.kind]} "
                                     f"{text.message[:80]!r}; run: python -m tools.translate update {language}, "
                                     "then translate it")
            cell.source = code_text.translate(cell.source, ready)
        notes = speaker_notes(cell)
        if notes:
            if notes not in ready:
                raise ValueError(f"{notebook.name}: no translation into {language} of the speaker notes {notes[:80]!r};"
                                 f" run: python -m tools.translate update {language}, then translate them")
            cell.metadata[LECTURE_KEY] = {**cell.metadata[LECTURE_KEY], "notes": ready[notes]}
    install = next(index for index, cell in enumerate(nb.cells) if colab.is_install_cell(cell))
    nb.cells[install].source = colab.INSTALL_CELLS[language]  # on Colab it also installs a CJK font
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
        translated = translate_notebook(notebook, language)
        keep_outputs(translated, folder / notebook.name, keep_slides=True)  # a better translation needs no new run
        nbformat.write(translated, folder / notebook.name)
        written.append(folder / notebook.name)
    return written


LIBRARY = ROOT / "mha_lib"
CHAPTERS = ROOT / "mha_chapters"  # its catalogue also holds the chapters' code cells' messages
PACKAGES = (LIBRARY, CHAPTERS)
# Modules outside a package whose messages a package's catalogue holds: the grader's (it translates them with
# mha_chapters.i18n, so a Chinese course's feedback is in Chinese)
ALSO = {CHAPTERS: (ROOT / "tools" / "autograde.py",)}
MARKERS = ("_", "N_", "tr", "figure_text")  # the functions of mha_lib.i18n and mha_chapters.i18n that mark one
PLACEHOLDER = re.compile(r"{([^{}]*)}")


def marked_literals(tree: ast.AST) -> list[tuple[str, int]]:
    """(message, line) for every literal in ``tree`` marked ``_("...")``, ``N_``, ``tr`` or ``figure_text``.

    Babel's extractor (``pybabel extract -k tr -k N_ -k figure_text``) would be the kept tool, but Babel 2.18 on
    Python 3.11 reads an f-string as one token and misses the marks inside all but the first field: three of the
    four labels of mha_chapters/explorer.py's SVG heatmap (tests/test_translations.py,
    ``test_a_mark_inside_an_f_string_is_found``). Python's own parser sees every call."""
    return [(node.args[0].value, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str) and node.args[0].value]


def library_messages(package: Path = LIBRARY) -> dict[str, list[tuple[str, str]]]:
    """Every marked literal of the package, then of the chapters' code cells: message -> [(file, line), ...].

    A chapter's message is found at (notebook, ``cell N``): what its code cells print and draw in the reader's
    language. It shares mha_chapters' catalogue, so one message has one translation in the chapters and their
    helpers. (Another package, mha_lib or one made by the tests, has none.)
    """
    from IPython.core.inputtransformer2 import TransformerManager  # turns %magic and !shell lines into Python

    found: dict[str, list[tuple[str, str]]] = {}
    for path in [*sorted(package.rglob("*.py")), *ALSO.get(package, ())]:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for message, line in marked_literals(tree):
            found.setdefault(message, []).append((path.relative_to(package.parent).as_posix(), str(line)))
    for notebook in sorted(SOURCE.glob("[0-9][0-9]_*.ipynb")) if package == CHAPTERS else []:
        for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
            if cell.cell_type == "code":
                tree = ast.parse(TransformerManager().transform_cell(cell.source))
                for message, _line in marked_literals(tree):
                    found.setdefault(message, []).append((notebook.relative_to(ROOT).as_posix(), f"cell {index}"))
    return found


def library_catalogue_path(language: str, package: Path = LIBRARY) -> Path:
    return package / "locale" / language / "LC_MESSAGES" / f"{package.name}.po"


def placeholders(message: str) -> list[str]:
    """The ``str.format`` fields of a message, sorted: ``"{shape} vs {expected_shape}"`` -> both names."""
    return sorted(PLACEHOLDER.findall(message))


def update_library_catalogue(language: str, package: Path = LIBRARY) -> polib.POFile:
    """Merge the package's marked messages into its PO catalogue and compile the ``.mo`` beside it."""
    path = library_catalogue_path(language, package)
    catalogue = merge_catalogue(path, list(library_messages(package).items()),
                                {"Project-Id-Version": package.name, "Language": language,
                                 "Plural-Forms": "nplurals=1; plural=0;"})
    catalogue.save_as_mofile(str(path.with_suffix(".mo")))
    return catalogue


def compiled(catalogue: polib.POFile) -> bytes:
    """The ``.mo`` bytes of a catalogue (fuzzy and untranslated entries are left out, as msgfmt does)."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "catalogue.mo"
        catalogue.save_as_mofile(str(target))
        return target.read_bytes()


def library_problems(language: str, package: Path = LIBRARY) -> list[str]:
    """Why a package's catalogue is not ready: a marked message missing, untranslated, fuzzy, placeholders that
    differ, or a ``.mo`` that is not the compiled ``.po``."""
    path = library_catalogue_path(language, package)
    if not path.exists():
        return [f"{path.name}: missing (run: python -m tools.translate update-lib {language})"]
    catalogue = polib.pofile(str(path))
    found = problems(catalogue)
    known = {entry.msgid for entry in catalogue if not entry.obsolete}
    for message, occurrences in library_messages(package).items():
        if message not in known:
            found.append(f"{':'.join(occurrences[0])}: not in the catalogue (run update-lib): {message[:60]!r}")
    for entry in catalogue:
        if entry.msgstr and not entry.obsolete and placeholders(entry.msgid) != placeholders(entry.msgstr):
            found.append(f"{entry.occurrences[0][0]}: the translation's placeholders "
                         f"{placeholders(entry.msgstr)} differ from {placeholders(entry.msgid)}: {entry.msgid[:60]!r}")
    mo = path.with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != compiled(catalogue):
        found.append(f"{mo.name}: not the compiled {path.name} (run update-lib)")
    return found


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("update", "check", "build", "update-lib"):
        print(__doc__)
        return 2
    language = argv[1] if len(argv) > 1 else "zh_CN"
    if language not in LANGUAGES:
        print(f"unknown language {language!r}; known: {', '.join(LANGUAGES)}", file=sys.stderr)
        return 2
    if argv[0] == "build":
        for path in build(language):
            print(f"{path.relative_to(ROOT)} written (outputs kept where no code changed; make zh executes it)")
        return 0
    if argv[0] == "update-lib":
        for package in PACKAGES:
            catalogue = update_library_catalogue(language, package)
            found = library_problems(language, package)
            print(f"{library_catalogue_path(language, package).relative_to(ROOT)}: {len(catalogue)} messages, "
                  f"{len(found)} to do")
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
    for package in PACKAGES if argv[0] == "check" else ():
        found = library_problems(language, package)
        failures += len(found)
        print(f"{library_catalogue_path(language, package).relative_to(ROOT)}: {len(found)} to do")
        for line in found:
            print("  " + line)
    return 1 if argv[0] == "check" and failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
