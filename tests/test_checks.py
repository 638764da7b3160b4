"""The exercise checkers: a correct solution is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them (not copied from mha_chapters.exercises),
so these tests show that the checkers recognise the mistake, not one particular line of code.
Each expected hint is identified by a phrase that only that hint contains.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from mha_chapters.exercises import _engine, ch01, ch02, ch03, ch04, ch05
from mha_chapters.exercises._engine import CORRECT, NOT_YET
from mha_lib import masked_softmax, transpose_output, transpose_qkv


def run(capsys, checker, solution) -> str:
    """Run a checker and return the one line it printed."""
    assert checker(solution) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, f"a checker prints exactly one line, got:\n{out}"
    return out.rstrip("\n")


def expect_hint(line: str, phrase: str) -> None:
    assert line.startswith(NOT_YET), line
    assert phrase in line, f"expected the hint containing {phrase!r}, got:\n{line}"


# ---- chapter 01 ------------------------------------------------------------------------------------------------

def split_right(T, num_heads):
    batch_size, seq_len, num_hiddens = T.shape
    return T.view(batch_size, seq_len, num_heads, num_hiddens // num_heads).transpose(1, 2)


def split_view_only(T, num_heads):
    batch_size, seq_len, num_hiddens = T.shape
    return T.view(batch_size, num_heads, seq_len, num_hiddens // num_heads)


def split_no_transpose(T, num_heads):
    return T.unflatten(-1, (num_heads, -1))


def split_swaps_features(T, num_heads):
    return T.unflatten(-1, (num_heads, -1)).permute(0, 1, 3, 2)


def split_hardcoded(T, num_heads):  # works only for the chapter's example
    return T.view(2, 3, 2, 2).transpose(1, 2)


def merge_right(H):
    batch_size, num_heads, seq_len, head_dim = H.shape
    return H.permute(0, 2, 1, 3).reshape(batch_size, seq_len, num_heads * head_dim)


def merge_reshape_only(H):
    return H.reshape(H.shape[0], H.shape[2], -1)


def merge_view_after_transpose(H):
    return H.transpose(1, 2).view(H.shape[0], H.shape[2], -1)


def merge_features_first(H):
    return H.permute(0, 2, 3, 1).flatten(2)


CHAPTER_01 = [
    (ch01.check_strides, ((6, 1), (6, 1)), "it swaps the two strides of A"),
    (ch01.check_strides, [[1, 6], [6, 1]], "the two pairs are swapped"),
    (ch01.check_strides, ((4, 1), (1, 4)), "one step down skips 6, not 4"),
    (ch01.check_strides, (6, 1), "in the form ((..., ...), (..., ...))"),
    (ch01.check_strides, ((6, 1), (1, 5)), "is not the strides"),
    (ch01.check_strides, ..., "replace each ... in your answer"),
    (ch01.check_strides, ((6, 1), ...), "replace each ... in your answer"),
    (ch01.check_permute_position, ((1, 0, 1), (1, 0, 1)), "permute(2, 0, 1) moves old axis 2 to the front"),
    (ch01.check_permute_position, ((0, 1, 1), (1, 0, 1)), "new index = (k, i, j)"),
    (ch01.check_permute_position, ((1, 1, 0), (1, 1, 0)), "keeps the middle one"),
    (ch01.check_split_heads, split_view_only, "Reshape to (b, n, h, d) first, then transpose(1, 2)"),
    (ch01.check_split_heads, split_no_transpose, "the heads axis is still behind the tokens axis"),
    (ch01.check_split_heads, split_swaps_features, "you swapped the heads axis with the features axis"),
    (ch01.check_split_heads, split_hardcoded, "asked for a shape that does not hold the same number"),
    (ch01.check_merge_heads, merge_reshape_only, "a reshape alone reads the heads in memory order"),
    (ch01.check_merge_heads, merge_view_after_transpose, "because it merges axes that are not adjacent in memory"),
    (ch01.check_merge_heads, merge_features_first, "the features of the heads are interleaved"),
]


# ---- chapter 02 ------------------------------------------------------------------------------------------------

def attention_right(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights


def attention_unscaled(queries, keys, values):
    weights = torch.softmax(torch.bmm(queries, keys.transpose(1, 2)), dim=-1)
    return torch.bmm(weights, values), weights


def attention_divided_by_d(queries, keys, values):
    weights = torch.softmax(queries @ keys.mT / queries.shape[-1], dim=2)
    return weights @ values, weights


def attention_softmax_dim1(queries, keys, values):
    weights = F.softmax(queries @ keys.mT / math.sqrt(queries.shape[-1]), dim=1)
    return weights @ values, weights


def attention_keys_not_transposed(queries, keys, values):
    weights = F.softmax(queries @ keys / math.sqrt(queries.shape[-1]), dim=-1)
    return weights @ values, weights


def attention_returns_output_only(queries, keys, values):
    return attention_right(queries, keys, values)[0]


def attention_returns_weights_only(queries, keys, values):
    return attention_right(queries, keys, values)[1]


def attention_no_return(queries, keys, values):
    attention_right(queries, keys, values)


def attention_undefined_name(queries, keys, values):
    return d_model  # noqa: F821 - the bug of one of the source notes


def softmax_right(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens[:, None, None]
    weights = F.softmax(X.masked_fill(~mask, torch.finfo(X.dtype).min), dim=-1)
    return weights.masked_fill(~mask, 0.0)


def softmax_fill_zero(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens[:, None, None]
    return F.softmax(torch.where(mask, X, torch.zeros(())), dim=-1)


def softmax_minus_1e9(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens.reshape(-1, 1, 1)
    return F.softmax(X.masked_fill(~mask, -1e9), dim=-1)


def softmax_minus_inf(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens.reshape(-1, 1, 1)
    return F.softmax(X.masked_fill(~mask, -math.inf), dim=-1)


def softmax_off_by_one(X, valid_lens):
    mask = torch.arange(X.shape[-1]) <= valid_lens.reshape(-1, 1, 1)
    return F.softmax(X.masked_fill(~mask, torch.finfo(X.dtype).min), dim=-1) * mask


def softmax_minus_1e9_zeroed(X, valid_lens):  # right in float32, but -1e9 does not fit in float16
    mask = torch.arange(X.shape[-1]) < valid_lens.reshape(-1, 1, 1)
    return F.softmax(X.masked_fill(~mask, -1e9), dim=-1).masked_fill(~mask, 0.0)


def softmax_in_place(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens.reshape(-1, 1, 1)
    X[~mask.expand_as(X)] = torch.finfo(X.dtype).min
    return F.softmax(X, dim=-1) * mask


CHAPTER_02 = [
    (ch02.check_score_variance, (64, 8), "the features have variance 4 here, not 1"),
    (ch02.check_score_variance, (256, 16), "has variance 4 * 4 = 16, not 4"),
    (ch02.check_score_variance, (1024, 1024), "divide by the standard deviation"),
    (ch02.check_score_variance, (1024, 8), "only brings the variance back to 1 when"),
    (ch02.check_causal_counts, (3, 4, 5), "that is the bottom-right alignment"),
    (ch02.check_causal_counts, torch.tensor([0, 1, 2]), "the diagonal is True"),
    (ch02.check_causal_counts, [1, 2, 3, 3, 3], "give 3 numbers"),
    (ch02.check_attention, attention_unscaled, "the scores are not scaled"),
    (ch02.check_attention, attention_divided_by_d, "you divided the scores by d"),
    (ch02.check_attention, attention_softmax_dim1, "the softmax runs over the wrong axis"),
    (ch02.check_attention, attention_keys_not_transposed, "keys.transpose(-2, -1)"),
    (ch02.check_attention, attention_returns_output_only, "returned only the output"),
    (ch02.check_attention, attention_returns_weights_only, "returned only the weights"),
    (ch02.check_attention, attention_no_return, "should return 2 results as a tuple, (..., ...), got a NoneType"),
    (ch02.check_attention, attention_undefined_name, "uses a name that does not exist (NameError"),
    (ch02.check_masked_softmax, softmax_fill_zero, "you filled the hidden scores with 0"),
    (ch02.check_masked_softmax, softmax_minus_1e9, "a row whose valid length is 0 gets the same weight"),
    (ch02.check_masked_softmax, softmax_minus_inf, "comes out NaN"),
    (ch02.check_masked_softmax, softmax_off_by_one, "each row keeps one key too many"),
    (ch02.check_masked_softmax, softmax_in_place, "your function changed its input X"),
    (ch02.check_masked_softmax, softmax_minus_1e9_zeroed, "-1e9 is outside the float16 range"),
]


# ---- chapter 03 ------------------------------------------------------------------------------------------------

def qkv_right(X, num_heads):
    batch_size, seq_len, num_hiddens = X.shape
    X = X.reshape(batch_size, seq_len, num_heads, -1).permute(0, 2, 1, 3)
    return X.reshape(batch_size * num_heads, seq_len, -1)


def qkv_no_permute(X, num_heads):
    batch_size, seq_len, num_hiddens = X.shape
    return X.view(batch_size, seq_len, num_heads, -1).view(batch_size * num_heads, seq_len, -1)


def qkv_heads_first(X, num_heads):
    batch_size, seq_len, num_hiddens = X.shape
    X = X.reshape(batch_size, seq_len, num_heads, -1).permute(2, 0, 1, 3)
    return X.reshape(batch_size * num_heads, seq_len, -1)


def qkv_no_final_reshape(X, num_heads):
    return X.unflatten(-1, (num_heads, -1)).transpose(1, 2)


def qkv_tokens_folded(X, num_heads):
    return X.reshape(-1, num_heads, X.shape[-1] // num_heads)


def qkv_view_after_permute(X, num_heads):
    batch_size, seq_len, num_hiddens = X.shape
    X = X.view(batch_size, seq_len, num_heads, -1).permute(0, 2, 1, 3)
    return X.view(batch_size * num_heads, seq_len, -1)


def output_right(X, num_heads):
    folded, seq_len, head_dim = X.shape
    X = X.reshape(-1, num_heads, seq_len, head_dim).permute(0, 2, 1, 3)
    return X.reshape(folded // num_heads, seq_len, num_heads * head_dim)


def output_no_permute(X, num_heads):
    return X.reshape(X.shape[0] // num_heads, X.shape[1], -1)


def output_heads_first(X, num_heads):
    folded, seq_len, head_dim = X.shape
    X = X.reshape(num_heads, -1, seq_len, head_dim).permute(1, 2, 0, 3)
    return X.reshape(folded // num_heads, seq_len, -1)


def lens_right(valid_lens, num_heads):
    return torch.repeat_interleave(valid_lens, num_heads)


def lens_repeat(valid_lens, num_heads):
    return valid_lens.repeat(num_heads)


def lens_tile_with_cat(valid_lens, num_heads):
    return torch.cat([valid_lens] * num_heads)


def lens_unchanged(valid_lens, num_heads):
    return valid_lens


CHAPTER_03 = [
    (ch03.check_samples_by_hand, ([[14, 15], [16, 17]], [[20, 21], [22, 23]]), "a reshape alone"),
    (ch03.check_samples_by_hand, ([[12, 13], [16, 17]], ...), "replace each ..."),
    (ch03.check_folded_sample, ((9, 2, 2), 5), "head-major order"),
    (ch03.check_folded_sample, (torch.Size([9, 2, 2]), 6), "samples are counted from 0"),
    (ch03.check_folded_sample, ((3, 3, 2, 2), 7), "that is the shape after the permute"),
    (ch03.check_folded_sample, ((9, 2, 3), 7), "head_dim = num_hiddens // num_heads = 6 // 3 = 2"),
    (ch03.check_folded_sample, (9, 2, 2), "in the form ((..., ..., ...), ...)"),
    (ch03.check_transpose_qkv, qkv_no_permute, "Did you permute(0, 2, 1, 3) before the last reshape?"),
    (ch03.check_transpose_qkv, qkv_heads_first, "your samples are in head-major order"),
    (ch03.check_transpose_qkv, qkv_no_final_reshape, "your output has 4 axes (2, 4, 3, 2)"),
    (ch03.check_transpose_qkv, qkv_tokens_folded, "has shape (6, 4, 2) but should have (8, 3, 2): you folded tokens"),
    (ch03.check_transpose_qkv, qkv_view_after_permute, "because it merges axes that are not adjacent in memory"),
    (ch03.check_transpose_output, output_no_permute, "a reshape alone glues the heads together"),
    (ch03.check_transpose_output, output_heads_first, "you unfolded the first axis as (heads, batch)"),
    (ch03.check_repeat_valid_lens, lens_repeat, "you used repeat, which tiles the whole tensor"),
    (ch03.check_repeat_valid_lens, lens_tile_with_cat, "you used repeat, which tiles the whole tensor"),
    (ch03.check_repeat_valid_lens, lens_unchanged, "one length per sentence, (2,); the folded batch has"),
]


# ---- chapter 04 ------------------------------------------------------------------------------------------------

def count_right(num_hiddens, bias):
    return 4 * (num_hiddens * num_hiddens + (num_hiddens if bias else 0))


def count_no_bias(num_hiddens, bias):
    return 4 * num_hiddens * num_hiddens


def count_three_projections(num_hiddens, bias):
    return 3 * (num_hiddens ** 2 + bias * num_hiddens)


def count_one_bias(num_hiddens, bias):
    return 4 * num_hiddens ** 2 + bias * num_hiddens


def count_bias_matrices(num_hiddens, bias):
    return (8 if bias else 4) * num_hiddens ** 2


def forward_right(mha, queries, keys, values, valid_lens):
    num_heads = mha.num_heads
    Q, K, V = (transpose_qkv(X, num_heads) for X in (mha.W_q(queries), mha.W_k(keys), mha.W_v(values)))
    scores = Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1])
    weights = masked_softmax(scores, valid_lens.repeat_interleave(num_heads))
    return mha.W_o(transpose_output(weights @ V, num_heads))


def forward_with(mha, queries, keys, values, valid_lens, lens=None, scale=None, project=True):
    num_heads = mha.num_heads
    Q, K, V = (transpose_qkv(X, num_heads) for X in (mha.W_q(queries), mha.W_k(keys), mha.W_v(values)))
    scale = math.sqrt(Q.shape[-1]) if scale is None else scale(Q)
    lens = valid_lens.repeat_interleave(num_heads) if lens is None else lens(valid_lens, num_heads)
    output = transpose_output(masked_softmax(Q @ K.transpose(1, 2) / scale, lens) @ V, num_heads)
    return mha.W_o(output) if project else output


def forward_repeat(*args):
    return forward_with(*args, lens=lambda valid_lens, num_heads: valid_lens.repeat(num_heads))


def forward_no_output_projection(*args):
    return forward_with(*args, project=False)


def forward_scaled_by_num_hiddens(*args):
    return forward_with(*args, scale=lambda Q: math.sqrt(args[0].W_o.in_features))


def forward_unscaled(*args):
    return forward_with(*args, scale=lambda Q: 1.0)


CHAPTER_04 = [
    (ch04.check_mha_shapes, ((4, 3, 24), (4, 6, 3, 7)), "W_o, which maps to num_hiddens = 48"),
    (ch04.check_mha_shapes, ((4, 3, 48), (24, 3, 7)), "is the folded layout inside the layer"),
    (ch04.check_mha_shapes, ((4, 3, 48), (4, 6, 7, 3)), "one row per query and one column per key"),
    (ch04.check_mha_shapes, ((4, 7, 48), (4, 6, 7, 7)), "one row per QUERY (3)"),
    (ch04.check_mha_parameter_answer, 655_360, "you forgot the biases"),
    (ch04.check_mha_parameter_answer, 1_050_624, "as if the inputs had 512 features"),
    (ch04.check_mha_parameter_answer, 5_259_264, "the number of heads does not change the count"),
    (ch04.check_mha_parameter_answer, "657408", "write the parameter count in the form ..."),
    (ch04.check_count_mha_parameters, count_no_bias, "you ignored bias"),
    (ch04.check_count_mha_parameters, count_three_projections, "do not forget the output projection W_o"),
    (ch04.check_count_mha_parameters, count_one_bias, "each of the four projections has its own bias vector"),
    (ch04.check_count_mha_parameters, count_bias_matrices, "not a whole matrix"),
    (ch04.check_mha_forward, forward_repeat, "use valid_lens.repeat_interleave(num_heads)"),
    (ch04.check_mha_forward, forward_no_output_projection, "step 5 is the output projection"),
    (ch04.check_mha_forward, forward_scaled_by_num_hiddens, "you scaled by sqrt(num_hiddens)"),
    (ch04.check_mha_forward, forward_unscaled, "divide them by sqrt(head_dim) before the softmax"),
]


# ---- chapter 05 ------------------------------------------------------------------------------------------------

def flops_right(batch_size, num_queries, num_kvpairs, num_hiddens):
    projections = 2 * batch_size * (2 * num_queries + 2 * num_kvpairs) * num_hiddens**2
    return projections + 4 * batch_size * num_queries * num_kvpairs * num_hiddens


def flops_one_per_multiply_add(b, n_q, n_kv, d):
    return b * (2 * n_q + 2 * n_kv) * d * d + 2 * b * n_q * n_kv * d


def flops_three_projections(b, n_q, n_kv, d):
    return 2 * b * (n_q + 2 * n_kv) * d * d + 4 * b * n_q * n_kv * d


def flops_scores_only(b, n_q, n_kv, d):
    return 2 * b * (2 * n_q + 2 * n_kv) * d * d + 2 * b * n_q * n_kv * d


def flops_self_attention_only(b, n_q, n_kv, d):
    n = n_q  # assumes the keys have as many rows as the queries
    return 2 * b * 4 * n * d * d + 4 * b * n * n * d


CHAPTER_05 = [
    (ch05.check_num_heads_options, [2, 3, 4, 6, 8, 12, 16, 24, 48], "1 divides 48 too"),
    (ch05.check_num_heads_options, [1, 2, 3, 4, 6, 8, 12, 16, 24], "48 divides 48 too"),
    (ch05.check_num_heads_options, [1, 2, 4, 8, 16, 48], "3, 6, 12 and 24 divide 48 as well"),
    (ch05.check_num_heads_options, [2, 4, 8, 16, 32, 48], "32 does not divide 48"),
    (ch05.check_explorer_split_shape, (3, 6, 5, 8), "that is the 4-D layout"),
    (ch05.check_explorer_split_shape, (3, 5, 8), "the first axis is batch_size * num_heads = 18"),
    (ch05.check_explorer_split_shape, (18, 5, 6), "not num_heads"),
    (ch05.check_explorer_split_shape, (18, 5, 48), "each head sees only its slice"),
    (ch05.check_mha_flops, flops_one_per_multiply_add, "you counted one FLOP per multiply-add"),
    (ch05.check_mha_flops, flops_three_projections, "one projection is missing"),
    (ch05.check_mha_flops, flops_scores_only, "attention has TWO products"),
    (ch05.check_mha_flops, flops_self_attention_only, "the keys and values have num_kvpairs rows"),
    (ch05.check_score_memory_answer, 8 * 16 * 1024 * 1024, "each float32 score takes 4 bytes"),
    (ch05.check_score_memory_answer, 8 * 1024 * 1024 * 4, "multiply by num_heads = 16"),
    (ch05.check_score_memory_answer, 2 * 8 * 16 * 1024 * 1024 * 4, "the scores and the softmax weights together"),
    (ch05.check_score_memory_answer, 8 * 16 * 1024 * 4, "it grows as n^2, not n"),
]


# chapter 06: tests/test_exercises_ch06.py; chapter 07: tests/test_exercises_ch07.py

CORRECT_SOLUTIONS = [
    (ch01.check_strides, ((6, 1), (1, 6))),
    (ch01.check_strides, (torch.Size([6, 1]), [1, 6])),
    (ch01.check_permute_position, ((1, 1, 0), (1, 0, 1))),
    (ch01.check_split_heads, split_right),
    (ch01.check_merge_heads, merge_right),
    (ch02.check_score_variance, (1024.0, 32)),
    (ch02.check_causal_counts, torch.tensor([1, 2, 3])),
    (ch02.check_attention, attention_right),
    (ch02.check_masked_softmax, softmax_right),
    (ch03.check_samples_by_hand, ([[12, 13], [16, 17]], [[20, 21], [24, 25]])),
    (ch03.check_folded_sample, ((9, 2, 2), 7)),
    (ch03.check_transpose_qkv, qkv_right),
    (ch03.check_transpose_output, output_right),
    (ch03.check_repeat_valid_lens, lens_right),
    (ch04.check_mha_shapes, (torch.Size([4, 3, 48]), (4, 6, 3, 7))),
    (ch04.check_mha_parameter_answer, 657_408),
    (ch04.check_count_mha_parameters, count_right),
    (ch04.check_mha_forward, forward_right),
    (ch05.check_num_heads_options, [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]),
    (ch05.check_num_heads_options, {48, 24, 16, 12, 8, 6, 4, 3, 2, 1}),
    (ch05.check_explorer_split_shape, (18, 5, 8)),
    (ch05.check_explorer_split_shape, torch.Size([18, 5, 8])),
    (ch05.check_mha_flops, flops_right),
    (ch05.check_score_memory_answer, 8 * 16 * 1024 * 1024 * 4),
]


def _id(case) -> str:
    checker, solution = case[:2]
    return f"{checker.__name__}-{getattr(solution, '__name__', repr(solution))}"


@pytest.mark.parametrize("case", CORRECT_SOLUTIONS, ids=_id)
def test_a_correct_solution_is_confirmed(capsys, case):
    checker, solution = case
    assert run(capsys, checker, solution).startswith(CORRECT)


@pytest.mark.parametrize("case", CHAPTER_01 + CHAPTER_02 + CHAPTER_03 + CHAPTER_04 + CHAPTER_05,
                         ids=_id)
def test_each_typical_mistake_gets_its_hint(capsys, case):
    checker, solution, phrase = case
    expect_hint(run(capsys, checker, solution), phrase)


def stub(*args):
    raise NotImplementedError("Exercise: write the body")


@pytest.mark.parametrize("checker", [ch01.check_split_heads, ch01.check_merge_heads, ch02.check_attention,
                                     ch02.check_masked_softmax, ch03.check_transpose_qkv,
                                     ch03.check_transpose_output, ch03.check_repeat_valid_lens,
                                     ch04.check_count_mha_parameters, ch04.check_mha_forward],
                         ids=lambda c: c.__name__)
def test_a_stub_gets_told_to_write_the_body(capsys, checker):
    expect_hint(run(capsys, checker, stub), "still raises NotImplementedError. Write its body in the cell above")


def test_a_formula_with_the_wrong_arguments_is_explained(capsys):
    line = run(capsys, ch04.check_count_mha_parameters, lambda num_hiddens: 4 * num_hiddens ** 2)
    assert line.endswith("It should take (num_hiddens, bias), in this order.")


@pytest.mark.parametrize("not_a_function", [..., None, 42])
def test_passing_something_else_than_a_function_is_explained(capsys, not_a_function):
    expect_hint(run(capsys, ch03.check_transpose_qkv, not_a_function), "my_transpose_qkv")


def test_a_generic_mistake_gets_the_first_differing_value(capsys):
    def off_by_one(X, num_heads):
        return qkv_right(X, num_heads) + (X.shape[0] == 3)  # right on the first cases, wrong on the third

    line = run(capsys, ch03.check_transpose_qkv, off_by_one)
    assert line == (NOT_YET + "your output has the right shape (9, 5, 2) but different values (for X of shape "
                    "(3, 5, 6), num_heads=3): at index (0, 0, 0) it is 1, expected 0.")


def test_check_answer_building_block(capsys):
    hints = {(2, 3): "rows and columns are swapped."}
    _engine.check_answer(torch.Size([3, 2]), (3, 2), name="the shape", success="3 rows, 2 columns.")
    _engine.check_answer([2, 3], (3, 2), name="the shape", hints=hints)
    _engine.check_answer(0.1 + 0.2, 0.3, name="the sum")
    _engine.check_answer((3, 3), (3, 2), name="the shape", hints=hints)
    assert capsys.readouterr().out.splitlines() == [
        CORRECT + "3 rows, 2 columns.",
        NOT_YET + "rows and columns are swapped.",
        CORRECT + "the sum is 0.3.",
        NOT_YET + "(3, 3) is not the shape. Check your reasoning step by step, then try again.",
    ]


def test_check_formula_building_block(capsys):
    def reference(batch_size, num_heads, num_queries, num_kvpairs):
        return 4 * batch_size * num_heads * num_queries * num_kvpairs  # bytes of float32 scores

    def forgot_heads(batch_size, num_heads, num_queries, num_kvpairs):
        return 4 * batch_size * num_queries * num_kvpairs

    cases = [dict(batch_size=1, num_heads=1, num_queries=4, num_kvpairs=4),
             dict(batch_size=2, num_heads=8, num_queries=16, num_kvpairs=32)]
    hints = {forgot_heads: "every head has its own score matrix."}
    _engine.check_formula(reference, reference, cases, name="score_bytes", success="4 bytes per score.")
    _engine.check_formula(forgot_heads, reference, cases, name="score_bytes", hints=hints)
    _engine.check_formula(lambda *args: 0, reference, cases, name="score_bytes")
    assert capsys.readouterr().out.splitlines() == [
        CORRECT + "4 bytes per score.",
        NOT_YET + "every head has its own score matrix.",
        NOT_YET + "score_bytes gave 0, expected 64 (for batch_size=1, num_heads=1, num_queries=4, num_kvpairs=4).",
    ]


def test_check_function_building_block_with_tensors(capsys):
    cases = [(torch.arange(6).reshape(2, 3),), (torch.arange(12).reshape(3, 4),)]
    _engine.check_function(lambda X: X.T, lambda X: X.transpose(0, 1), cases, name="my_t", arg_names=["X"])
    _engine.check_function(lambda X: X.reshape(X.shape[1], X.shape[0]), lambda X: X.transpose(0, 1), cases,
                          name="my_t", arg_names=["X"], hints={lambda X: X.reshape(X.shape[::-1]): "a reshape "
                                                              "regroups, it does not move axes ({shape})."})
    assert capsys.readouterr().out.splitlines() == [
        CORRECT + "my_t agrees with the reference on 2 inputs.",
        NOT_YET + "a reshape regroups, it does not move axes ((3, 2)).",
    ]


def test_checkers_do_not_touch_the_global_random_state():
    before = torch.random.get_rng_state()
    ch04.check_mha_forward(forward_right)
    ch02.check_attention(attention_right)
    assert torch.equal(torch.random.get_rng_state(), before)
