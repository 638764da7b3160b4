"""The Chinese edition calls one thing by one name and points only at itself (issue 41, items 3 and 6).

The names that lost are listed in translations/zh_CN/glossary.md ("One name per thing: the variants that lost");
every translation (``msgstr``) of the chapter catalogues and of mha_lib's catalogue is checked against that table.
A Chinese reader is sent to the Chinese edition: ``zh-CN/chapters/``, ``make lab-zh``, 显示参考答案, README.zh-CN.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = sorted((ROOT / "translations" / "zh_CN").glob("[0-9][0-9]_*.po"))
PACKAGES = [ROOT / name / "locale" / "zh_CN" / "LC_MESSAGES" / f"{name}.po" for name in ("mha_lib", "mha_chapters")]
GLOSSARY = ROOT / "translations" / "zh_CN" / "glossary.md"
SECTION = "### One name per thing: the variants that lost"


def lost_names() -> list[tuple[str, str, str]]:
    """(name that lost, name to use, where: "all" or "chapter NN") for each row of the glossary's table."""
    text = GLOSSARY.read_text(encoding="utf-8")
    assert SECTION in text, f"{GLOSSARY.name} has no section {SECTION!r}"
    rows = []
    for line in text.split(SECTION, 1)[1].splitlines():
        if line.startswith("### "):
            break
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("not", "---"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def translations(where: str) -> list[tuple[str, str]]:
    """(place, msgstr) of every translated message that ``where`` ("all", "chapter 06") covers."""
    chapter = None if where == "all" else re.fullmatch(r"chapter (\d\d)", where).group(1)
    found = []
    for path in CATALOGUES:
        if chapter is None or path.name.startswith(f"{chapter}_"):
            found += [(f"{path.name}: {entry.msgid[:50]!r}", entry.msgstr)
                      for entry in polib.pofile(str(path)) if entry.msgstr and not entry.obsolete]
    for library in PACKAGES:
        for entry in polib.pofile(str(library)):
            files = [file for file, _line in entry.occurrences]
            if entry.msgstr and not entry.obsolete and (chapter is None or any(
                    file.startswith(f"notebooks/{chapter}_") or file == f"mha_chapters/exercises/ch{chapter}.py"
                    for file in files)):
                found.append((f"{library.name}: {entry.msgid[:50]!r}", entry.msgstr))
    return found


def test_the_glossary_lists_the_names_that_lost():
    rows = lost_names()
    assert len(rows) >= 10
    assert all(where == "all" or re.fullmatch(r"chapter \d\d", where) for _lost, _use, where in rows), rows
    assert all(lost not in use for lost, use, _where in rows), "a name that lost is part of the name to use"


@pytest.mark.parametrize("lost, use, where", lost_names(), ids=lambda value: value)
def test_no_translation_uses_a_name_that_lost(lost, use, where):
    found = [place for place, text in translations(where) if lost in text]
    assert not found, f"{lost!r} (use {use!r}, glossary.md) in:\n" + "\n".join(found)


ENGLISH_EDITION = {  # what sends a Chinese reader to the English edition
    r"Show a solution": "the summary line of a folded solution is 显示参考答案",
    r"make lab(?!-zh)": "the Chinese lab is make lab-zh",
    r"(?<![\w/.-])(?:chapters|notebooks)/": "the Chinese chapters are in zh-CN/chapters/ and zh-CN/notebooks/",
    r"(?<![\w/.-])README(?!\.zh-CN\.md)": "the Chinese README is README.zh-CN.md",
}


@pytest.mark.parametrize("pattern", ENGLISH_EDITION)
def test_the_chinese_edition_points_to_itself(pattern):
    found = [f"{place}: {text[:80]!r}" for place, text in translations("all") if re.search(pattern, text)]
    assert not found, ENGLISH_EDITION[pattern] + ":\n" + "\n".join(found)


KEPT_IN_FORMULAS = {"model", "FLOPs", "(float32)"}  # d_\text{model} as in the paper; a unit; a dtype


def test_the_chinese_formulas_write_no_english_words():
    """Issue 41, item 5: ``\\text{score bytes}`` is 分数字节数 in the Chinese edition (code names stay as they are)."""
    found = [f"{place}: \\text{{{words}}}" for place, text in translations("all")
             for words in re.findall(r"\\text\{([^{}]*)\}", text)
             if re.search(r"[A-Za-z]{2,}", words) and "\\_" not in words and words not in KEPT_IN_FORMULAS]
    assert not found, "English words in a formula:\n" + "\n".join(found)
