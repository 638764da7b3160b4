"""Chapter 05's new exercise (the grey cells of a causal panel): the right answer and each typical mistake.

The older chapter-05 checkers are tested in tests/test_checks.py.
"""

import pytest
import torch

from mha_chapters.exercises._engine import CORRECT, NOT_YET
from mha_chapters.exercises.ch05 import check_explorer_split_shape, check_grey_cells, check_score_memory_answer
from mha_chapters.explorer import ExplorerConfig, explore


def line_of(capsys, answer) -> str:
    assert check_grey_cells(answer) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


def test_the_answer_is_what_the_explorer_shows():
    result = explore(ExplorerConfig(num_queries=8, num_kvpairs=4, valid_len=4, causal=True))
    grey = int((~result.may_attend[0]).sum())
    assert grey == 6
    assert torch.equal(result.weights[0] == 0, (~result.may_attend[0]).expand_as(result.weights[0]))


def test_the_right_answer_is_confirmed(capsys):
    assert line_of(capsys, 6).startswith(CORRECT + "6:")


@pytest.mark.parametrize(("answer", "phrase"), [
    (22, "aligns the causal mask at the bottom right"),  # query i seeing keys 0..i-4, as if aligned at the end
    (26, "counts the cells a query may see"),  # 32 - 6: the visible cells
    (0, "valid_len = 4 masks nothing here, but causal does"),
    (28, "upper triangle of an 8 x 8 panel"),
    (32, "every cell of the 8 x 4 panel"),
])
def test_each_typical_mistake_gets_its_hint(capsys, answer, phrase):
    line = line_of(capsys, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


@pytest.mark.parametrize("answer", [5, "six", None, 6.5])
def test_other_answers_get_a_line_and_no_traceback(capsys, answer):
    assert line_of(capsys, answer).startswith(NOT_YET)


@pytest.mark.parametrize(("checker", "answer", "phrase"), [
    (check_explorer_split_shape, (3, 5, 48), "the shape before the split"),
    (check_score_memory_answer, 8 * 16 * 1024 * 1024 * 2, "that is float16"),
])
def test_the_review_s_generic_fallbacks_now_get_a_hint(capsys, checker, answer, phrase):
    assert checker(answer) is None
    line = capsys.readouterr().out.rstrip("\n")
    assert line.startswith(NOT_YET) and phrase in line, line
