"""Chapter 00's exercise: the right answer is confirmed, each typical wrong one gets ITS hint."""

import pytest
import torch

from mha_chapters.anatomy import count_parameters
from mha_chapters.exercises import ch00
from mha_chapters.exercises._engine import CORRECT, NOT_YET
from mha_lib import MultiHeadAttention


def run(capsys, checker, solution) -> str:
    """Run a checker and return the one line it printed."""
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


def test_the_expected_answer_is_what_the_layer_really_has(capsys):
    counted = tuple(count_parameters(MultiHeadAttention(64, 64, 64, 64, h)) for h in (1, 8))
    assert run(capsys, ch00.check_parameters_by_heads, counted).startswith(CORRECT)


@pytest.mark.parametrize("answer", [(16384, 16384), [16384, 16384], torch.tensor([16384, 16384])])
def test_the_right_answer_is_accepted_in_any_form(capsys, answer):
    assert run(capsys, ch00.check_parameters_by_heads, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, phrase", [
    ((16_384, 8 * 16_384), "the heads do not multiply the weights"),
    ((16_384, 16_384 // 8), "do not divide the count either"),
    ((3 * 64 * 64, 3 * 64 * 64), "the output projection W_o is a fourth"),
    ((64 * 64, 64 * 64), "the layer has four"),
    ((4 * 64 * 64 + 4 * 64, 4 * 64 * 64 + 4 * 64), "bias is False by default"),
    ((16_384, 16_000), "is not the two parameter counts"),
    (16_384, "in the form (..., ...)"),
    ((..., ...), "replace each ..."),
])
def test_each_typical_mistake_gets_its_hint(capsys, answer, phrase):
    line = run(capsys, ch00.check_parameters_by_heads, answer)
    assert line.startswith(NOT_YET) and phrase in line, line
