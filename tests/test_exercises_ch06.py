"""The exercise checkers of chapter 06: a correct solution is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them (not copied from mha_chapters.exercises.ch06).
Each expected hint is identified by a phrase that only that hint contains. ``run`` (a checker prints exactly
one line) is the shared helper of tests/test_checks.py.
"""

import pytest
import torch
from test_checks import run

from mha_chapters.exercises import ch06
from mha_chapters.exercises._engine import CORRECT, NOT_YET
from mha_chapters.toy import IGNORE, TwoLookupTask

# ---- exercise 1: the targets of a hand-sized example --------------------------------------------------------------

def printed_targets() -> torch.Tensor:
    """What the exercise tells the reader to run: a (1, 5) tensor."""
    return TwoLookupTask(vocab_size=10, seq_len=5).targets(torch.tensor([[3, 1, 4, 1, 5]]))


def test_ignore_is_minus_100():
    assert IGNORE == -100  # the hints below say so; F.cross_entropy's default ignore_index is the same number


@pytest.mark.parametrize("answer", [
    [-100, 33, 13, 43, 13],
    (-100, 33, 13, 43, 13),
    torch.tensor([-100, 33, 13, 43, 13]),
    [[-100, 33, 13, 43, 13]],  # the printed 2-D tensor, pasted as a nested list
    printed_targets(),  # the (1, 5) tensor itself
    printed_targets().tolist(),
], ids=["list", "tuple", "tensor-1d", "nested-list", "tensor-2d", "tolist"])
def test_the_right_targets_are_confirmed_in_every_form(capsys, answer):
    assert run(capsys, ch06.check_task_targets, answer).startswith(CORRECT)


@pytest.mark.parametrize(("answer", "phrase"), [
    ([-100, 13, 43, 13, 53], "one step BACK"),
    ([-100, 33, 31, 34, 31], "the class is local * vocab_size + first"),
    ([33, 13, 43, 13, 53], "its target is IGNORE (-100)."),
    ([3, 33, 13, 43, 13], "its target is IGNORE (-100), not a class"),
    ([-1, 33, 13, 43, 13], "IGNORE is -100, not -1"),
    ([[-1, 33, 13, 43, 13]], "IGNORE is -100, not -1"),
    (torch.tensor([[-1, 33, 13, 43, 13]]), "IGNORE is -100, not -1"),
    ([-100, 33, 13, 43], "in the form (..., ..., ..., ..., ...)"),
    ([[-100, 33, 13, 43, 13], [-100, 33, 13, 43, 13]], "in the form (..., ..., ..., ..., ...)"),
    ([-100, 33, 13, 43, 14], "is not the targets"),
    ([-100, ..., 13, 43, 13], "replace each ..."),
])
def test_each_typical_mistake_gets_its_hint(capsys, answer, phrase):
    line = run(capsys, ch06.check_task_targets, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


# ---- exercise 2: zero one head's features before W_o --------------------------------------------------------------

def ablate_right(concatenated, head, num_heads):
    head_dim = concatenated.shape[-1] // num_heads
    result = concatenated.clone()
    result[..., head * head_dim:(head + 1) * head_dim] = 0
    return result


def ablate_with_a_mask(concatenated, head, num_heads):
    head_dim = concatenated.shape[-1] // num_heads
    keep = torch.ones(num_heads, head_dim)
    keep[head] = 0
    return concatenated * keep.flatten()


def ablate_in_place(concatenated, head, num_heads):
    head_dim = concatenated.shape[-1] // num_heads
    concatenated[..., head * head_dim:(head + 1) * head_dim] = 0
    return concatenated


def ablate_positions(concatenated, head, num_heads):
    head_dim = concatenated.shape[-1] // num_heads
    result = concatenated.clone()
    result[:, head * head_dim:(head + 1) * head_dim, :] = 0
    return result


def ablate_num_heads_wide(concatenated, head, num_heads):
    result = concatenated.clone()
    result[..., head * num_heads:(head + 1) * num_heads] = 0
    return result


def keep_only_head(concatenated, head, num_heads):
    head_dim = concatenated.shape[-1] // num_heads
    result = torch.zeros_like(concatenated)
    result[..., head * head_dim:(head + 1) * head_dim] = concatenated[..., head * head_dim:(head + 1) * head_dim]
    return result


@pytest.mark.parametrize("solution", [ablate_right, ablate_with_a_mask])
def test_a_correct_ablation_is_confirmed(capsys, solution):
    assert run(capsys, ch06.check_ablate_head, solution).startswith(CORRECT)


@pytest.mark.parametrize(("solution", "phrase"), [
    (ablate_in_place, "changed its input in place"),
    (ablate_positions, "a head owns FEATURES"),
    (ablate_num_heads_wide, "not num_heads"),
    (keep_only_head, "you kept only that head"),
])
def test_each_typical_ablation_mistake_gets_its_hint(capsys, solution, phrase):
    line = run(capsys, ch06.check_ablate_head, solution)
    assert line.startswith(NOT_YET) and phrase in line, line
