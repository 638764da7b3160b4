"""Issue 13: hints that used to mislead, the cheap hints that were missing, and correct-but-different answers.

Each test feeds the typical wrong answer and asserts the hint that names its mistake.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from mha_chapters.anatomy import mha_flops
from mha_chapters.exercises import ch02, ch03, ch04, ch05
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def run(capsys, checker, answer) -> str:
    assert checker(answer) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return out.rstrip("\n")


def expect_hint(line: str, phrase: str) -> None:
    assert line.startswith(NOT_YET), line
    assert phrase in line, f"expected {phrase!r}, got:\n{line}"


# ---- check_mha_flops: a hint only when the mistake explains every case -------------------------------------------

def total(b, n_q, n_kv, d):
    return mha_flops(b, n_q, n_kv, d, num_heads=1)["total"]


def flops_projections_only(b, n_q, n_kv, d):
    return 4 * b * (n_q + n_kv) * d * d


def flops_num_queries_for_keys(b, n_q, n_kv, d):
    return 8 * b * n_q * d * d + 4 * b * n_q * n_q * d


def test_projections_only_and_num_kvpairs_mistake_coincide_on_the_first_case():
    assert flops_projections_only(1, 2, 3, 4) == flops_num_queries_for_keys(1, 2, 3, 4)  # why the bug existed


def test_flops_projections_only_gets_its_own_hint(capsys):
    expect_hint(run(capsys, ch05.check_mha_flops, flops_projections_only), "projections only")


def test_flops_num_queries_for_keys_still_gets_its_hint(capsys):
    expect_hint(run(capsys, ch05.check_mha_flops, flops_num_queries_for_keys), "num_kvpairs rows")


def test_flops_einsum_style_correct_answer_passes(capsys):
    def flops(b, n_q, n_kv, d):
        return 2 * (b * n_q * d * d * 2 + b * n_kv * d * d * 2) + 2 * 2 * b * n_q * n_kv * d
    assert run(capsys, ch05.check_mha_flops, flops).startswith(CORRECT)
    assert run(capsys, ch05.check_mha_flops, total).startswith(CORRECT)


# ---- check_masked_softmax --------------------------------------------------------------------------------------

def keep_mask(X, valid_lens):
    return torch.arange(X.shape[-1]) < valid_lens[:, None, None]


def softmax_renormalised(X, valid_lens):
    weights = F.softmax(X, dim=-1) * keep_mask(X, valid_lens)
    return weights / weights.sum(dim=-1, keepdim=True)


def test_renormalised_softmax_is_not_told_about_minus_inf(capsys):
    line = run(capsys, ch02.check_masked_softmax, softmax_renormalised)
    expect_hint(line, "renormalising softmax(X) * mask divides 0 by 0")
    assert "with -inf," not in line


def test_minus_inf_then_nan_to_num_passes(capsys):
    def answer(X, valid_lens):
        weights = F.softmax(X.masked_fill(~keep_mask(X, valid_lens), float("-inf")), dim=-1)
        return torch.nan_to_num(weights, nan=0.0)
    assert run(capsys, ch02.check_masked_softmax, answer).startswith(CORRECT)


def test_renormalised_then_nan_to_num_passes(capsys):
    def answer(X, valid_lens):
        return torch.nan_to_num(softmax_renormalised(X, valid_lens), nan=0.0)
    assert run(capsys, ch02.check_masked_softmax, answer).startswith(CORRECT)


# ---- check_attention: (weights, output) swapped; einsum passes -------------------------------------------------

def attention_einsum(queries, keys, values):
    weights = torch.einsum("bqd,bkd->bqk", queries, keys).div(math.sqrt(queries.shape[-1])).softmax(-1)
    return torch.einsum("bqk,bkv->bqv", weights, values), weights


def test_attention_swapped_pair_gets_its_hint(capsys):
    def swapped(queries, keys, values):
        output, weights = attention_einsum(queries, keys, values)
        return weights, output
    expect_hint(run(capsys, ch02.check_attention, swapped), "returned (weights, output)")


def test_attention_einsum_passes(capsys):
    assert run(capsys, ch02.check_attention, attention_einsum).startswith(CORRECT)


# ---- check_num_heads_options --------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, phrase", [
    ([1, 2, 4, 8, 16, 32], "[32] cannot be num_heads"),
    ([1, 2, 4, 8, 16], "these powers of two divide 48"),
    ([1, 2, 3, 4, 6, 8, 12, 16], "some divisors are missing"),
    ([1, 5, 48], "[5] cannot be num_heads"),
])
def test_num_heads_wrong_length_is_not_told_the_form(capsys, answer, phrase):
    line = run(capsys, ch05.check_num_heads_options, answer)
    expect_hint(line, phrase)
    assert "in the form" not in line and "..." not in line  # neither misdiagnosed nor the answer's length leaked


@pytest.mark.parametrize("answer", [[48, 24, 16, 12, 8, 6, 4, 3, 2, 1], (1, 2, 3, 4, 6, 8, 12, 16, 24, 48),
                                    [d for d in range(1, 49) if 48 % d == 0], {1, 2, 3, 4, 6, 8, 12, 16, 24, 48}])
def test_num_heads_any_order_or_container_passes(capsys, answer):
    assert run(capsys, ch05.check_num_heads_options, answer).startswith(CORRECT)


def test_num_heads_known_hints_kept(capsys):
    expect_hint(run(capsys, ch05.check_num_heads_options, [2, 3, 4, 6, 8, 12, 16, 24, 48]), "1 divides 48 too")


# ---- the cheap, specific hints ---------------------------------------------------------------------------------

@pytest.mark.parametrize("checker, answer, phrase", [
    (ch05.check_score_memory_answer, 512, "size in MiB"),
    (ch05.check_score_memory_answer, 0.5, "size in GiB"),
    (ch04.check_mha_parameter_answer, 3 * 256 * 512 + 512 * 512 + 512, "not only W_o"),
    (ch03.check_folded_sample, ((9, 2, 2), 8), "Python counts from 0"),
    (ch03.check_folded_sample, ((9, 2, 2), 3), "indices counted from 0"),
])
def test_cheap_hints(capsys, checker, answer, phrase):
    expect_hint(run(capsys, checker, answer), phrase)


@pytest.mark.parametrize("checker, answer", [
    (ch05.check_score_memory_answer, 8 * 16 * 1024 * 1024 * 4),
    (ch05.check_score_memory_answer, 512 * 2 ** 20),
    (ch04.check_mha_parameter_answer, 657_408),
    (ch03.check_folded_sample, [[9, 2, 2], 7]),  # lists pass as well as tuples
    (ch03.check_folded_sample, (torch.Size([9, 2, 2]), 7)),
])
def test_right_answers_in_other_forms_pass(capsys, checker, answer):
    assert run(capsys, checker, answer).startswith(CORRECT)
