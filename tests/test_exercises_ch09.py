"""Chapter 09's checkers: the right answer is confirmed, each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them, not copied from mha_chapters.exercises.ch09.
"""

import pytest
import torch
from test_checks import expect_hint, run

from mha_chapters.exercises import ch09
from mha_chapters.exercises._engine import CORRECT


def right_repeat(X, num_groups):
    b, g, n, d = X.shape
    return X[:, :, None].expand(b, g, num_groups, n, d).reshape(b, g * num_groups, n, d)


def in_place_repeat(X, num_groups):
    out = X.repeat_interleave(num_groups, dim=1)
    X.zero_()
    return out


def stub(*args):
    raise NotImplementedError


def test_kv_head_answer(capsys):
    assert run(capsys, ch09.check_kv_head_answer, [0, 0, 0, 0, 1, 1, 1, 1]).startswith(CORRECT)
    expect_hint(run(capsys, ch09.check_kv_head_answer, tuple(i % 2 for i in range(8))), "order of repeat()")
    expect_hint(run(capsys, ch09.check_kv_head_answer, tuple(i // 2 for i in range(8))), "divide by the group size")
    expect_hint(run(capsys, ch09.check_kv_head_answer, tuple(range(8))), "that is multi-head attention")
    expect_hint(run(capsys, ch09.check_kv_head_answer, (1, 1, 1, 1, 2, 2, 2, 2)), "numbered from 0")
    expect_hint(run(capsys, ch09.check_kv_head_answer, (0, 0, 0, 0, ..., 1, 1, 1)), "replace each ...")


@pytest.mark.parametrize("solution", [right_repeat, lambda X, r: X.repeat_interleave(r, dim=1),
                                      lambda X, r: torch.cat([X[:, i:i + 1].repeat(1, r, 1, 1)
                                                              for i in range(X.shape[1])], dim=1)])
def test_repeat_kv_heads_right(capsys, solution):
    assert run(capsys, ch09.check_repeat_kv_heads, solution).startswith(CORRECT)


@pytest.mark.parametrize(("solution", "phrase"), [
    (lambda X, r: X.repeat(1, r, 1, 1), "Use X.repeat_interleave(num_groups, dim=1)"),
    (lambda X, r: torch.cat([X] * r, dim=1), "Use X.repeat_interleave(num_groups, dim=1)"),
    (lambda X, r: X.repeat_interleave(r, dim=2), "axis 2, the key-value pairs"),
    (lambda X, r: X.repeat_interleave(r, dim=0), "axis 0, the batch"),
    (lambda X, r: X.repeat_interleave(r, dim=-1), "but should have"),  # a generic shape message
    (in_place_repeat, "changed X in place"),
    (stub, "still raises NotImplementedError"),
])
def test_repeat_kv_heads_mistakes(capsys, solution, phrase):
    expect_hint(run(capsys, ch09.check_repeat_kv_heads, solution), phrase)


def test_cache_bytes_answer(capsys):
    assert run(capsys, ch09.check_cache_bytes_answer, 2 * 32 * 8 * 128 * 8192 * 2).startswith(CORRECT)
    for answer, phrase in [(32 * 8 * 128 * 8192 * 2, "keys AND values"), (2 * 32 * 32 * 128 * 8192 * 2, "32 key-value"),
                           (2 * 32 * 8 * 128 * 8192 * 4, "float32"), (32 * 8 * 128 * 8192, "x2 again"),
                           (2 * 8 * 128 * 8192 * 2, "num_layers = 32"), (2 * 32 * 8 * 128 * 2, "ONE token"),
                           (123, "is not the number of bytes")]:
        expect_hint(run(capsys, ch09.check_cache_bytes_answer, answer), phrase)


def test_kv_cache_formula(capsys):
    def right(num_layers, num_kv_heads, head_dim, context_len, batch_size, bytes_per_number):
        return 2 * num_layers * num_kv_heads * head_dim * context_len * batch_size * bytes_per_number

    assert run(capsys, ch09.check_kv_cache_formula, right).startswith(CORRECT)
    for wrong, phrase in [
        (lambda L, g, d, n, b, s: L * g * d * n * b * s, "keys AND values"),
        (lambda L, g, d, n, b, s: 2 * L * g * d * n * b, "numbers, not bytes"),
        (lambda L, g, d, n, b, s: 2 * g * d * n * b * s, "multiply by num_layers"),
        (lambda L, g, d, n, b, s: 2 * L * g * d * n * s, "multiply by batch_size"),
        (lambda L, g, d, n, b: 2 * L * g * d * n * b, "could not be called with"),
        (stub, "still raises NotImplementedError"),
    ]:
        expect_hint(run(capsys, ch09.check_kv_cache_formula, wrong), phrase)
