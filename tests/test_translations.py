"""The Chinese edition is the English one, translated: the same code, every block translated, none stale.

`tools/translate.py` keeps a gettext catalogue per chapter (translations/zh_CN/*.po) and builds the Chinese
notebooks (zh-CN/notebooks/) from the English ones; these tests fail when a translation is missing or stale,
or when a committed Chinese notebook is not what the tool builds from the English one today.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import polib
import pytest

from tools import code_text, colab, editions, translate

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LANGUAGES = list(translate.LANGUAGES)


def test_every_chapter_has_a_translation_in_every_language():
    for language in LANGUAGES:
        built = sorted(path.name for path in translate.EDITIONS[language].glob("*.ipynb"))
        assert built == [chapter.name for chapter in CHAPTERS], language


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_the_catalogue_holds_exactly_the_english_blocks_all_translated(chapter, language):
    catalogue = polib.pofile(str(translate.catalogue_path(chapter, language)))
    english = {block for _, block in translate.chapter_blocks(chapter)}
    entries = {entry.msgid for entry in catalogue if not entry.obsolete}
    assert english <= entries, (f"English blocks without an entry (changed since the translation?): run "
                                f"python -m tools.translate update {language}: {sorted(english - entries)[:2]}")
    assert entries <= english, f"entries whose English is gone: run the update: {sorted(entries - english)[:2]}"
    assert translate.problems(catalogue) == []


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_the_committed_translation_is_what_the_tool_builds_today(chapter, language):
    committed = nbformat.read(translate.EDITIONS[language] / chapter.name, as_version=4)
    built = translate.translate_notebook(chapter, language)
    assert [cell.cell_type for cell in committed.cells] == [cell.cell_type for cell in built.cells]
    for index, (got, want) in enumerate(zip(committed.cells, built.cells, strict=True)):
        assert got.source == want.source, f"cell {index} is stale: run python -m tools.translate build, then execute"
        assert got.metadata.get("tags", []) == want.metadata.get("tags", []), index


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_the_code_cells_are_the_english_ones_but_for_the_language_switch(chapter, language):
    """The same code: only comments and docstrings differ (they are translated), compared token by token."""
    english = [code_text.code_only(cell.source) for cell in nbformat.read(chapter, as_version=4).cells
               if cell.cell_type == "code" and not colab.is_install_cell(cell)]
    translated = nbformat.read(translate.EDITIONS[language] / chapter.name, as_version=4)
    code = [cell for cell in translated.cells if cell.cell_type == "code"]
    switches = [cell for cell in code if translate.LANGUAGE_TAG in cell.metadata.get("tags", [])]
    assert len(switches) == 1 and f'set_language("{language}")' in switches[0].source
    installs = [cell for cell in code if colab.is_install_cell(cell)]  # the language's own: Colab gets a font
    assert [cell.source for cell in installs] == [colab.INSTALL_CELLS[language]]
    assert [code_text.code_only(cell.source) for cell in code if cell not in switches + installs] == english


def test_a_changed_english_block_makes_its_translation_a_draft(tmp_path, monkeypatch):
    """The gettext rule: an edited English block keeps its old translation, marked fuzzy, so check fails."""
    chapter = tmp_path / "notebooks" / "99_demo.ipynb"
    chapter.parent.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · Demo\n\nHeads attend in parallel.")])
    nbformat.write(nb, chapter)
    catalogue_file = tmp_path / "demo.po"
    catalogue = translate.update_catalogue(chapter, catalogue_file, "zh_CN")
    assert len(translate.problems(catalogue)) == 2  # nothing translated yet
    for entry, text in zip(catalogue, ["# 99 · 演示", "各个头并行地计算注意力。"], strict=True):
        entry.msgstr = text
    catalogue.save(str(catalogue_file))
    nb.cells[0].source = "# 99 · Demo\n\nAll heads attend in parallel."
    nbformat.write(nb, chapter)
    catalogue = translate.update_catalogue(chapter, catalogue_file, "zh_CN")
    (problem,) = translate.problems(catalogue)
    assert "the English changed" in problem
    draft = catalogue.find("All heads attend in parallel.")
    assert draft.fuzzy and draft.msgstr == "各个头并行地计算注意力。"
    assert draft.previous_msgid == "Heads attend in parallel."
    with pytest.raises(ValueError, match="no translation into zh_CN"):
        monkeypatch.setattr(translate, "catalogue_path", lambda notebook, language: catalogue_file)
        translate.translate_notebook(chapter, "zh_CN")


@pytest.mark.parametrize("markdown, blocks", [
    ("One.\n\nTwo\nlines.", ["One.", "Two\nlines."]),
    ("Text\n\n$$\na\n\nb\n$$\n\nMore", ["Text", "$$\na\n\nb\n$$", "More"]),
    ("```python\nx = 1\n\ny = 2\n```", ["```python\nx = 1\n\ny = 2\n```"]),
    ("$$x = y$$\n\nAfter", ["$$x = y$$", "After"]),
])
def test_blocks_split_at_blank_lines_but_never_inside_a_formula_or_code(markdown, blocks):
    assert translate.split_blocks(markdown) == blocks


@pytest.mark.parametrize("block, translated", [
    ("A sentence with $x$ and `code`.", True),
    ("$$\\mathrm{softmax}\\!\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right) V$$", False),  # an operator is no word
    ("$$i = b \\cdot \\text{num\\_heads} + h ,$$", False),  # nor is a code name
    ("$$\n\\text{FLOPs} = n^2 \\qquad\\text{and}\\qquad \\text{score bytes} = n^2\n$$", True),
    ("$$x = \\underbrace{W^\\top W}_{\\text{absorbed}} y$$", True),
])
def test_a_formula_that_writes_words_as_text_is_translated_and_a_bare_formula_is_not(block, translated):
    """Issue 41, item 5: the Chinese edition's formulas say 分数字节数, not "score bytes"."""
    assert translate.needs_translation(block) is translated


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_reader_edition_of_each_language_is_current_and_stores_no_solved_exercise(language):
    source, target, _ = editions.LANGUAGES[language]
    assert editions.stale_reader_edition(source, target, language) == []
    for path in sorted(target.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        printed = "".join(output.get("text", "") for cell in nb.cells for output in cell.get("outputs", []))
        assert "✅" not in printed, f"{path}: a stored solved exercise"
        assert "❌" in printed or not editions.exercises(nb), f"{path}: no checker says Not yet"


def test_a_new_text_keeps_the_outputs_and_new_code_clears_them(tmp_path):
    """tools/editions.keep_outputs, used by both generators: a better translation needs no new run."""
    def notebook(text: str, code: str) -> nbformat.NotebookNode:
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text), nbformat.v4.new_code_cell(code)])

    executed = notebook("Old text", "print(1)")
    executed.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    executed.cells[1].execution_count = 1
    nbformat.write(executed, tmp_path / "chapter.ipynb")
    retranslated = notebook("New text", "print(1)")
    editions.keep_outputs(retranslated, tmp_path / "chapter.ipynb")
    assert retranslated.cells[1].outputs[0].text == "1\n" and retranslated.cells[0].source == "New text"
    recoded = notebook("Old text", "print(2)")
    editions.keep_outputs(recoded, tmp_path / "chapter.ipynb")
    assert recoded.cells[1].outputs == []


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_the_comments_and_docstrings_of_the_code_cells_are_translated(chapter, language):
    """Issue 41, item 1: no comment or docstring of a translated edition is the English one (unless it has no
    words to translate: a shape such as ``(batch_size, num_queries)``), and the markers are kept as they are."""
    english = [cell for cell in nbformat.read(chapter, as_version=4).cells
               if cell.cell_type == "code" and not colab.is_install_cell(cell)]
    translated = [cell for cell in nbformat.read(translate.EDITIONS[language] / chapter.name, as_version=4).cells
                  if cell.cell_type == "code" and not colab.is_install_cell(cell)
                  and translate.LANGUAGE_TAG not in cell.metadata.get("tags", [])]
    catalogue = polib.pofile(str(translate.catalogue_path(chapter, language)))
    kept = {entry.msgid for entry in catalogue if entry.msgstr == entry.msgid}  # a shape: nothing to translate
    for index, (before, after) in enumerate(zip(english, translated, strict=True)):
        left = [text.message for text in code_text.texts(after.source) if text.message not in kept]
        assert not set(left) & {text.message for text in code_text.texts(before.source)}, (index, left)
        markers = [line.strip() for line in before.source.splitlines() if code_text.MARKER.search(line)
                   or line.lstrip().startswith(("%", "!"))]
        assert markers == [line.strip() for line in after.source.splitlines() if code_text.MARKER.search(line)
                           or line.lstrip().startswith(("%", "!"))], index


def test_a_translated_comment_builds_and_a_missing_one_stops_the_build(tmp_path, monkeypatch):
    chapter = tmp_path / "notebooks" / "99_demo.ipynb"
    chapter.parent.mkdir()
    source = ("# NBVAL_IGNORE_OUTPUT\n# split the features\n# into heads\nx = f(y)  # (batch, heads)\n\n\n"
              "def g():\n    \"\"\"Return one.\"\"\"\n    ### BEGIN SOLUTION\n    return 1  # the answer\n"
              "    ### END SOLUTION")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · Demo"),
                                         nbformat.v4.new_code_cell(source)])
    nb.cells.insert(1, nbformat.v4.new_code_cell(colab.INSTALL_CELLS["en"], metadata={"tags": [colab.TAG]}))
    nbformat.write(nb, chapter)
    catalogue_file = tmp_path / "demo.po"
    monkeypatch.setattr(translate, "catalogue_path", lambda notebook, language: catalogue_file)
    catalogue = translate.update_catalogue(chapter, catalogue_file, "zh_CN")
    notes = {entry.msgid: entry.comment for entry in catalogue}
    assert notes == {"# 99 · Demo": "", "split the features\ninto heads": "code comment",
                     "(batch, heads)": "comment after code", "Return one.": "docstring",
                     "the answer": "comment after code"}
    translations = ["# 99 · 演示", "把特征\n拆分到各个头", "(batch, heads)", "返回 1。"]
    for entry, text in zip(catalogue, translations, strict=False):
        entry.msgstr = text
    catalogue.save(str(catalogue_file))
    with pytest.raises(ValueError, match="no translation into zh_CN of the comment after code 'the answer'"):
        translate.translate_notebook(chapter, "zh_CN")
    catalogue.find("the answer").msgstr = "答案"
    catalogue.save(str(catalogue_file))
    built = translate.translate_notebook(chapter, "zh_CN").cells[3].source
    assert built == ("# NBVAL_IGNORE_OUTPUT\n# 把特征\n# 拆分到各个头\nx = f(y)  # (batch, heads)\n\n\n"
                     "def g():\n    \"\"\"返回 1。\"\"\"\n    ### BEGIN SOLUTION\n    return 1  # 答案\n"
                     "    ### END SOLUTION")
    assert code_text.code_only(built) == code_text.code_only(source)


def test_a_mark_inside_an_f_string_is_found():
    """Every marked label of an f-string is extracted (Babel's extractor misses all but the first field's), and the
    heatmap's four labels are in mha_chapters' catalogue."""
    source = 'svg = f\'<text>{_("keys")}</text>\' f\'<text>{_("queries")}</text><b>{N_("masked")}</b>\'\n'
    assert [message for message, _line in translate.marked_literals(ast.parse(source))] == ["keys", "queries",
                                                                                            "masked"]
    found = translate.library_messages(translate.CHAPTERS)
    for label in ("keys", "queries", "attention weight", "masked"):
        assert any(file == "mha_chapters/explorer.py" for file, _line in found[label]), label
