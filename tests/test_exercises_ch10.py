"""Chapter 10's checkers: the right answer is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them, not copied from mha_chapters.exercises.ch10.
"""

import math

import pytest
import torch

from mha_chapters.exercises import ch10
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def run(capsys, checker, solution) -> str:
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


# exercise 1: the online softmax update


def update_right(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(x - new_max)


def update_right_with_where(running_max, running_sum, x):  # another correct way
    grows = x > running_max
    new_max = torch.where(grows, x, running_max)
    rescaled = torch.where(grows, running_sum * torch.exp(running_max - x), running_sum)
    return new_max, rescaled + torch.exp(x - new_max)


def update_no_rescale(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    return new_max, running_sum + torch.exp(x - new_max)


def update_rescale_upside_down(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    return new_max, running_sum * torch.exp(new_max - running_max) + torch.exp(x - new_max)


def update_new_term_unshifted(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(x)


def update_returns_old_max(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    return running_max, running_sum * torch.exp(running_max - new_max) + torch.exp(x - new_max)


def update_naive_sum(running_max, running_sum, x):
    return torch.maximum(running_max, x), running_sum + torch.exp(x)


def update_in_place(running_max, running_sum, x):
    new_max = torch.maximum(running_max, x)
    running_sum.mul_(torch.exp(running_max - new_max)).add_(torch.exp(x - new_max))
    return new_max, running_sum


def update_wrong_arity(running_sum, x):
    return running_sum, x


@pytest.mark.parametrize("solution", [update_right, update_right_with_where])
def test_update_right(capsys, solution):
    assert run(capsys, ch10.check_running_update, solution).startswith(CORRECT)


@pytest.mark.parametrize(("solution", "phrase"), [
    (update_no_rescale, "summed relative to the OLD maximum"),
    (update_rescale_upside_down, "the rescale factor is upside down"),
    (update_new_term_unshifted, "exp(x - new_max), not exp(x)"),
    (update_returns_old_max, "return the NEW maximum"),
    (update_naive_sum, "exp(1000) overflows"),
    (update_in_place, "do not change running_max or running_sum in place"),
    (update_wrong_arity, "It should take (running_max, running_sum, x)"),
    (..., "pass your function"),
])
def test_update_wrong(capsys, solution, phrase):
    line = run(capsys, ch10.check_running_update, solution)
    assert line.startswith(NOT_YET) and phrase in line, line


# exercise 2: the bytes tiled attention holds


def bytes_right(batch_size, num_queries, num_kvpairs, value_dim, tile_size):
    return batch_size * num_queries * (min(tile_size, num_kvpairs) + 2 + value_dim) * 4


def bytes_right_in_parts(b, n_q, n_kv, d_v, t):  # other names, same count
    tile = b * n_q * min(t, n_kv) * 4
    return tile + 2 * b * n_q * 4 + b * n_q * d_v * 4


@pytest.mark.parametrize("solution", [bytes_right, bytes_right_in_parts])
def test_bytes_right(capsys, solution):
    assert run(capsys, ch10.check_tiled_bytes, solution).startswith(CORRECT)


@pytest.mark.parametrize(("solution", "phrase"), [
    (lambda b, nq, nkv, dv, t: 4 * b * nq * nkv, "the whole score matrix"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * min(nkv, t), "one tile of scores is not all"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * (min(nkv, t) + dv), "add the running maximum and the running sum"),
    (lambda b, nq, nkv, dv, t: b * nq * (min(nkv, t) + 2 + dv), "each float32 entry takes 4 bytes"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * (t + 2 + dv), "min(tile_size, num_kvpairs)"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * (2 * min(nkv, t) + 2 + dv), "you counted two tiles, the scores and"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * (2 * min(nkv, t) + dv), "but no running maximum and sum"),
    (lambda b, nq, nkv, dv, t: 4 * b * nq * (t + 2 + dv) * math.pi, "expected 1064960"),
])
def test_bytes_wrong(capsys, solution, phrase):
    line = run(capsys, ch10.check_tiled_bytes, solution)
    assert line.startswith(NOT_YET) and phrase in line, line


# exercise 3: numbers of tiles


def test_tile_counts_right(capsys):
    line = run(capsys, ch10.check_tile_counts, (8, 2))
    assert line.startswith(CORRECT) and "6 skipped" in line


@pytest.mark.parametrize(("answer", "phrase"), [
    ((7, 2), "round up: 8"),
    ((7, 1), "a shorter last tile"),
    ((8, 8), "are skipped"),
    ((8, 3), "no query sees"),
    ((7, 8), "the order is"),
    ((..., ...), "replace each ..."),
    ((9, 2), "is not the numbers of tiles"),
    (8, "in the form (..., ...)"),
])
def test_tile_counts_wrong(capsys, answer, phrase):
    line = run(capsys, ch10.check_tile_counts, answer)
    assert line.startswith(NOT_YET) and phrase in line, line
