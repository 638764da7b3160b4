"""The checkers as nbgrader's autograded tests: with NBGRADER_EXECUTION set, a wrong answer raises AssertionError.

nbgrader sets the variable to 'autograde' or 'validate' while it executes a notebook (its FAQ: "Can I modify the
notebook behavior during autograding or validation?"). A reader never has it set: the checker only prints.
"""

import inspect
import re

import pytest
import torch

from mha_chapters.exercises import _engine, ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12
from mha_chapters.exercises._engine import CORRECT, GRADING_VARIABLE, NOT_YET
from mha_lib import transpose_qkv

MODULES = [ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12]


def stub(*args):
    raise NotImplementedError("Exercise: write the body of stub")


def key_projection(first, second):
    W_k = torch.zeros(4, 4)
    W_k[0, first] = W_k[2, second] = 1.0
    return W_k


# (checker, a right answer, wrong answers): value checkers, function checkers, and the ones that print their own
# lines (chapter 04's key_projection, chapter 05's divisors, chapter 08's valid_lens), each through report().
CASES = [
    (ch05.check_score_memory_answer, 536_870_912, [512, ...]),
    (ch03.check_transpose_qkv, transpose_qkv, [stub, ...]),
    (ch04.check_key_projection, key_projection, [stub, lambda first, second: key_projection(first, second).T]),
    (ch05.check_num_heads_options, [1, 2, 3, 4, 6, 8, 12, 16, 24, 48], [[1, 2, 4, 8, 16, 32], ...]),
    (ch08.check_lens_that_hide_bug4, ([3, 3], [5, 5]), [([1, 2], [3, 4]), ...]),
    (ch08.check_finfo_min_minus_100, float("-inf"), [float("nan"), -65604]),
]


@pytest.mark.parametrize(("checker", "right", "wrongs"), CASES, ids=lambda x: getattr(x, "__name__", ""))
@pytest.mark.parametrize("mode", ["autograde", "validate"])
def test_under_nbgrader_a_wrong_answer_raises_with_the_same_line(monkeypatch, capsys, checker, right, wrongs, mode):
    monkeypatch.setenv(GRADING_VARIABLE, mode)
    for wrong in wrongs:
        with pytest.raises(AssertionError) as raised:
            checker(wrong)
        printed = capsys.readouterr().out
        assert printed.startswith(NOT_YET) and printed.count("\n") == 1  # the reader's line is still shown
        assert str(raised.value) == printed.rstrip("\n")
    assert checker(right) is None  # a right answer never raises
    assert capsys.readouterr().out.startswith(CORRECT)


@pytest.mark.parametrize(("checker", "right", "wrongs"), CASES, ids=lambda x: getattr(x, "__name__", ""))
def test_without_nbgrader_a_wrong_answer_only_prints(monkeypatch, capsys, checker, right, wrongs):
    monkeypatch.delenv(GRADING_VARIABLE, raising=False)
    for wrong in wrongs:
        assert checker(wrong) is None
        assert capsys.readouterr().out.startswith(NOT_YET)


def test_an_empty_variable_counts_as_unset(monkeypatch, capsys):
    monkeypatch.setenv(GRADING_VARIABLE, "")
    _engine.report(NOT_YET + "a hint")
    assert capsys.readouterr().out == NOT_YET + "a hint\n"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_checker_prints_through_report(module):
    """A bare print() in a checker would show a wrong answer but never fail nbgrader's test."""
    source = inspect.getsource(module)
    assert not re.search(r"\bprint\(", source), f"{module.__name__} prints without report()"
