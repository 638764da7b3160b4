"""Chapter 02's checkers speak the collection's notation: d_k features per query and key, scale 1/sqrt(d_k).

The broad right/wrong coverage of every checker is in tests/test_checks.py; these tests pin the notation of
the hints a reader of chapter 02 sees, so that a hint never says d where the chapter says d_k.
"""

import math

import pytest
import torch

from mha_chapters.exercises import ch02
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def printed(capsys, checker, solution) -> str:
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return out.rstrip("\n")


def attention(queries, keys, values, divide_by=None):
    d_k = queries.shape[-1]
    scale = math.sqrt(d_k) if divide_by is None else divide_by(d_k)
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / scale, dim=-1)
    return weights @ values, weights


@pytest.mark.parametrize(("answer", "phrase"), [
    ((1024, 32), "Var(q . k) = d_k * 4 * 4 = 1024"),
    ((1024, 8), "sqrt(d_k) = 8 only brings the variance back to 1"),
])
def test_score_variance_names_d_k(capsys, answer, phrase):
    line = printed(capsys, ch02.check_score_variance, answer)
    assert line.startswith(CORRECT if answer == (1024, 32) else NOT_YET), line
    assert phrase in line, line


@pytest.mark.parametrize(("divide_by", "start", "phrase"), [
    (None, CORRECT, "softmax(Q K^T / sqrt(d_k)) V"),
    (lambda d_k: 1.0, NOT_YET, "by sqrt(d_k), where d_k is the number of features of a query"),
    (lambda d_k: d_k, NOT_YET, "you divided the scores by d_k; divide by sqrt(d_k)"),
])
def test_attention_hints_name_d_k(capsys, divide_by, start, phrase):
    line = printed(capsys, ch02.check_attention, lambda q, k, v: attention(q, k, v, divide_by))
    assert line.startswith(start), line
    assert phrase in line, line
