"""Chapter 12's checkers: the right answer is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them, not copied from mha_chapters.exercises.ch12.
"""

import numpy as np
import pytest
import torch

from mha_chapters.exercises import ch12
from mha_chapters.exercises._engine import CORRECT, GRADING_VARIABLE, NOT_YET


@pytest.fixture(autouse=True)
def _readers_session(monkeypatch):
    monkeypatch.delenv(GRADING_VARIABLE, raising=False)


def run(capsys, checker, solution) -> str:
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


# exercise 1: rotate_half


def rotate_half_right(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def rotate_half_by_index(x):  # a correct variant: slices instead of chunk
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), -1)


def rotate_half_stacked(x):  # a correct variant: stack of the halves, then flatten
    return torch.stack([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], dim=-2).flatten(-2)


@pytest.mark.parametrize("solution", [rotate_half_right, rotate_half_by_index, rotate_half_stacked])
def test_rotate_half_right(capsys, solution):
    assert run(capsys, ch12.check_rotate_half, solution).startswith(CORRECT)


def neighbours(x):  # the interleaved pairing
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([-b, a], dim=-1).flatten(-2)


def in_place(x):
    x1, x2 = x.chunk(2, dim=-1)
    first = x1.clone()
    x1.copy_(-x2)
    x2.copy_(first)
    return x


@pytest.mark.parametrize("solution, words", [
    (neighbours, "interleaved convention"),
    (lambda x: torch.cat([x.chunk(2, -1)[1], -x.chunk(2, -1)[0]], dim=-1), "minus sign is on the wrong half"),
    (lambda x: torch.cat([x.chunk(2, -1)[1], x.chunk(2, -1)[0]], dim=-1), "negated nothing"),
    (lambda x: torch.cat([-x.chunk(2, -1)[0], x.chunk(2, -1)[1]], dim=-1), "change places"),
    (lambda x: -torch.flip(x, dims=[-1]), "flip"),
    (lambda x: torch.cat([-x.chunk(2, 0)[1], x.chunk(2, 0)[0]], dim=0), "different values"),  # the wrong axis
    (in_place, "in place"),
    (lambda x: None, "return"),
    (lambda x: x.numpy(), "tensor"),
    (lambda x, y: x, "arguments"),
    (..., "pass your function"),
])
def test_rotate_half_wrong(capsys, solution, words):
    out = run(capsys, ch12.check_rotate_half, solution)
    assert out.startswith(NOT_YET) and words in out, out


# exercise 2: an interleaved checkpoint's W_q in the halves convention


def convert_right(W_q, num_heads):
    rows, in_features = W_q.shape
    head_dim = rows // num_heads
    W = W_q.reshape(num_heads, head_dim // 2, 2, in_features)  # (head, pair, member, in)
    return W.permute(0, 2, 1, 3).reshape(rows, in_features)


def convert_by_index(W_q, num_heads):  # a correct variant: an index list
    head_dim = W_q.shape[0] // num_heads
    order = [h * head_dim + 2 * i + j for h in range(num_heads) for j in range(2) for i in range(head_dim // 2)]
    return W_q[order]


@pytest.mark.parametrize("solution", [convert_right, convert_by_index])
def test_convert_right(capsys, solution):
    assert run(capsys, ch12.check_interleaved_to_halves, solution).startswith(CORRECT)


def convert_whole_matrix(W_q, num_heads):  # forgets the heads
    return W_q.reshape(-1, 2, W_q.shape[1]).permute(1, 0, 2).reshape(W_q.shape)


def convert_backwards(W_q, num_heads):  # halves -> interleaved
    head_dim = W_q.shape[0] // num_heads
    return W_q.reshape(num_heads, 2, head_dim // 2, -1).transpose(1, 2).reshape(W_q.shape)


def convert_in_place(W_q, num_heads):
    W_q.copy_(convert_right(W_q, num_heads))
    return W_q


@pytest.mark.parametrize("solution, words", [
    (convert_whole_matrix, "as if it were one head"),
    (convert_backwards, "inverse permutation"),
    (lambda W_q, num_heads: W_q.reshape(num_heads, -1, 2, W_q.shape[1]).reshape(W_q.shape), "reshape alone"),
    (lambda W_q, num_heads: W_q, "reshape alone"),
    (lambda W_q, num_heads: convert_right(W_q, num_heads).T, "shape"),
    (convert_in_place, "in place"),
    (lambda W_q, num_heads: convert_right(W_q, num_heads).numpy(), "tensor"),
    (lambda W_q: W_q, "arguments"),
])
def test_convert_wrong(capsys, solution, words):
    out = run(capsys, ch12.check_interleaved_to_halves, solution)
    assert out.startswith(NOT_YET) and words in out, out


# exercise 3: what a shift of every position changes


@pytest.mark.parametrize("answer", ["a", "A", ["a"], ("a",), {"a"}, "(a)", np.array(["a"]), " a "])
def test_shift_right(capsys, answer):
    assert run(capsys, ch12.check_shift_answer, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, words", [
    ("abcd", "m - n alone"),
    ("ab", "m - n alone"),
    ("bc", "m - n alone"),
    ("ad", "values are never rotated"),
    ("d", "values are never rotated"),
    ("", "do change"),
    ([], "do change"),
    ("ae", "letters among a, b, c, d"),
    (1, "letters among"),
    (None, "letters among"),
    (np.array([1, 2]), "letters among"),
    (np.array(["a", "d"]), "values are never rotated"),
    (..., "replace ..."),
])
def test_shift_wrong(capsys, answer, words):
    out = run(capsys, ch12.check_shift_answer, answer)
    assert out.startswith(NOT_YET) and words in out, out


@pytest.mark.parametrize(("checker", "right", "wrong"), [
    (ch12.check_rotate_half, rotate_half_right, neighbours),
    (ch12.check_interleaved_to_halves, convert_right, convert_whole_matrix),
    (ch12.check_shift_answer, "a", "abcd"),
])
def test_under_nbgrader_only_the_right_answer_passes(monkeypatch, capsys, checker, right, wrong):
    monkeypatch.setenv(GRADING_VARIABLE, "autograde")
    checker(right)
    assert capsys.readouterr().out.startswith(CORRECT)
    with pytest.raises(AssertionError):
        checker(wrong)
