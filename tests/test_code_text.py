"""tools/code_text.py: the comments and docstrings of a code cell, translated without touching its code."""

from __future__ import annotations

import pytest

from tools import code_text

CELL = '''%config InlineBackend.figure_formats = ["svg"]  # a magic line stays whole
# NBVAL_IGNORE_OUTPUT
import torch  # noqa: F401

# split the features into heads,
# then fold the heads into the batch axis
X = torch.zeros(2, 3)  # (batch, features)
Y = X + 1  # (2, 3)


def f(x):
    """Return x doubled.

    A second paragraph.
    """
    ### BEGIN SOLUTION
    return 2 * x  # twice
    ### END SOLUTION
'''
CHINESE = {"split the features into heads,\nthen fold the heads into the batch axis":
           "把特征拆分到各个头，\n再把头折叠进批量轴",
           "(batch, features)": "(batch, features)",
           "Return x doubled.\n\nA second paragraph.": "返回 x 的两倍。\n\n第二段。",
           "twice": "两倍"}


def test_the_texts_are_comment_blocks_inline_comments_and_docstrings_not_markers_or_magics():
    found = [(text.kind, text.message) for text in code_text.texts(CELL)]
    assert found == [("comment", "split the features into heads,\nthen fold the heads into the batch axis"),
                     ("inline", "(batch, features)"), ("docstring", "Return x doubled.\n\nA second paragraph."),
                     ("inline", "twice")]  # not "(2, 3)": no word in it


def test_a_translation_replaces_the_texts_and_keeps_the_code_and_the_markers():
    translated = code_text.translate(CELL, CHINESE)
    assert translated.splitlines()[:3] == CELL.splitlines()[:3]  # magic, NBVAL marker, noqa
    assert "# 把特征拆分到各个头，\n# 再把头折叠进批量轴\nX = torch.zeros(2, 3)  # (batch, features)" in translated
    assert '    """返回 x 的两倍。\n\n    第二段。\n    """' in translated
    assert "    ### BEGIN SOLUTION\n    return 2 * x  # 两倍\n    ### END SOLUTION" in translated
    assert code_text.code_only(translated) == code_text.code_only(CELL)
    compile(translated.split("\n", 1)[1], "cell", "exec")  # still Python


@pytest.mark.parametrize("change", [
    ("return 2 * x", "return 3 * x"),  # a number
    ("X + 1", "X - 1"),  # an operator
    ('["svg"]', '["png"]'),  # a magic line
    ("import torch", "import numpy"),
    ("    ### END SOLUTION", "    return x\n    ### END SOLUTION"),  # one more statement
])
def test_any_change_to_the_code_still_shows(change):
    """Issue 41: the editions' code is compared with comments and docstrings set aside, not with the code."""
    translated = code_text.translate(CELL, CHINESE)
    assert code_text.code_only(translated.replace(*change)) != code_text.code_only(CELL)


def test_a_cell_python_cannot_read_is_compared_whole_and_has_no_texts():
    cell = "%%bash\necho hi  # a shell comment\nif [ 1 ]; then echo; fi"
    assert code_text.texts(cell) == []
    assert code_text.code_only(cell) != code_text.code_only(cell.replace("hi", "ho"))


def test_a_one_line_docstring_stays_on_one_line():
    cell = 'def g():\n    """One line."""\n    return 1'
    assert code_text.translate(cell, {"One line.": "一行。"}) == 'def g():\n    """一行。"""\n    return 1'
