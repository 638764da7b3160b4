"""The lecturer's kit stays true: the time table (tools/chapter_times.py) and the TA sheet (tools/ta_sheet.py) are
what their tools make from the notebooks, the record and the checkers as they are now."""

import ast
import gettext
import json
import textwrap

import pytest

from tools import chapter_times, ta_sheet


def test_every_chapter_is_measured_and_the_tables_are_current():
    assert chapter_times.stale() == []


def test_the_record_has_its_provenance():
    record = json.loads(chapter_times.RECORD.read_text(encoding="utf-8"))
    assert record["schema"] == chapter_times.SCHEMA
    assert {"date", "torch", "python", "platform", "command", "per_chapter_command", "measures"} <= set(record)
    for name, run in record["chapters"].items():
        assert (chapter_times.NOTEBOOKS / f"{name}.ipynb").exists(), f"{name} is measured but no longer exists"
        assert run["wall_s"] > 0 and run["cpu_s"] > 0 and run["peak_rss_mib"] > 100, name  # a kernel with torch


def test_the_table_has_a_row_per_chapter_and_the_reading_time(tmp_path):
    table = chapter_times.table("en")
    path = chapter_times.chapters()[0]
    words = chapter_times.prose_words(path)
    row = next(line for line in table.splitlines() if f"`{path.stem}`" in line)
    assert f"| {words:,} | {words / chapter_times.READING_RATE:.0f} min |" in row
    assert len(table.splitlines()) == 2 + len(chapter_times.chapters()) + 1
    unmeasured = chapter_times.table("zh_CN", {"chapters": {}})
    assert unmeasured.count(chapter_times.NOT_MEASURED["zh_CN"]) == 3 * len(chapter_times.chapters())


def test_render_refuses_a_page_without_markers():
    with pytest.raises(ValueError, match="no generated block"):
        chapter_times.render_page("# a page\n", "en")


def test_the_ta_sheets_are_current():
    assert ta_sheet.stale() == []


def test_every_checker_has_a_section_and_every_hint_a_row():
    english = ta_sheet.render("en")
    for _, module, _ in ta_sheet.chapters():
        reader = ta_sheet._Reader(module)
        for name in reader.public_checkers():
            assert f"### `{name}`" in english, name
        tables = sum(len(node.keys) for node in ast.walk(reader.tree)
                     if isinstance(node, ast.Dict) and node.keys and all(ta_sheet._message(v) for v in node.values))
        rows = sum(len(reader.checker(name, ta_sheet.WORDS["en"]).rows) for name in reader.public_checkers())
        assert rows >= tables, module.name  # every entry of every hint table (and more: report lines, mutation)


def test_the_reader_finds_tables_conditions_and_errors(tmp_path):
    module = tmp_path / "ch99.py"
    module.write_text(textwrap.dedent('''
        __all__ = ["check_thing"]

        def _wrong(x):
            return x + 1

        def check_thing(fn):
            """Exercise 2: a thing."""
            if fn is None:
                report(_(NOT_YET) + _("write a function first."))
                return
            try:
                fn(1)
            except TypeError:
                report(_(NOT_YET) + _("call it with one argument."))
            check_function(fn, lambda x: x, [(1,)], hints={
                _wrong: _("one too many."),
                (1, 2): _("a pair is not {name}.").format(name="it"),
            }, success=_("right."), mutation_hint=_("do not change x."))
    '''))
    checker = ta_sheet._Reader(module).checker("check_thing", ta_sheet.WORDS["en"])
    assert checker.doc == "Exercise 2: a thing." and checker.success == "right."
    assert sorted(checker.rows) == sorted([
        ("when `fn is None`", "write a function first."),
        ("when the student's code raises `TypeError`", "call it with one argument."),
        ("`_wrong`: `return x + 1`", "one too many."),
        ("`(1, 2)`", "a pair is not {name}."),
        ("changes its input tensor in place", "do not change x."),
    ])


def test_the_chinese_sheet_prints_the_catalogue_messages():
    chinese = ta_sheet.render("zh_CN")
    hint = "the weights sum to 1: one head returns a weighted AVERAGE of the values, not their sum."
    translated = gettext.translation("mha_chapters", localedir=ta_sheet.LOCALE, languages=["zh_CN"]).gettext(hint)
    assert translated != hint and translated in chinese
    english = ta_sheet.render("en")
    assert chinese.count("\n### `") == english.count("\n### `")
    assert "the weights sum to 1" in english and "the weights sum to 1" not in chinese
