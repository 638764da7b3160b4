"""Chapter 11's checkers: the right answer is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them, not copied from mha_chapters.exercises.ch11.
"""

import pytest
import torch

from mha_chapters.exercises import ch11
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def run(capsys, checker, solution) -> str:
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


# exercise 1: the previous 3 tokens plus the first token


def recent_right(b, h, q_idx, kv_idx):
    causal = kv_idx <= q_idx
    recent = q_idx - kv_idx <= 3
    return (causal & recent) | (kv_idx == 0)


def recent_right_other_way(b, h, q_idx, kv_idx):  # a correct variant: a lower bound instead of a difference
    return ((kv_idx >= q_idx - 3) & (kv_idx <= q_idx)) | (kv_idx < 1)


@pytest.mark.parametrize("solution", [recent_right, recent_right_other_way])
def test_recent_right(capsys, solution):
    assert run(capsys, ch11.check_recent_plus_first, solution).startswith(CORRECT)


@pytest.mark.parametrize("solution, words", [
    (lambda b, h, q, kv: ((kv <= q) & (q - kv < 3)) | (kv == 0), "off by one"),
    (lambda b, h, q, kv: ((kv - q).abs() <= 3) | (kv == 0), "both ways"),
    (lambda b, h, q, kv: (kv <= q) & (q - kv <= 3), "first token is missing"),
    (lambda b, h, q, kv: (kv <= q) & (q - kv <= 3) & (kv == 0), "BOTH"),
    (lambda b, h, q, kv: ((kv <= q) & (q - kv <= 3)) | (q == 0), "not query 0"),
    (lambda b, h, q, kv: (kv <= q and q - kv <= 3) or kv == 0, "&, | and ~"),
    (lambda q, kv: kv <= q, "4 arguments"),
    (lambda b, h, q, kv: kv <= q, "different values"),
])
def test_recent_wrong(capsys, solution, words):
    out = run(capsys, ch11.check_recent_plus_first, solution)
    assert out.startswith(NOT_YET) and words in out, out


def test_recent_not_a_function(capsys):
    assert run(capsys, ch11.check_recent_plus_first, ...).startswith(NOT_YET)


# exercise 2: ALiBi's slopes


def slopes_right(num_heads):
    ratio = 2 ** (-8 / num_heads)
    return torch.tensor([ratio ** (h + 1) for h in range(num_heads)])


@pytest.mark.parametrize("solution", [slopes_right, lambda n: [2 ** (-8 * (h + 1) / n) for h in range(n)],
                                      lambda n: 2.0 ** (-8 * torch.arange(1, n + 1) / n)])
def test_slopes_right(capsys, solution):
    assert run(capsys, ch11.check_alibi_slopes, solution).startswith(CORRECT)


@pytest.mark.parametrize("solution, words", [
    (lambda n: torch.tensor([2 ** (-8 * h / n) for h in range(n)]), "first slope is 1"),
    (lambda n: torch.tensor([0.5 ** (h + 1) for h in range(n)]), "8 heads only"),
    (lambda n: torch.tensor([2 ** (-8 * (h + 1) / n) for h in range(n)]).flip(0), "reversed"),
    (lambda n: torch.tensor([2 ** (8 * (h + 1) / n) for h in range(n)]), "negative"),
    (lambda n: torch.arange(1, n + 1) / n, "geometric"),
    (lambda n: None, "return"),
])
def test_slopes_wrong(capsys, solution, words):
    out = run(capsys, ch11.check_alibi_slopes, solution)
    assert out.startswith(NOT_YET) and words in out, out


# exercise 3: the document ids that let a token see the next document


def ids_right(lengths):
    starts = torch.tensor(lengths).cumsum(0)[:-1]
    return (torch.arange(sum(lengths)).view(-1, 1) >= starts).sum(-1)


@pytest.mark.parametrize("solution", [
    ids_right,
    lambda lengths: torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths)),
    lambda lengths: [doc + 10 for doc, n in enumerate(lengths) for _ in range(n)],  # any numbering works
])
def test_ids_right(capsys, solution):
    assert run(capsys, ch11.check_document_ids, solution).startswith(CORRECT)


@pytest.mark.parametrize("solution, words", [
    (lambda lengths: (torch.arange(sum(lengths)).view(-1, 1) > torch.tensor(lengths).cumsum(0)[:-1]).sum(-1), ">="),
    (lambda lengths: torch.arange(len(lengths)).repeat(max(lengths))[:sum(lengths)], "repeat_interleave"),
    (lambda lengths: (torch.arange(sum(lengths)).view(-1, 1) >= torch.tensor(lengths)).sum(-1), "START"),
    (lambda lengths: torch.zeros(len(lengths)), "one id per token"),
])
def test_ids_wrong(capsys, solution, words):
    out = run(capsys, ch11.check_document_ids, solution)
    assert out.startswith(NOT_YET) and words in out, out
