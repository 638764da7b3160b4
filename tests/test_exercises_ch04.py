"""Chapter 04's why-heads exercises: the right answer is confirmed, each typical wrong one gets ITS hint.

The other chapter-04 checkers are tested in tests/test_checks.py.
"""

import pytest
import torch

from mha_chapters.exercises import ch04
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def run(capsys, checker, solution) -> str:
    """Run a checker and return the one line it printed."""
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


# ---- exercise: predict one head's blend -----------------------------------------------------------------------

@pytest.mark.parametrize("answer", [(5, 0, 5, 0), [5.0, 0.0, 5.0, 0.0], torch.tensor([5.0, 0.0, 5.0, 0.0])])
def test_blend_answer_accepts_the_right_output_in_any_form(capsys, answer):
    assert run(capsys, ch04.check_blend_answer, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, phrase", [
    ((10, 0, 10, 0), "not their sum"),
    ((2, 0, 8, 0), "that is what two heads could return"),
    ((5, 0), "W_v turns the content (a, b, 0, 0) into (a, b, a, b)"),
    ((8, 0, 8, 0), "that is position 1's content alone"),
    ((4, 4, 4, 4), "is not the output"),
    ((..., ..., ..., ...), "replace each ..."),
])
def test_blend_answer_names_the_typical_mistake(capsys, answer, phrase):
    line = run(capsys, ch04.check_blend_answer, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


# ---- exercise: a key projection that makes each head pick its own position ------------------------------------

def key_projection_right(first, second):
    W_k = torch.zeros(4, 4)  # nn.Linear's weight: (out_features, in_features)
    W_k[0, first] = 1.0  # projected feature 0 (head 0 scores with it) reads position `first`
    W_k[2, second] = 1.0  # projected feature 2 (head 1 scores with it) reads position `second`
    return W_k


def key_projection_sharper(first, second):
    W_k = torch.zeros(4, 4)
    W_k[0, first] = W_k[2, second] = 3.0  # a larger entry only sharpens the softmax: also right
    return W_k


def key_projection_transposed(first, second):
    W_k = torch.zeros(4, 4)
    W_k[first, 0] = 1.0  # the matrix that multiplies the row vectors, not what nn.Linear stores
    W_k[second, 2] = 1.0
    return W_k


def key_projection_swapped(first, second):
    W_k = torch.zeros(4, 4)
    W_k[0, second] = 1.0
    W_k[2, first] = 1.0
    return W_k


def key_projection_wrong_rows(first, second):
    W_k = torch.zeros(4, 4)
    W_k[1, first] = 1.0  # head 0's second feature: the query has 0 there, so no score rises
    W_k[3, second] = 1.0
    return W_k


def key_projection_int(first, second):
    W_k = torch.zeros(4, 4, dtype=torch.long)
    W_k[0, first] = W_k[2, second] = 1
    return W_k


def student_stub(first, second):
    raise NotImplementedError("Exercise: write key_projection")


@pytest.mark.parametrize("solution", [key_projection_right, key_projection_sharper])
def test_key_projection_accepts_every_matrix_that_makes_each_head_pick_its_position(capsys, solution):
    assert run(capsys, ch04.check_key_projection, solution).startswith(CORRECT)


@pytest.mark.parametrize("solution, phrase", [
    (key_projection_transposed, "nn.Linear stores its transpose"),
    (key_projection_swapped, "the heads are swapped"),
    (key_projection_wrong_rows, "put the 1s in rows 0 and 2"),
    (key_projection_int, "should return a float tensor of shape (4, 4)"),
    (lambda first: None, "key_projection raised TypeError"),
    (student_stub, "still raises NotImplementedError"),
    (..., "pass your function key_projection itself"),
])
def test_key_projection_names_the_typical_mistake(capsys, solution, phrase):
    line = run(capsys, ch04.check_key_projection, solution)
    assert line.startswith(NOT_YET) and phrase in line, line


def test_key_projection_checker_leaves_the_example_layer_untouched(capsys):
    from mha_chapters.why_heads import two_place_inputs, two_place_layer

    before = two_place_layer(2)(*two_place_inputs())
    run(capsys, ch04.check_key_projection, key_projection_transposed)
    torch.testing.assert_close(two_place_layer(2)(*two_place_inputs()), before)
