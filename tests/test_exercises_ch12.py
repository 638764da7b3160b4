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


# exercise 2: an interleaved GQA checkpoint's W_q and W_k (weights or biases) in the halves convention


def permute_rows(W, heads):
    head_dim = W.shape[0] // heads
    return W.reshape(heads, head_dim // 2, 2, *W.shape[1:]).permute(0, 2, 1, *range(3, W.dim() + 2)).reshape(W.shape)


def convert_right(W_q, W_k, num_heads, num_kv_heads):
    return permute_rows(W_q, num_heads), permute_rows(W_k, num_kv_heads)


def convert_by_index(W_q, W_k, num_heads, num_kv_heads):  # a correct variant: an index list per projection
    def order(W, heads):
        head_dim = W.shape[0] // heads
        return W[[h * head_dim + 2 * i + j for h in range(heads) for j in range(2) for i in range(head_dim // 2)]]
    return order(W_q, num_heads), order(W_k, num_kv_heads)


@pytest.mark.parametrize("solution", [convert_right, convert_by_index])
def test_convert_right(capsys, solution):
    assert run(capsys, ch12.check_interleaved_to_halves, solution).startswith(CORRECT)


def convert_k_with_num_heads(W_q, W_k, num_heads, num_kv_heads):  # the GQA trap
    return permute_rows(W_q, num_heads), permute_rows(W_k, num_heads)


def convert_whole_matrix(W_q, W_k, num_heads, num_kv_heads):  # forgets the heads
    def whole(W):
        return W.reshape(W.shape[0] // 2, 2, *W.shape[1:]).transpose(0, 1).reshape(W.shape)
    return whole(W_q), whole(W_k)


def convert_backwards(W_q, W_k, num_heads, num_kv_heads):  # halves -> interleaved
    def back(W, heads):
        return W.reshape(heads, 2, W.shape[0] // heads // 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape)
    return back(W_q, num_heads), back(W_k, num_kv_heads)


def convert_weights_only(W_q, W_k, num_heads, num_kv_heads):
    def two_d(W, heads):
        rows, in_features = W.shape
        return W.reshape(heads, rows // heads // 2, 2, in_features).transpose(1, 2).reshape(rows, in_features)
    return two_d(W_q, num_heads), two_d(W_k, num_kv_heads)


def convert_in_place(W_q, W_k, num_heads, num_kv_heads):
    new_q, new_k = convert_right(W_q, W_k, num_heads, num_kv_heads)
    W_q.copy_(new_q)
    return W_q, new_k


@pytest.mark.parametrize("solution, words", [
    (convert_k_with_num_heads, "num_key_value_heads"),
    (lambda W_q, W_k, h, kv: (permute_rows(W_q, h), W_k), "W_k kept its rows"),
    (convert_whole_matrix, "as if it were one head"),
    (convert_backwards, "inverse permutation"),
    (lambda W_q, W_k, h, kv: (W_q, W_k), "reshape alone"),
    (lambda W_q, W_k, h, kv: convert_right(W_q, W_k, h, kv)[0], "2 results as a tuple"),
    (convert_in_place, "in place"),
    (convert_weights_only, "raised ValueError"),  # rows, in_features = W.shape: fails on the 1-D biases
    (lambda W_q, num_heads: W_q, "arguments"),
    (ch12.interleaved_to_halves, "mha_lib's own"),
])
def test_convert_wrong(capsys, solution, words):
    out = run(capsys, ch12.check_interleaved_to_halves, solution)
    assert out.startswith(NOT_YET) and words in out, out


def test_the_library_rotate_half_is_not_an_answer(capsys):
    out = run(capsys, ch12.check_rotate_half, ch12.rotate_half)
    assert out.startswith(NOT_YET) and "mha_lib's own" in out, out


# exercise 3: the float32 shift by 1,000,000


def test_the_float32_shift_answer_holds():
    from mha_lib import apply_rope, set_seed
    for seed in (0, 1, 2):
        set_seed(seed)
        q, k = torch.randn(2, 4, 8, 16)
        positions = torch.arange(8)

        def scores(q, k, positions, offset):
            return (apply_rope(q, positions + offset, convention="halves")
                    @ apply_rope(k, positions + offset, convention="halves").transpose(-2, -1))
        shift = scores(q, k, positions, 1_000_000) - scores(q, k, positions, 0)
        assert 1e-3 < shift.abs().max() < 1  # (c)


def test_the_float32_shift_hints_say_which_angle_is_rounded_and_by_how_much():
    """The hints' figures: m * theta_0 = m is exact near 1,000,000; m * theta_1 (about 316,000 at head_dim 16) is
    rounded by up to 0.016 radians (half of float32's spacing 0.03 there), and by more than 1e-3 here."""
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float32) / 16)
    positions = torch.arange(8) + 1_000_000
    rounded = positions.float()[:, None] * theta - positions.double()[:, None] * theta.double()
    assert rounded[:, 0].abs().max() == 0
    assert 1e-3 < rounded[:, 1].abs().max() <= 2.0 ** -6 < 0.016
    assert 310_000 < (positions[0] * theta[1]).item() < 320_000 and torch.finfo(torch.float32).eps * 2 ** 18 > 0.03


@pytest.mark.parametrize("answer", ["c", "C", ["c"], ("c",), {"c"}, "(c)", np.array(["c"]), " c "])
def test_shift_right(capsys, answer):
    assert run(capsys, ch12.check_shift_answer, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, words", [
    ("a", "0.03 apart"),
    ("b", "more than 1e-3"),
    ("d", "small turn"),
    ("ab", "one letter"),
    ("", "one letter"),
    ("e", "one letter"),
    (1, "one letter"),
    (None, "one letter"),
    ("none", "'none'"),  # the echo shows the answer typed, not its sorted letters
    (np.array([1, 2]), "one letter"),
    (..., "replace ..."),
])
def test_shift_wrong(capsys, answer, words):
    out = run(capsys, ch12.check_shift_answer, answer)
    assert out.startswith(NOT_YET) and words in out, out


@pytest.mark.parametrize(("checker", "right", "wrong"), [
    (ch12.check_rotate_half, rotate_half_right, neighbours),
    (ch12.check_interleaved_to_halves, convert_right, convert_whole_matrix),
    (ch12.check_shift_answer, "c", "a"),
])
def test_under_nbgrader_only_the_right_answer_passes(monkeypatch, capsys, checker, right, wrong):
    monkeypatch.setenv(GRADING_VARIABLE, "autograde")
    checker(right)
    assert capsys.readouterr().out.startswith(CORRECT)
    with pytest.raises(AssertionError):
        checker(wrong)
