"""mha_lib speaks Chinese (issue 17): the language setting, the message catalogue and what the checkers print."""

import ast
import re
import tomllib
from pathlib import Path

import polib
import pytest
import torch

from mha_chapters import i18n
from mha_chapters.bench.records import BenchResult
from mha_chapters.exercises import ch02, ch03
from mha_chapters.exercises._engine import CORRECT, GRADING_VARIABLE, NOT_YET
from mha_chapters.i18n import _, figure_text, get_language, set_language
from mha_lib import GroupedQueryAttention, MultiHeadAttention, to_torch_mha
from mha_lib.functional import dot_product_attention, masked_softmax
from tools import translate

ROOT = Path(__file__).resolve().parents[1]
CATALOGUES = [translate.library_catalogue_path("zh_CN", package) for package in translate.PACKAGES]


@pytest.fixture(autouse=True)
def _english_afterwards():
    """Every test starts and ends in English, whatever it switched to."""
    set_language("en")
    yield
    set_language("en")


def printed(capsys, check, answer) -> str:
    check(answer)
    return capsys.readouterr().out


# --- the language setting ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", ["zh", "zh-CN", "zh_CN"])
def test_set_language_accepts_the_three_spellings_of_simplified_chinese(code):
    set_language(code)
    assert get_language() == "zh_CN"
    assert _(CORRECT) == "✅ 正确："
    set_language("en")
    assert get_language() == "en"
    assert _(CORRECT) == CORRECT


@pytest.mark.parametrize("code", ["fr", "zh_TW", "ZH", "", "english"])
def test_set_language_refuses_other_codes_naming_the_argument_the_allowed_values_and_what_came(code):
    with pytest.raises(ValueError) as error:
        set_language(code)
    message = str(error.value)
    assert "code" in message and "'en'" in message and "'zh_CN'" in message and repr(code) in message
    assert get_language() == "en"


def test_set_language_refuses_a_non_string():
    with pytest.raises(TypeError, match=r"code must be a string .* got 1 \(a int\)"):
        set_language(1)


def test_the_empty_message_is_not_the_catalogue_header():
    set_language("zh_CN")
    assert _("") == ""


# --- the catalogue ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "at_least"), [(translate.LIBRARY, 80), (translate.CHAPTERS, 250)],
                         ids=["mha_lib", "mha_chapters"])
def test_each_catalogue_has_every_marked_message_translated_and_none_fuzzy(package, at_least):
    """mha_lib's: its errors; mha_chapters': the engine, the checkers, the helpers and the chapters' cells."""
    catalogue = polib.pofile(str(translate.library_catalogue_path("zh_CN", package)))
    entries = {entry.msgid: entry for entry in catalogue if not entry.obsolete}
    marked = translate.library_messages(package)
    assert len(marked) > at_least
    missing = [message for message in marked if message not in entries]
    assert not missing, f"run python -m tools.translate update-lib; not in the catalogue: {missing[:3]}"
    assert not [e.msgid for e in entries.values() if not e.msgstr], "untranslated messages"
    assert not [e.msgid for e in entries.values() if e.fuzzy], "fuzzy (stale) translations"
    assert translate.library_problems("zh_CN", package) == []


def test_the_core_never_marks_a_message_of_the_chapters():
    """mha_lib's messages are its own: no chapter text (tr, figure_text) and no chapter cell in its catalogue."""
    occurrences = [file for entry in polib.pofile(str(CATALOGUES[0])) for file, _line in entry.occurrences]
    assert occurrences and all(file.startswith("mha_lib/") for file in occurrences)


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda path: path.name)
def test_every_translation_keeps_exactly_the_placeholders_of_its_english(path):
    for entry in polib.pofile(str(path)):
        assert translate.placeholders(entry.msgstr) == translate.placeholders(entry.msgid), entry.msgid


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda path: path.name)
def test_the_committed_mo_is_a_fresh_compile_of_the_po(path):
    assert path.with_suffix(".mo").read_bytes() == translate.compiled(polib.pofile(str(path)))


@pytest.mark.parametrize("package", translate.PACKAGES, ids=lambda package: package.name)
def test_the_mo_travels_in_the_wheel(package):
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    found = [path for pattern in package_data[package.name] for path in package.glob(pattern)]
    assert translate.library_catalogue_path("zh_CN", package).with_suffix(".mo") in found


def test_extraction_and_merge_follow_the_gettext_rules(tmp_path):
    """A new message is untranslated, an unchanged one keeps its translation, a changed one turns fuzzy."""
    package = tmp_path / "mha_lib"
    package.mkdir()
    source = package / "m.py"
    source.write_text('from .i18n import N_, _\nA = N_("the heads")\nprint(_("the keys"))\nprint(_(A), _(x))\n')
    catalogue = translate.update_library_catalogue("zh_CN", package)
    assert {entry.msgid for entry in catalogue} == {"the heads", "the keys"}
    assert len(translate.library_problems("zh_CN", package)) == 2  # both untranslated
    for entry in catalogue:
        entry.msgstr = {"the heads": "各个头", "the keys": "键"}[entry.msgid]
    catalogue.save(str(package / "locale" / "zh_CN" / "LC_MESSAGES" / "mha_lib.po"))
    assert translate.library_problems("zh_CN", package) == [  # the .mo was compiled before the translation
        "mha_lib.mo: not the compiled mha_lib.po (run update-lib)"]
    source.write_text('from .i18n import N_, _\nA = N_("the heads")\nprint(_("the keys!"))\n')
    catalogue = translate.update_library_catalogue("zh_CN", package)
    changed = catalogue.find("the keys!")
    assert changed.fuzzy and changed.previous_msgid == "the keys" and changed.msgstr == "键"
    assert catalogue.find("the heads").msgstr == "各个头" and not catalogue.find("the heads").fuzzy
    assert catalogue.find("the keys") is None
    problems = translate.library_problems("zh_CN", package)
    assert len(problems) == 1 and "revise the draft" in problems[0]


def test_a_translation_with_other_placeholders_is_reported(tmp_path):
    package = tmp_path / "mha_lib"
    package.mkdir()
    (package / "m.py").write_text('print(_("shape {shape}"))\n')
    catalogue = translate.update_library_catalogue("zh_CN", package)
    catalogue[0].msgstr = "形状 {形状}"
    catalogue.save(str(package / "locale" / "zh_CN" / "LC_MESSAGES" / "mha_lib.po"))
    catalogue.save_as_mofile(str(package / "locale" / "zh_CN" / "LC_MESSAGES" / "mha_lib.mo"))
    [problem] = translate.library_problems("zh_CN", package)
    assert "placeholders" in problem


# --- what the checkers print ------------------------------------------------------------------------------------

def _head_major(X, num_heads):
    b, n, hd = X.shape
    return X.reshape(b, n, num_heads, hd // num_heads).permute(2, 0, 1, 3).reshape(b * num_heads, n, -1)


def _no_permute(X, num_heads):
    b, n, hd = X.shape
    return X.reshape(b * num_heads, n, hd // num_heads)


CHECKS = [  # (checker, answer, verdict, a few words of the Chinese line)
    (ch03.check_folded_sample, ((9, 2, 2), 7), CORRECT, "句子 b 的头 h"),
    (ch03.check_folded_sample, ((9, 2, 2), 5), NOT_YET, "按头优先的顺序"),
    (ch03.check_folded_sample, ((1, 2), 3), NOT_YET, "折叠后的形状和样本编号"),
    (ch03.check_transpose_qkv, _head_major, NOT_YET, "按头优先的顺序排列"),
    (ch03.check_transpose_qkv, _no_permute, NOT_YET, "你的输出形状 (8, 3, 2) 是对的"),  # {shape} filled in
    (ch02.check_score_variance, (1024, 32), CORRECT, "标准差 32"),
    (ch02.check_score_variance, (256, 16), NOT_YET, "方差都是 4"),
    (ch02.check_attention, lambda q, k, v: q @ k, NOT_YET, "形状对不上"),  # the engine's own explanation
    (ch02.check_attention, ..., NOT_YET, "请传入你的函数 my_attention 本身"),
]


@pytest.mark.parametrize("check, answer, verdict, words", CHECKS)
def test_a_checker_prints_chinese_in_chinese_and_the_usual_english_after(capsys, check, answer, verdict, words):
    set_language("en")
    english = printed(capsys, check, answer)
    assert english.startswith(verdict) and english.count("\n") == 1
    set_language("zh_CN")
    chinese = printed(capsys, check, answer)
    assert chinese.startswith(_(verdict)) and words in chinese and chinese.count("\n") == 1
    assert not any(word in chinese for word in (" the ", " is ", "Not yet", "Correct"))
    set_language("en")
    assert printed(capsys, check, answer) == english


def test_the_autograder_passes_a_chinese_right_answer_and_fails_a_wrong_one(capsys, monkeypatch):
    monkeypatch.setenv(GRADING_VARIABLE, "autograde")  # as nbgrader sets it while grading
    set_language("zh_CN")
    ch03.check_folded_sample(((9, 2, 2), 7))  # a right answer in Chinese must not raise
    assert capsys.readouterr().out.startswith("✅ 正确：")
    with pytest.raises(AssertionError, match="还不对"):
        ch03.check_folded_sample(((9, 2, 2), 5))


# --- figures ----------------------------------------------------------------------------------------------------

def test_figure_text_is_chinese_only_with_a_cjk_font(monkeypatch):
    set_language("zh_CN")
    monkeypatch.setattr(i18n, "cjk_font", lambda: "Noto Sans CJK SC")
    assert figure_text("the number of bytes") == "字节数"
    monkeypatch.setattr(i18n, "cjk_font", lambda: None)
    assert figure_text("the number of bytes") == "the number of bytes"  # Colab: English, never empty boxes
    set_language("en")
    monkeypatch.setattr(i18n, "cjk_font", lambda: "Noto Sans CJK SC")
    assert figure_text("the number of bytes") == "the number of bytes"


def test_cjk_font_finds_an_installed_font_or_none(monkeypatch):
    from matplotlib import font_manager

    font = i18n.cjk_font()
    assert font is None or font in i18n.CJK_FONTS
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [])
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda: [])
    monkeypatch.setattr(i18n, "_rescanned", False)
    assert i18n.cjk_font() is None  # no font in matplotlib's list, and none on disk


def test_chinese_puts_the_cjk_font_before_the_usual_one_and_english_restores_it(monkeypatch):
    import matplotlib

    before = list(matplotlib.rcParams["font.family"])
    monkeypatch.setattr(i18n, "cjk_font", lambda: "Noto Sans CJK SC")
    set_language("zh_CN")
    assert list(matplotlib.rcParams["font.family"]) == ["Noto Sans CJK SC", *before]
    set_language("zh_CN")  # twice: added once
    assert list(matplotlib.rcParams["font.family"]) == ["Noto Sans CJK SC", *before]
    set_language("en")
    assert list(matplotlib.rcParams["font.family"]) == before
    monkeypatch.setattr(i18n, "cjk_font", lambda: None)
    set_language("zh_CN")
    assert list(matplotlib.rcParams["font.family"]) == before


# --- the chapters' tables -----------------------------------------------------------------------------------------

def chapter_headers() -> set[str]:
    """Every literal column header that a chapter's code cells pass to format_table."""
    import ast

    import nbformat

    found = set()
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "format_table":
                    headers = node.args[1] if len(node.args) > 1 else next(
                        (k.value for k in node.keywords if k.arg == "headers"), None)
                    if isinstance(headers, (ast.List, ast.Tuple)):
                        found |= {e.value for e in headers.elts if isinstance(e, ast.Constant)}
    return found


def is_worded(header: str) -> bool:
    """A header with an English word in it (not code such as num_heads or W_k.weight, not a unit such as MiB)."""
    import re

    words = re.findall(r"[A-Za-z_][\w.]*", header)
    return any("_" not in w and "." not in w and w.islower() and len(w) >= 3 and w != "exp" for w in words)


def test_every_worded_header_of_the_chapters_tables_is_in_the_catalogue():
    headers = chapter_headers()
    assert {"tensor", "loop over heads", "with cache"} <= headers  # the notebooks were read
    catalogue = {entry.msgid for entry in polib.pofile(str(CATALOGUES[1])) if entry.msgstr}
    missing = sorted(h for h in headers if is_worded(h) and h not in catalogue)
    assert not missing, f"add these to CHAPTER_HEADERS in mha_chapters/tables.py, then update-lib: {missing}"
    assert not is_worded("num_heads") and not is_worded("W_k.weight") and not is_worded("MiB")


def test_format_table_prints_chinese_headers_aligned_by_display_width():
    from mha_chapters.tables import display_width, format_table

    english = format_table([((2, 3), 6)], ["shape", "num_heads"])
    set_language("zh_CN")
    chinese = format_table([((2, 3), 6)], ["shape", "num_heads"])
    assert chinese.splitlines()[0] == "形状    num_heads"  # 形状 is 4 columns wide, padded to the 6 of "(2, 3)"
    assert [display_width(line) for line in chinese.splitlines()[1:]] == [len(line) for line in
                                                                           english.splitlines()[1:]]
    set_language("en")
    assert format_table([((2, 3), 6)], ["shape", "num_heads"]) == english


# --- every checker of chapters 01-05 and 07, right and typically wrong, in Chinese --------------------------------

def _every_known_case():
    """The right answers and typical mistakes that the English tests already hold, reused here."""
    import test_checks
    import test_exercises_ch07

    right = [(check, answer) for check, answer in test_checks.CORRECT_SOLUTIONS + test_exercises_ch07.RIGHT]
    wrong = [(case[0], case[1]) for case in test_checks.CHAPTER_01 + test_checks.CHAPTER_02 + test_checks.CHAPTER_03
             + test_checks.CHAPTER_04 + test_checks.CHAPTER_05 + test_exercises_ch07.WRONG]
    return [(check, answer, CORRECT) for check, answer in right] + [(check, answer, NOT_YET) for check, answer in wrong]


@pytest.mark.parametrize("check, answer, verdict", _every_known_case())
def test_every_known_verdict_and_hint_prints_in_chinese(capsys, check, answer, verdict):
    english = printed(capsys, check, answer)
    set_language("zh_CN")
    chinese = printed(capsys, check, answer)
    assert chinese.startswith(_(verdict)) and chinese.count("\n") == 1
    assert chinese != english
    # a Chinese character, or at least Chinese punctuation in a line that is all formula
    assert any("\u4e00" <= char <= "\u9fff" or "\u3000" <= char <= "\u303f" or "\uff00" <= char <= "\uffef"
               for char in chinese[len(_(verdict)):])


# --- tables and the explorer ------------------------------------------------------------------------------------

def test_a_traced_operation_and_an_ablation_row_label_speak_the_readers_language():
    from mha_chapters.anatomy import localized_operation
    from mha_chapters.toy import row_label

    assert [row_label(label) for label in ("none", "head 2")] == ["none", "head 2"]
    assert localized_operation("softmax(queries @ keys^T / sqrt(16))") == "softmax(queries @ keys^T / sqrt(16))"
    set_language("zh_CN")
    assert [row_label(label) for label in ("none", "head 2")] == ["无", "头 2"]
    assert localized_operation("softmax(queries @ keys^T / sqrt(16))") == "softmax(查询 @ 键^T / sqrt(16))"
    assert localized_operation("W_o(concatenated)") == "W_o(拼接结果)"
    set_language("en")


def test_the_layer_trace_and_the_explorer_speak_chinese():
    import torch

    from mha_chapters.anatomy import format_trace, trace_multi_head_attention
    from mha_chapters.explorer import ExplorerConfig, render_explorer
    from mha_lib import MultiHeadAttention

    torch.manual_seed(0)
    layer, x = MultiHeadAttention(8, 8, 8, 8, 2), torch.randn(2, 3, 8)
    english = format_trace(trace_multi_head_attention(layer, x, x, x, torch.tensor([2, 3])))
    set_language("zh_CN")
    chinese = format_trace(trace_multi_head_attention(layer, x, x, x, torch.tensor([2, 3])))
    assert "softmax(查询 @ 键^T / sqrt(4))" in chinese and "valid_lens -> 掩码" in chinese and "queries" not in chinese
    assert chinese.splitlines()[0].split() == ["步骤", "运算", "形状"]
    assert "  拆分头" in chinese and "掩码，按头重复" in chinese and "transpose_qkv(查询)" in chinese
    views = render_explorer(ExplorerConfig())
    assert "<th" in views["trace"] and "步骤" in views["trace"] and "参数量" in views["costs"]
    assert "注意力权重" in views["heatmaps"] and "序列 0" in views["heatmaps"]
    set_language("en")
    assert format_trace(trace_multi_head_attention(layer, x, x, x, torch.tensor([2, 3]))) == english


@pytest.mark.skipif(i18n.cjk_font() is None, reason="no CJK font installed (e.g. Colab): figures stay English")
def test_a_chinese_figure_draws_without_a_missing_glyph():
    import warnings

    from mha_chapters.diagram import draw_multi_head_attention

    set_language("zh_CN")
    figure = draw_multi_head_attention(2, 3, 5, 8, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)" for an empty box
        figure.savefig(__import__("io").BytesIO(), format="png", dpi=40)
    texts = [text.get_text() for text in figure.findobj(lambda artist: hasattr(artist, "get_text"))]
    assert any("多头注意力" in text for text in texts)


def test_cjk_font_finds_a_font_installed_after_matplotlibs_cache_was_built(monkeypatch):
    from types import SimpleNamespace

    from matplotlib import font_manager

    fonts = []
    monkeypatch.setattr(font_manager.fontManager, "ttflist", fonts)
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda: ["/fonts/DejaVuSans.ttf",
                                                                  "/fonts/NotoSansCJK-Regular.ttc"])
    monkeypatch.setattr(font_manager.fontManager, "addfont",
                        lambda path: fonts.append(SimpleNamespace(name="Noto Sans CJK SC", path=path)))
    monkeypatch.setattr(i18n, "_rescanned", False)
    assert i18n.cjk_font() == "Noto Sans CJK SC"
    assert [font.path for font in fonts] == ["/fonts/NotoSansCJK-Regular.ttc"]  # only the CJK file is added


# --- the library's error messages -------------------------------------------------------------------------------

MHA = dict(key_size=8, query_size=8, value_size=8, num_hiddens=8)
CHINESE = re.compile(r"[\u4e00-\u9fff]")

# (what raises, its exception, Chinese words the message must have, values it must still name in both languages)
ERRORS = {
    "chapter 00 section 5: num_heads must divide num_hiddens": (
        lambda: MultiHeadAttention(100, 100, 100, num_hiddens=100, num_heads=3), ValueError, "必须整除",
        ["num_heads=3", "num_hiddens=100", "[1, 2, 4, 5, 10, 20, 25, 50, 100]"]),
    "chapter 02: queries and keys with different d_k": (
        lambda: dot_product_attention(torch.ones(2, 1, 20), torch.ones(2, 10, 2), torch.ones(2, 10, 4)), ValueError,
        "特征数 d_k", ["(2, 1, 20)", "(2, 10, 2)"]),
    "chapter 07: a result file without a field": (
        lambda: BenchResult.from_dict({}, source="broken.json"), ValueError, "缺失", ["broken.json: schema"]),
    "chapter 09: num_kv_heads must divide num_heads": (
        lambda: GroupedQueryAttention(32, 32, 32, 32, num_heads=8, num_kv_heads=3), ValueError, "必须整除",
        ["num_kv_heads", "num_heads=8", "[1, 2, 4, 8]", "3"]),
    "a size that is not an int": (
        lambda: MultiHeadAttention(**MHA, num_heads="2"), TypeError, "必须是", ["num_heads", "'2'", "str"]),
    "a dropout outside [0, 1)": (
        lambda: MultiHeadAttention(**MHA, num_heads=2, dropout=1.5), ValueError, "概率", ["dropout", "1.5"]),
    "integer scores": (
        lambda: masked_softmax(torch.ones(2, 3, 4, dtype=torch.long)), TypeError, "浮点张量", ["X", "torch.int64"]),
    "a fractional valid length": (
        lambda: masked_softmax(torch.ones(2, 3, 5), torch.tensor([2.5, 1.0])), ValueError, "没有意义",
        ["valid_lens", "2.5"]),
    "queries, keys and values of different dtypes": (
        lambda: dot_product_attention(torch.ones(1, 2, 4), torch.ones(1, 2, 4, dtype=torch.float64),
                                      torch.ones(1, 2, 4)), TypeError, "dtype 必须相同",
        ["torch.float32", "torch.float64"]),
    "an argument of the wrong type (wrong_type)": (
        lambda: to_torch_mha(torch.nn.Linear(2, 2)), TypeError, "必须是",
        ["mha", "mha_lib.MultiHeadAttention", "Linear"]),
}


@pytest.mark.parametrize("name", ERRORS)
def test_an_error_says_in_chinese_what_it_says_in_english_naming_the_argument_and_the_values(name):
    call, kind, words, values = ERRORS[name]
    with pytest.raises(kind) as english:
        call()
    set_language("zh_CN")
    with pytest.raises(kind) as chinese:
        call()
    assert type(chinese.value) is type(english.value)
    message = str(chinese.value)
    assert message != str(english.value) and CHINESE.search(message), message
    assert words in message, message
    for value in values:
        assert value in str(english.value) and value in message, (value, message)


def test_an_error_speaks_english_again_after_the_language_is_switched_back():
    set_language("zh_CN")
    set_language("en")
    with pytest.raises(ValueError, match="num_heads=3 must divide num_hiddens=100 evenly"):
        MultiHeadAttention(100, 100, 100, num_hiddens=100, num_heads=3)


def message_arguments(node: ast.Call) -> list[ast.expr]:
    """The arguments of an exception's constructor that are worded text: a literal or an f-string with words and
    spaces (``"mha"`` or ``f"{field}.{name}"`` names an argument or a field, which stays as the code spells it)."""
    def worded(text: str) -> bool:
        return " " in text and bool(re.search(r"[A-Za-z]{2,}", text))

    def message(arg: ast.expr) -> bool:
        if isinstance(arg, ast.BinOp):  # "..." + text, "..." % values
            return message(arg.left) or message(arg.right)
        return ((isinstance(arg, ast.Constant) and isinstance(arg.value, str) and worded(arg.value))
                or (isinstance(arg, ast.JoinedStr) and any(isinstance(part, ast.Constant) and worded(part.value)
                                                           for part in arg.values)))

    return [arg for arg in node.args if message(arg)]


def test_every_message_that_the_packages_raise_goes_through_a_catalogue():
    """``raise ValueError("...")`` or ``raise ValueError(f"...")`` would stay English in the Chinese edition; the
    message must be ``_("... {field} ...").format(field=...)`` (or an argument name such as ``"mha"``)."""
    unmarked = []
    for path in sorted(path for package in translate.PACKAGES for path in package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and message_arguments(node.exc):
                unmarked.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unmarked, f"raise with an English literal, not _(...): {unmarked}"


def test_the_catalogue_check_catches_an_unmarked_raise(tmp_path):
    """The check above can fail: a literal and an f-string message are both found, a marked one is not."""
    source = 'raise ValueError(f"x must be positive, got {x}")\nraise TypeError(_("x must be {kind}").format(kind=k))'
    first, second = [node.exc for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Raise)]
    assert message_arguments(first) and not message_arguments(second)
    assert message_arguments(ast.parse('raise KeyError("no such head")').body[0].exc)
    assert message_arguments(ast.parse('raise ValueError(f"got {n} sizes: " + ", ".join(names))').body[0].exc)
    assert not message_arguments(ast.parse('raise _FieldError(f"{field}.{name}", _("is missing"))').body[0].exc)


@pytest.mark.parametrize("folder, language", [("notebooks", "en"), ("zh-CN/notebooks", "zh_CN")])
def test_the_grader_writes_its_feedback_in_the_language_of_the_chapter(folder, language):
    import nbformat

    from tools import autograde

    chapters = sorted((ROOT / folder).glob("[01]*.ipynb"))
    assert len(chapters) >= 14
    assert {path.name: autograde.notebook_language(nbformat.read(path, as_version=4)) for path in chapters} == {
        path.name: language for path in chapters}
    i18n.set_language(language)  # as SandboxGrade.preprocess does with the course's source notebook
    message = autograde.judge({"name": "answer_x"}, None)
    assert message.startswith("answer_x") and ("：" in message) == (language == "zh_CN"), message
