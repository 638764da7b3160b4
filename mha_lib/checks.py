"""Checkers for the exercises: they run your answer against mha_lib and say what went wrong, kindly.

Every checker prints ONE line and returns None, so a wrong answer never ends in a traceback:

    ✅ Correct: <a short confirmation>
    ❌ Not yet: <a hint that names the likely mistake>

Exceptions raised by your own code are caught and explained in the same way.

Coding exercises pass your function, e.g. ``check_transpose_qkv(my_transpose_qkv)``: it is called on
seeded inputs of several shapes (copies, so your function cannot spoil them) and its result is
compared with the reference in mha_lib. When it differs, the checker tries the typical wrong
solutions of that exercise (view without permute, ``repeat`` for ``repeat_interleave``, a missing
``1/sqrt(d)``, ...) on the same input; if one of them gives exactly your result, the hint names it.
"Predict" exercises pass a value: the reader writes ``answer = ((9, 2, 2), 7)`` and runs
``check_folded_sample(answer)``; known wrong answers get their own hint. (The expected answers are in
this file: reading it is allowed, but predicting first teaches more.)

Building blocks for new exercises (each prints and returns None as above):

- ``check_answer(answer, expected, *, name, hints={wrong_answer: hint})``: a predicted value or shape.
  Tuples, lists, ``torch.Size`` and small tensors compare by value; floats with a relative tolerance.
- ``check_function(fn, reference, cases, *, name, arg_names, hints={wrong_fn: hint}, mutation_hint=None)``:
  a reader's function against a reference on each case (a tuple of arguments); results may be tensors,
  numbers or tuples of them. A hint is chosen when ``wrong_fn`` gives exactly the reader's result (and
  the reference does not); ``mutation_hint`` is given when the function changes its tensor arguments.
- ``check_formula(fn, reference, cases, *, name, hints={wrong_fn: hint})``: a reader's formula
  (FLOPs, parameters, bytes of score memory, ...) as a function; each case is a dict of its arguments,
  e.g. ``{"num_hiddens": 512, "bias": True}``, passed by position in that order.

Hints may use ``{shape}`` (the shape of the reader's result) and ``{expected_shape}``. For a new exercise,
add a small wrapper here (like the ones below) rather than calling a building block in the notebook: the
checker cell stays in the student copy, so an expected value written there would give the answer away.
In the notebook, the reader's cell is tagged ``solution`` (``make student`` turns it into a stub) and
the next code cell calls the checker.

Exercises per chapter: 01 ``check_strides``, ``check_permute_position``, ``check_split_heads``,
``check_merge_heads``; 02 ``check_score_variance``, ``check_causal_counts``, ``check_attention``,
``check_masked_softmax``; 03 ``check_folded_sample``, ``check_transpose_qkv``,
``check_transpose_output``, ``check_repeat_valid_lens``; 04 ``check_mha_shapes``,
``check_mha_parameter_answer``, ``check_count_mha_parameters``, ``check_mha_forward``; 05
``check_num_heads_options``, ``check_explorer_split_shape``, ``check_mha_flops``, ``check_score_memory_answer``;
06 ``check_task_targets``, ``check_ablate_head``; 07 ``check_call_counts``, ``check_score_bytes_answer``,
``check_attention_flops``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .anatomy import count_parameters, mha_flops
from .functional import masked_softmax, scaled_dot_product_attention, transpose_output, transpose_qkv
from .modules import MultiHeadAttention

__all__ = [
    "check_ablate_head",
    "check_answer",
    "check_attention",
    "check_attention_flops",
    "check_call_counts",
    "check_causal_counts",
    "check_count_mha_parameters",
    "check_explorer_split_shape",
    "check_folded_sample",
    "check_formula",
    "check_function",
    "check_masked_softmax",
    "check_merge_heads",
    "check_mha_flops",
    "check_mha_forward",
    "check_mha_parameter_answer",
    "check_mha_shapes",
    "check_num_heads_options",
    "check_permute_position",
    "check_repeat_valid_lens",
    "check_score_bytes_answer",
    "check_score_memory_answer",
    "check_score_variance",
    "check_split_heads",
    "check_strides",
    "check_task_targets",
    "check_transpose_output",
    "check_transpose_qkv",
]

CORRECT = "✅ Correct: "
NOT_YET = "❌ Not yet: "


# ----------------------------------------------------------------------------------------------------------------
# The building blocks
# ----------------------------------------------------------------------------------------------------------------

def check_answer(answer: Any, expected: Any, *, name: str, hints: Mapping[Any, str] | None = None,
                 success: str = "") -> None:
    """Compare a predicted value or shape with the expected one; print a confirmation or a hint."""
    print(_answer_message(answer, expected, name=name, hints=hints, success=success))


def check_function(fn: Any, reference: Callable, cases: Sequence[tuple], *, name: str,
                   arg_names: Sequence[str], hints: Mapping[Callable, str] | None = None,
                   success: str = "", mutation_hint: str | None = None) -> None:
    """Run ``fn`` and ``reference`` on every case (a tuple of arguments); print a confirmation or a hint.

    With ``mutation_hint``, a function that changes its tensor arguments in place gets that hint.
    """
    print(_function_message(fn, reference, cases, name=name, arg_names=arg_names, hints=hints, success=success,
                            mutation_hint=mutation_hint))


def check_formula(fn: Any, reference: Callable[..., Any], cases: Sequence[Mapping[str, Any]], *, name: str,
                  hints: Mapping[Callable, str] | None = None, success: str = "") -> None:
    """Check a formula written as a function, e.g. ``fn(num_hiddens, bias)``; each case is a dict of its arguments.

    The arguments are passed by position, in the order of the dict, so the reader may name them freely.
    """
    def call(f: Callable) -> Callable:
        return lambda case: f(*case.values())

    wrapped = {call(wrong): hint for wrong, hint in (hints or {}).items()}
    if not callable(fn):
        print(_not_callable(fn, name))
        return
    print(_function_message(call(fn), call(reference), [(dict(case),) for case in cases], name=name,
                            arg_names=["arguments"], hints=wrapped, success=success, keywords=True))


# ----------------------------------------------------------------------------------------------------------------
# Chapter 01: tensor shapes
# ----------------------------------------------------------------------------------------------------------------

def check_strides(answer: Any) -> None:
    """Exercise: the strides of ``torch.arange(24).reshape(4, 6)`` and of its transpose ``.T``."""
    check_answer(answer, ((6, 1), (1, 6)), name="the strides", hints={
        ((6, 1), (6, 1)): "transpose copies nothing and so cannot keep row-major strides: it swaps the two "
                          "strides of A. What are they after the swap?",
        ((1, 6), (6, 1)): "the two pairs are swapped. A is the fresh, row-major tensor: one step right is 1 "
                          "element, one step down is a whole row of 6.",
        ((4, 1), (1, 4)): "a stride counts elements to skip in memory. One row of A holds 6 elements (A has 6 "
                          "columns), so one step down skips 6, not 4.",
        ((1, 4), (4, 1)): "A = arange(24).reshape(4, 6) is row-major: its last axis has stride 1.",
    }, success="A has row-major strides (6, 1); A.T swaps them to (1, 6), so A.T is not contiguous.")


def check_permute_position(answer: Any) -> None:
    """Exercise: the index of 13 in ``X.permute(2, 0, 1)`` and ``X.transpose(0, 2)``, X = arange(24).view(2, 3, 4)."""
    check_answer(answer, ((1, 1, 0), (1, 0, 1)), name="the positions of 13", hints={
        ((1, 0, 1), (1, 0, 1)): "(1, 0, 1) is right for transpose(0, 2), which swaps the first and last index "
                                "(both 1 here). permute(2, 0, 1) moves old axis 2 to the front: (k, i, j).",
        ((0, 1, 1), (1, 0, 1)): "for permute(2, 0, 1) the new axis 0 is the old axis 2, the new axis 1 is the "
                                "old axis 0, the new axis 2 the old axis 1: new index = (k, i, j).",
        ((1, 1, 0), (1, 1, 0)): "permute(2, 0, 1) and transpose(0, 2) are different moves: transpose(0, 2) "
                                "swaps the first and last index and keeps the middle one.",
    }, success="13 is X[1, 0, 1]; permute(2, 0, 1) reads (k, i, j) and transpose(0, 2) reads (k, j, i).")


def _split_heads_right(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads).transpose(1, 2)  # (b, n, h*d) -> (b, h, n, d)


def _split_heads_no_transpose(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, num_heads, n, hd // num_heads)  # same shape, tokens and heads mixed


def _split_heads_4d_only(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads)  # heads still after tokens


def _split_heads_wrong_swap(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads).transpose(2, 3)


def check_split_heads(fn: Any) -> None:
    """Exercise: ``my_split_heads(T, num_heads)``: ``(b, n, h*d) -> (b, h, n, d)``."""
    check_function(fn, _split_heads_right, _int_cases([(2, 3, 4, 2), (1, 5, 6, 3), (3, 2, 8, 4), (2, 4, 6, 1)]),
                   name="my_split_heads", arg_names=["T", "num_heads"], hints={
        _split_heads_no_transpose: "your output has the right shape {shape}, but a head-row now mixes the "
                                   "features of several tokens: view/reshape straight to (b, h, n, d) regroups "
                                   "memory in order. Reshape to (b, n, h, d) first, then transpose(1, 2).",
        _split_heads_4d_only: "your output has shape {shape}: the heads axis is still behind the tokens axis. "
                              "Finish with transpose(1, 2) to get (b, h, n, d).",
        _split_heads_wrong_swap: "your output has shape {shape}: you swapped the heads axis with the features "
                                 "axis. Swap it with the tokens axis instead: transpose(1, 2).",
    }, success="every head holds one row per token, in order, with its own head_dim features.")


def _merge_heads_right(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.transpose(1, 2).reshape(b, n, h * d)  # (b, h, n, d) -> (b, n, h, d) -> (b, n, h*d)


def _merge_heads_no_transpose(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.reshape(b, n, h * d)


def _merge_heads_wrong_order(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.permute(0, 2, 3, 1).reshape(b, n, h * d)  # features before heads


def check_merge_heads(fn: Any) -> None:
    """Exercise: ``my_merge_heads(H)``: ``(b, h, n, d) -> (b, n, h*d)``, undoing ``my_split_heads``."""
    # Contiguous inputs, as the output of attention is: a non-contiguous one would forgive view after transpose.
    specs = [(2, 3, 4, 2), (1, 5, 6, 3), (3, 2, 8, 4)]
    cases = [(_split_heads_right(T, h).contiguous(),) for (T, h) in _int_cases(specs)]
    check_function(fn, _merge_heads_right, cases, name="my_merge_heads", arg_names=["H"], hints={
        _merge_heads_no_transpose: "your output has the right shape {shape}, but a reshape alone reads the "
                                   "heads in memory order, head by head. Move the heads behind the tokens "
                                   "first: transpose(1, 2), then reshape.",
        _merge_heads_wrong_order: "your output has the right shape {shape}, but the features of the heads are "
                                  "interleaved: you moved the features axis in front of the heads. After "
                                  "transpose(1, 2) the order (b, n, h, d) is already right.",
    }, success="transpose(1, 2) then reshape puts each token's heads side by side again.")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 02: scaled dot-product attention
# ----------------------------------------------------------------------------------------------------------------

def check_score_variance(answer: Any) -> None:
    """Exercise: Var(q . k) for d = 64 when every feature has variance 4, and the number to divide by."""
    check_answer(answer, (1024, 32), name="the variance and the divisor", hints={
        (64, 8): "the features have variance 4 here, not 1: each product q_i k_i has variance 4 * 4 = 16.",
        (256, 16): "both q_i and k_i have variance 4, so each product q_i k_i has variance 4 * 4 = 16, "
                   "not 4; the sum of 64 of them has 64 * 16.",
        (1024, 1024): "dividing a number by c divides its variance by c squared. To bring 1024 down to 1, "
                      "divide by the standard deviation, sqrt(1024).",
        (1024, 8): "sqrt(d) = 8 only brings the variance back to 1 when the features have variance 1. Here "
                   "the variance is 1024, so divide by sqrt(1024).",
    }, success="Var(q . k) = d * 4 * 4 = 1024; dividing by its standard deviation 32 brings it back to 1.")


def check_causal_counts(answer: Any) -> None:
    """Exercise: how many keys each query may see in ``causal_mask(3, 5)``."""
    check_answer(answer, (1, 2, 3), name="the number of visible keys per query", hints={
        (3, 4, 5): "that is the bottom-right alignment (the last query sees every key). causal_mask and "
                   "PyTorch's is_causal=True align the triangle top-left: query i sees keys 0..i.",
        (0, 1, 2): "query i may see key i itself, not only the keys before it: the diagonal is True.",
        (1, 2, 3, 3, 3): "causal_mask(3, 5) has 3 rows, one per query: give 3 numbers.",
    }, success="query i sees keys 0..i: 1, 2 and 3 keys; keys 3 and 4 stay hidden from every query.")


def _attention_right(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    return scaled_dot_product_attention(queries, keys, values)


def _attention_variant(queries: Tensor, keys: Tensor, values: Tensor, *, scale: float | None = None,
                       dim: int = -1) -> tuple[Tensor, Tensor]:
    d = queries.shape[-1]
    scale = 1 / math.sqrt(d) if scale is None else scale
    weights = F.softmax(queries @ keys.transpose(-2, -1) * scale, dim=dim)
    return weights @ values, weights


def _attention_no_scale(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    return _attention_variant(queries, keys, values, scale=1.0)


def _attention_scale_by_d(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    return _attention_variant(queries, keys, values, scale=1 / queries.shape[-1])


def _attention_softmax_over_queries(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    return _attention_variant(queries, keys, values, dim=-2)


def _attention_weights_only(queries: Tensor, keys: Tensor, values: Tensor) -> Tensor:
    return _attention_variant(queries, keys, values)[1]


def _attention_output_only(queries: Tensor, keys: Tensor, values: Tensor) -> Tensor:
    return _attention_variant(queries, keys, values)[0]


def _attention_cases() -> list[tuple]:
    generator = torch.Generator().manual_seed(0)
    cases = []
    for batch_size, num_queries, num_kvpairs, d, value_dim in [(2, 3, 5, 4, 6), (1, 4, 4, 16, 2), (3, 2, 7, 8, 8)]:
        cases.append((2 * torch.randn(batch_size, num_queries, d, generator=generator),
                      2 * torch.randn(batch_size, num_kvpairs, d, generator=generator),
                      torch.randn(batch_size, num_kvpairs, value_dim, generator=generator)))
    return cases


def check_attention(fn: Any) -> None:
    """Exercise: ``my_attention(queries, keys, values)`` returns ``(output, weights)`` of one head."""
    check_function(fn, _attention_right, _attention_cases(), name="my_attention",
                   arg_names=["queries", "keys", "values"], hints={
        _attention_no_scale: "the scores are not scaled: divide queries @ keys^T by sqrt(d), where d is the "
                             "number of features of a query.",
        _attention_scale_by_d: "you divided the scores by d; divide by sqrt(d) (math.sqrt(d)), which brings "
                               "their variance back to 1.",
        _attention_softmax_over_queries: "the softmax runs over the wrong axis: the weights of each QUERY (each "
                                         "row) must sum to 1, so use softmax(..., dim=-1), over the keys.",
        _attention_weights_only: "your function returned only the weights. Return a pair: "
                                 "(weights @ values, weights).",
        _attention_output_only: "your function returned only the output. Return a pair: (output, weights).",
    }, success="softmax(Q K^T / sqrt(d)) V, with the weights of each query summing to 1.")


def _masked_softmax_right(X: Tensor, valid_lens: Tensor) -> Tensor:
    return masked_softmax(X, valid_lens)


def _masked_softmax_fill(X: Tensor, valid_lens: Tensor, value: float, zero_rows: bool = False) -> Tensor:
    keep = torch.arange(X.shape[-1]) < valid_lens[:, None, None]  # (b, 1, k)
    weights = F.softmax(X.masked_fill(~keep, value), dim=-1)
    return weights.masked_fill(~keep, 0.0) if zero_rows else weights


def _masked_softmax_zero_fill(X: Tensor, valid_lens: Tensor) -> Tensor:
    return _masked_softmax_fill(X, valid_lens, 0.0)


def _masked_softmax_large_negative(X: Tensor, valid_lens: Tensor) -> Tensor:
    return _masked_softmax_fill(X, valid_lens, -1e6)


def _masked_softmax_minus_inf(X: Tensor, valid_lens: Tensor) -> Tensor:
    return _masked_softmax_fill(X, valid_lens, float("-inf"))


def _masked_softmax_off_by_one(X: Tensor, valid_lens: Tensor) -> Tensor:
    keep = torch.arange(X.shape[-1]) <= valid_lens[:, None, None]  # one key too many
    return F.softmax(X.masked_fill(~keep, torch.finfo(X.dtype).min), dim=-1).masked_fill(~keep, 0.0)


def _masked_softmax_cases() -> list[tuple]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(2, 3, 4, generator=generator), torch.tensor([2, 4])),
            (torch.randn(3, 2, 5, generator=generator), torch.tensor([1, 5, 3])),
            (torch.randn(2, 2, 3, generator=generator), torch.tensor([0, 2])),
            (torch.randn(2, 2, 3, generator=generator).half(), torch.tensor([1, 3]))]  # float16, as on a GPU


def check_masked_softmax(fn: Any) -> None:
    """Exercise: ``my_masked_softmax(X, valid_lens)`` with ``valid_lens`` of shape ``(batch_size,)``."""
    check_function(fn, _masked_softmax_right, _masked_softmax_cases(), name="my_masked_softmax",
                   arg_names=["X", "valid_lens"], hints={
        _masked_softmax_zero_fill: "you filled the hidden scores with 0, but exp(0) = 1: hidden keys still get "
                                   "weight. Fill with a very negative number, torch.finfo(X.dtype).min.",
        _masked_softmax_large_negative: "almost: a row whose valid length is 0 gets the same weight on every "
                                        "hidden key. Set the weights of hidden keys to 0 after the softmax "
                                        "(e.g. masked_fill(~mask, 0.0)).",
        _masked_softmax_minus_inf: "with -inf, a row whose valid length is 0 has only -inf scores and its "
                                   "softmax is NaN. Fill with torch.finfo(X.dtype).min and set the hidden "
                                   "weights to 0 after the softmax.",
        _masked_softmax_off_by_one: "each row keeps one key too many: key j is valid when j < valid_len, "
                                    "not j <= valid_len.",
    }, success="hidden keys get weight exactly 0, and a row with valid length 0 is all zeros, not NaN.",
        mutation_hint="your function changed its input X (an in-place fill like X[~mask] = ...). Use the "
                      "out-of-place X.masked_fill(~mask, value), which leaves the caller's scores intact.")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 03: splitting heads
# ----------------------------------------------------------------------------------------------------------------

def check_folded_sample(answer: Any) -> None:
    """Exercise: X of shape (3, 2, 6), num_heads = 3: the folded shape, and the sample of sentence 2, head 1."""
    check_answer(answer, ((9, 2, 2), 7), name="the folded shape and sample", hints={
        ((9, 2, 2), 5): "sample 5 is head-major order (h * batch_size + b). After permute(0, 2, 1, 3) the heads of "
                        "one sentence sit next to each other: sample = b * num_heads + h.",
        ((9, 2, 2), 6): "samples are counted from 0: sentence 2, head 1 is 2 * 3 + 1.",
        ((3, 3, 2, 2), 7): "that is the shape after the permute; the last reshape folds batch and heads into "
                           "one axis of 3 * 3 = 9 samples.",
        ((9, 2, 3), 7): "head_dim = num_hiddens // num_heads = 6 // 3 = 2, not 3.",
        ((6, 2, 3), 7): "there are 3 heads (num_heads = 3), so 3 * 3 = 9 samples of head_dim = 2 features.",
    }, success="(3, 2, 6) -> (9, 2, 2), and sentence b, head h is sample b * num_heads + h = 7.")


def _transpose_qkv_no_permute(X: Tensor, num_heads: int) -> Tensor:
    b, n, hd = X.shape
    return X.reshape(b * num_heads, n, hd // num_heads)


def _transpose_qkv_head_major(X: Tensor, num_heads: int) -> Tensor:
    b, n, hd = X.shape
    return X.reshape(b, n, num_heads, hd // num_heads).permute(2, 0, 1, 3).reshape(b * num_heads, n, hd // num_heads)


def _transpose_qkv_no_fold(X: Tensor, num_heads: int) -> Tensor:
    b, n, hd = X.shape
    return X.reshape(b, n, num_heads, hd // num_heads).permute(0, 2, 1, 3)


def _transpose_qkv_tokens_folded(X: Tensor, num_heads: int) -> Tensor:
    b, n, hd = X.shape
    return X.reshape(b * n, num_heads, hd // num_heads)


def _qkv_cases() -> list[tuple]:
    # Sizes that differ from one another first, so that a wrong shape shows which axis is wrong.
    return _int_cases([(2, 3, 8, 4), (3, 5, 6, 3), (2, 2, 4, 2), (1, 4, 6, 2)])


def check_transpose_qkv(fn: Any) -> None:
    """Exercise: ``my_transpose_qkv(X, num_heads)``: ``(b, n, h*d) -> (b*h, n, d)``."""
    check_function(fn, transpose_qkv, _qkv_cases(), name="my_transpose_qkv", arg_names=["X", "num_heads"], hints={
        _transpose_qkv_no_permute: "your output has shape {shape}, the right one, but heads should come before "
                                   "tokens: a reshape alone cuts the memory in order and mixes tokens and heads. "
                                   "Did you permute(0, 2, 1, 3) before the last reshape?",
        _transpose_qkv_head_major: "your samples are in head-major order (head 0 of every sentence, then head 1, "
                                   "...): permute(2, 0, 1, 3) puts heads before sentences. Use permute(0, 2, 1, 3) "
                                   "so that sentence b, head h is sample b * num_heads + h.",
        _transpose_qkv_no_fold: "your output has 4 axes {shape}, the (b, h, n, d) layout: finish with a reshape "
                                "that folds batch and heads into one axis, (b * h, n, d).",
        _transpose_qkv_tokens_folded: "your output has shape {shape} but should have {expected_shape}: you folded "
                                      "tokens into the batch. Keep the tokens axis; fold (sentence, head) pairs.",
    }, success="(b, n, h*d) -> (b, n, h, d) -> (b, h, n, d) -> (b*h, n, d), sentence-major.")


def _transpose_output_no_permute(X: Tensor, num_heads: int) -> Tensor:
    bh, n, d = X.shape
    return X.reshape(bh // num_heads, n, num_heads * d)


def _transpose_output_head_major(X: Tensor, num_heads: int) -> Tensor:
    bh, n, d = X.shape
    return X.reshape(num_heads, bh // num_heads, n, d).permute(1, 2, 0, 3).reshape(bh // num_heads, n, num_heads * d)


def _output_cases() -> list[tuple]:
    return [(transpose_qkv(X, h), h) for X, h in _qkv_cases()]


def check_transpose_output(fn: Any) -> None:
    """Exercise: ``my_transpose_output(X, num_heads)``: ``(b*h, n, d) -> (b, n, h*d)``, undoing transpose_qkv."""
    check_function(fn, transpose_output, _output_cases(), name="my_transpose_output",
                   arg_names=["X", "num_heads"], hints={
        _transpose_output_no_permute: "your output has the right shape {shape}, but a reshape alone glues the "
                                      "heads together in memory order. Unfold to (b, h, n, d), permute(0, 2, 1, 3), "
                                      "then reshape to (b, n, h*d).",
        _transpose_output_head_major: "you unfolded the first axis as (heads, batch); transpose_qkv folded it as "
                                      "(batch, heads): reshape to (b, num_heads, n, d).",
    }, success="transpose_output(transpose_qkv(X, h), h) gives X back.")


def _repeat_right(valid_lens: Tensor, num_heads: int) -> Tensor:
    return valid_lens.repeat_interleave(num_heads, dim=0)


def _repeat_tiled(valid_lens: Tensor, num_heads: int) -> Tensor:
    return valid_lens.repeat(num_heads)


def _repeat_not_at_all(valid_lens: Tensor, num_heads: int) -> Tensor:
    return valid_lens


def check_repeat_valid_lens(fn: Any) -> None:
    """Exercise: ``my_repeat_valid_lens(valid_lens, num_heads)`` for the folded batch of transpose_qkv."""
    cases = [(torch.tensor([1, 2]), 2), (torch.tensor([3, 1, 2]), 2), (torch.tensor([4, 2]), 3),
             (torch.tensor([5]), 4)]
    check_function(fn, _repeat_right, cases, name="my_repeat_valid_lens", arg_names=["valid_lens", "num_heads"],
                   hints={
        _repeat_tiled: "you used repeat, which tiles the whole tensor: [1, 2] -> [1, 2, 1, 2]. The heads of one "
                       "sentence sit next to each other, so each length must repeat in place: repeat_interleave.",
        _repeat_not_at_all: "your result has one length per sentence, {shape}; the folded batch has "
                            "batch_size * num_heads samples, {expected_shape}.",
    }, success="repeat_interleave: [1, 2] -> [1, 1, 2, 2], one length per (sentence, head) sample.")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 04: multi-head attention
# ----------------------------------------------------------------------------------------------------------------

def check_mha_shapes(answer: Any) -> None:
    """Exercise: output and ``.attention_weights`` shapes of MultiHeadAttention(16, 12, 24, 48, 6), b=4, 3 q, 7 kv."""
    check_answer(answer, ((4, 3, 48), (4, 6, 3, 7)), name="the two shapes", hints={
        ((4, 3, 24), (4, 6, 3, 7)): "the output comes from W_o, which maps to num_hiddens = 48 features, "
                                    "whatever the size of the values.",
        ((4, 3, 12), (4, 6, 3, 7)): "the output has as many rows as the queries, but num_hiddens = 48 features, "
                                    "not query_size.",
        ((4, 3, 48), (24, 3, 7)): "(24, 3, 7) is the folded layout inside the layer; .attention_weights is "
                                  "unfolded to (batch_size, num_heads, num_queries, num_kvpairs).",
        ((4, 3, 48), (4, 6, 7, 3)): "weights have one row per query and one column per key: "
                                    "(batch_size, num_heads, num_queries, num_kvpairs).",
        ((4, 7, 48), (4, 6, 7, 7)): "the output has one row per QUERY (3), not per key-value pair.",
    }, success="output (batch_size, num_queries, num_hiddens); weights (batch_size, num_heads, queries, kvpairs).")


def check_mha_parameter_answer(answer: Any) -> None:
    """Exercise: the parameter count of ``MultiHeadAttention(256, 256, 256, 512, 8, bias=True)``."""
    check_answer(answer, 657_408, name="the parameter count", hints={
        655_360: "you forgot the biases: bias=True gives each of the four projections num_hiddens = 512 biases.",
        1_050_624: "that is 4 * 512^2 + 4 * 512, as if the inputs had 512 features. W_q, W_k and W_v take 256 "
                   "input features: each is 256 x 512 (plus 512 biases); only W_o is 512 x 512.",
        1_048_576: "that is 4 * 512^2: W_q, W_k and W_v take 256 input features (256 x 512 each), and bias=True "
                   "adds biases.",
        5_259_264: "the number of heads does not change the count: the heads split num_hiddens between them.",
    }, success="3 * (256 * 512 + 512) + (512 * 512 + 512) = 657408; the number of heads plays no part.")


def _params_reference(num_hiddens: int, bias: bool) -> int:
    with torch.device("meta"):  # counts the real layer's parameters without allocating them
        layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads=1, bias=bias)
    return count_parameters(layer)


def check_count_mha_parameters(fn: Any) -> None:
    """Exercise: ``count_mha_parameters(num_hiddens, bias)`` for a layer with query/key/value size = num_hiddens."""
    cases = [{"num_hiddens": 8, "bias": False}, {"num_hiddens": 8, "bias": True},
             {"num_hiddens": 100, "bias": True}, {"num_hiddens": 512, "bias": False}]
    check_formula(fn, _params_reference, cases, name="count_mha_parameters", hints={
        lambda num_hiddens, bias: 4 * num_hiddens ** 2:
            "you ignored bias: with bias=True each of the four projections adds num_hiddens biases.",
        lambda num_hiddens, bias: 3 * num_hiddens ** 2 + (3 * num_hiddens if bias else 0):
            "you counted three projections; do not forget the output projection W_o (4 in all).",
        lambda num_hiddens, bias: 4 * num_hiddens ** 2 + (num_hiddens if bias else 0):
            "each of the four projections has its own bias vector: 4 * num_hiddens biases.",
        lambda num_hiddens, bias: 4 * num_hiddens ** 2 + (4 * num_hiddens ** 2 if bias else 0):
            "a bias has one number per output feature (num_hiddens), not a whole matrix.",
    }, success="4 * num_hiddens^2 weights, plus 4 * num_hiddens biases when bias=True.")


def _mha_variant(mha: MultiHeadAttention, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor, *,
                 tiled: bool = False, scale: str = "head_dim", output_projection: bool = True) -> Tensor:
    h = mha.num_heads
    Q, K, V = (transpose_qkv(X, h) for X in (mha.W_q(queries), mha.W_k(keys), mha.W_v(values)))
    lens = valid_lens.repeat(h) if tiled else valid_lens.repeat_interleave(h)
    d = {"head_dim": Q.shape[-1], "num_hiddens": Q.shape[-1] * h, "none": 1}[scale]
    weights = masked_softmax(Q @ K.transpose(1, 2) / math.sqrt(d), lens)
    output = transpose_output(weights @ V, h)
    return mha.W_o(output) if output_projection else output


def _mha_cases() -> list[tuple]:
    generator = torch.Generator().manual_seed(2)
    cases = []
    for batch_size, num_queries, num_kvpairs, sizes, num_hiddens, num_heads, lens in [
        (2, 3, 5, (6, 6, 6), 8, 2, [2, 5]), (3, 4, 4, (5, 7, 3), 12, 3, [4, 1, 3]), (2, 2, 6, (4, 4, 4), 16, 4, [6, 3])
    ]:
        torch.manual_seed(int(torch.randint(0, 10_000, (1,), generator=generator)))
        mha = MultiHeadAttention(sizes[1], sizes[0], sizes[2], num_hiddens, num_heads).eval()
        cases.append((mha, torch.randn(batch_size, num_queries, sizes[0], generator=generator),
                      torch.randn(batch_size, num_kvpairs, sizes[1], generator=generator),
                      torch.randn(batch_size, num_kvpairs, sizes[2], generator=generator), torch.tensor(lens)))
    return cases


def check_mha_forward(fn: Any) -> None:
    """Exercise: ``my_mha_forward(mha, queries, keys, values, valid_lens)``, the same as ``mha(...)``."""
    with torch.random.fork_rng():
        cases = _mha_cases()
    check_function(fn, lambda mha, q, k, v, lens: mha(q, k, v, lens), cases, name="my_mha_forward",
                   arg_names=["mha", "queries", "keys", "values", "valid_lens"], hints={
        lambda *a: _mha_variant(*a, tiled=True):
            "the heads of one sentence got the valid length of another: use valid_lens.repeat_interleave(num_heads),"
            " not repeat (the heads of one sentence sit next to each other in the folded batch).",
        lambda *a: _mha_variant(*a, output_projection=False):
            "you stopped after concatenating the heads: step 5 is the output projection, mha.W_o(...).",
        lambda *a: _mha_variant(*a, scale="num_hiddens"):
            "you scaled by sqrt(num_hiddens); each head takes dot products of head_dim features, so divide by "
            "sqrt(head_dim).",
        lambda *a: _mha_variant(*a, scale="none"):
            "the scores are not scaled: divide them by sqrt(head_dim) before the softmax.",
    }, success="project, split heads, attend with repeat_interleave'd valid_lens, concatenate, project: "
               "the same as mha(...).")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 05: the interactive explorer
# ----------------------------------------------------------------------------------------------------------------

def check_num_heads_options(answer: Any) -> None:
    """Exercise: the values the ``num_heads`` slider offers when ``num_hiddens = 48``."""
    expected = [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]
    hints = {
        tuple(expected[1:]): "1 divides 48 too: a single head of 48 features is allowed.",
        tuple(expected[:-1]): "48 divides 48 too: 48 heads of one feature each are allowed.",
        tuple(expected[1:-1]): "1 and 48 divide 48 too: one head of 48 features, or 48 heads of one.",
        (1, 2, 4, 8, 16, 48): "3, 6, 12 and 24 divide 48 as well: 48 = 2^4 * 3, so the divisors mix powers of 2 and 3.",
        (2, 4, 8, 16, 32, 48): "32 does not divide 48 (48 / 32 = 1.5); the slider offers only divisors.",
    }
    if isinstance(answer, (list, tuple, set)) and not _contains_ellipsis(answer):
        answer = tuple(sorted(answer)) if all(isinstance(a, int) for a in answer) else tuple(answer)
    check_answer(answer, tuple(expected), name="the num_heads options", hints=hints,
                 success="the divisors of 48; each one gives a whole head_dim = 48 / num_heads.")


def check_explorer_split_shape(answer: Any) -> None:
    """Exercise: the split-heads shape of the queries for d=48, h=6, batch_size=3, num_queries=5."""
    check_answer(answer, (18, 5, 8), name="the shape", hints={
        (3, 6, 5, 8): "that is the 4-D layout (batch, heads, queries, head_dim); transpose_qkv folds the heads "
                      "into the batch axis: (batch_size * num_heads, num_queries, head_dim).",
        (3, 5, 8): "the heads are folded into the batch axis, so the first axis is batch_size * num_heads = 18.",
        (18, 5, 6): "the last axis is head_dim = num_hiddens / num_heads = 48 / 6, not num_heads.",
        (18, 8, 5): "the queries come before the features: (batch_size * num_heads, num_queries, head_dim).",
        (18, 5, 48): "each head sees only its slice: head_dim = 48 / 6 features, not all 48.",
    }, success="(batch_size * num_heads, num_queries, head_dim) = (3 * 6, 5, 48 / 6).")


def _mha_flops_total(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int) -> int:
    return mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads=1)["total"]


def check_mha_flops(fn: Any) -> None:
    """Exercise: ``my_mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens)``, the total FLOPs of one layer."""
    cases = [{"batch_size": 1, "num_queries": 2, "num_kvpairs": 3, "num_hiddens": 4},
             {"batch_size": 2, "num_queries": 6, "num_kvpairs": 8, "num_hiddens": 64},
             {"batch_size": 3, "num_queries": 128, "num_kvpairs": 16, "num_hiddens": 512}]
    check_formula(fn, _mha_flops_total, cases, name="my_mha_flops", hints={
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) // 2:
            "you counted one FLOP per multiply-add; count two (a multiply and an add), as PyTorch does.",
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) - 2 * b * n_q * d * d:
            "one projection is missing: W_q, W_k, W_v and the output projection W_o each cost 2 * rows * d^2.",
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) - 2 * b * n_q * n_kv * d:
            "attention has TWO products: the scores Q K^T and the weighted sum weights @ V.",
        lambda b, n_q, n_kv, d: 8 * b * n_q * d * d + 4 * b * n_q * n_q * d:
            "the keys and values have num_kvpairs rows, not num_queries: W_k and W_v cost 2 * b * n_kv * d^2 "
            "each, and the products 2 * b * n_q * n_kv * d each.",
    }, success="4 * b * (n_q + n_kv) * d^2 for the projections + 4 * b * n_q * n_kv * d for attention.")


def check_score_memory_answer(answer: Any) -> None:
    """Exercise: bytes of float32 scores for 16 heads, batch 8, 1024 tokens."""
    check_answer(answer, 536_870_912, name="the number of bytes", hints={
        134_217_728: "that is the number of scores; each float32 score takes 4 bytes.",
        33_554_432: "every head has its own score matrix: multiply by num_heads = 16.",
        1_073_741_824: "that counts the scores and the softmax weights together; the question asks for the "
                       "scores only.",
        524_288: "the score matrix is num_queries x num_kvpairs = 1024 x 1024 per head and sequence: it grows "
                 "as n^2, not n.",
    }, success="8 * 16 * 1024 * 1024 * 4 bytes = 512 MiB, for one layer's scores alone.")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 06: what heads learn
# ----------------------------------------------------------------------------------------------------------------

def check_task_targets(answer: Any) -> None:
    """Exercise: targets of ``TwoLookupTask(vocab_size=10, seq_len=5)`` for the tokens ``[3, 1, 4, 1, 5]``."""
    check_answer(answer, (-100, 33, 13, 43, 13), name="the targets", hints={
        (-100, 13, 43, 13, 53): "the local part is the token one step BACK, x[t-1], not the token at t itself.",
        (-100, 33, 31, 34, 31): "the class is local * vocab_size + first, so the local token is the tens digit "
                                "here: position 1 has local 3 and first 3, class 33; position 2 has local 1, "
                                "class 1 * 10 + 3.",
        (33, 13, 43, 13, 53): "position 0 has no token one step back, so its target is IGNORE (-100).",
        (3, 33, 13, 43, 13): "position 0 has no token one step back, so its target is IGNORE (-100), not a class.",
    }, success="IGNORE at position 0, then x[t-1] * 10 + x[0] at every position t.")


def _ablate_right(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    head_dim = concatenated.shape[-1] // num_heads
    keep = torch.ones(concatenated.shape[-1], dtype=concatenated.dtype)
    keep[head * head_dim:(head + 1) * head_dim] = 0
    return concatenated * keep


def _ablate_tokens(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    head_dim = concatenated.shape[-1] // num_heads
    result = concatenated.clone()
    result[:, head * head_dim:(head + 1) * head_dim] = 0
    return result


def _ablate_width_num_heads(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    result = concatenated.clone()
    result[..., head * num_heads:(head + 1) * num_heads] = 0
    return result


def _ablate_all_but(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    return concatenated - _ablate_right(concatenated, head, num_heads)


def check_ablate_head(fn: Any) -> None:
    """Exercise: ``my_ablate_head(concatenated, head, num_heads)`` zeroes one head's features before ``W_o``."""
    cases = [(torch.arange(1.0, 1 + 2 * 3 * 4).reshape(2, 3, 4), 1, 2),
             (torch.arange(1.0, 1 + 1 * 4 * 12).reshape(1, 4, 12), 0, 3),
             (torch.arange(1.0, 1 + 3 * 8 * 16).reshape(3, 8, 16), 2, 4),
             (torch.arange(1.0, 1 + 2 * 5 * 6).reshape(2, 5, 6), 5, 6)]
    check_function(fn, _ablate_right, cases, name="my_ablate_head", arg_names=["concatenated", "head", "num_heads"],
                   hints={
        _ablate_tokens: "you zeroed positions (axis 1); a head owns FEATURES (the last axis): "
                        "concatenated[..., head * head_dim:(head + 1) * head_dim].",
        _ablate_width_num_heads: "each head owns head_dim = num_hiddens // num_heads features, not num_heads.",
        _ablate_all_but: "you kept only that head; the exercise zeroes that head and keeps all the others.",
    }, mutation_hint="your function changed its input in place; the model still needs the original. Work on a "
                     "copy (concatenated.clone()) or multiply by a mask.",
       success="head h owns features h * head_dim .. (h + 1) * head_dim - 1 of the concatenation, on every position.")



# ----------------------------------------------------------------------------------------------------------------
# Chapter 07: batching
# ----------------------------------------------------------------------------------------------------------------

def check_call_counts(answer: Any) -> None:
    """Exercise: calls of the per-sample loop, the per-head loop and the batched version for b=64, h=8."""
    check_answer(answer, (64, 8, 1), name="the numbers of calls", hints={
        (64, 512, 1): "the loop over heads runs one call per HEAD, each with the whole batch inside it: 8 calls.",
        (512, 8, 1): "the loop over samples runs one call per sample (64); the heads of a sample go together.",
        (64, 8, 8): "the batched version folds the heads into the batch axis: one call for everything.",
        (1, 8, 64): "the order is (loop over samples, loop over heads, batched).",
    }, success="batch_size calls, num_heads calls, and one call with (batch_size * num_heads) samples.")


def check_score_bytes_answer(answer: Any) -> None:
    """Exercise: bytes of one float16 score tensor for batch_size=8, 12 heads, 4096 tokens."""
    check_answer(answer, 3_221_225_472, name="the number of bytes", hints={
        6_442_450_944: "that is float32 (4 bytes per score); float16 takes 2 bytes.",
        1_610_612_736: "that is the number of scores; each float16 score takes 2 bytes.",
        268_435_456: "every head has its own score matrix: multiply by num_heads = 12.",
        786_432: "the score matrix is 4096 x 4096 per head and sequence: it grows as n^2, not n.",
    }, success="8 * 12 * 4096 * 4096 * 2 bytes = 3 GiB, even in float16: the reason for fused kernels.")


def _attention_flops(batch_size: int, seq_len: int, num_hiddens: int) -> int:
    flops = mha_flops(batch_size, seq_len, seq_len, num_hiddens, num_heads=1)
    return flops["scores"] + flops["weights @ values"]


def check_attention_flops(fn: Any) -> None:
    """Exercise: ``my_attention_flops(batch_size, seq_len, num_hiddens)``, the two products of self-attention."""
    cases = [{"batch_size": 1, "seq_len": 3, "num_hiddens": 2}, {"batch_size": 32, "seq_len": 128, "num_hiddens": 64},
             {"batch_size": 2, "seq_len": 4096, "num_hiddens": 768}]
    check_formula(fn, _attention_flops, cases, name="my_attention_flops", hints={
        lambda b, n, d: 2 * b * n * n * d:
            "attention has TWO products (Q K^T and weights @ V), or you counted one FLOP per multiply-add: "
            "the answer is 2 products x 2 FLOPs x b * n^2 * d.",
        lambda b, n, d: b * n * n * d:
            "count both products, Q K^T and weights @ V, and two FLOPs (a multiply and an add) for each "
            "multiply-add.",
        lambda b, n, d: 4 * b * n * d:
            "every query meets every key: each product has n * n * d multiply-adds, so the count grows as n^2.",
    }, success="4 * batch_size * seq_len^2 * num_hiddens, whatever the number of heads.")


# ----------------------------------------------------------------------------------------------------------------
# The machinery
# ----------------------------------------------------------------------------------------------------------------

def _int_cases(specs: Sequence[tuple[int, int, int, int]]) -> list[tuple]:
    """Inputs ``torch.arange(b*n*hd).reshape(b, n, hd)`` (every number different) with ``num_heads``."""
    return [(torch.arange(b * n * hd).reshape(b, n, hd), h) for b, n, hd, h in specs]


def _answer_message(answer: Any, expected: Any, *, name: str, hints: Mapping[Any, str] | None,
                    success: str) -> str:
    if _contains_ellipsis(answer):
        return NOT_YET + f"replace each ... in your answer with your prediction of {name}, then run this cell again."
    given = _plain(answer)
    if _same(given, expected):
        return CORRECT + (success or f"{name} is {_show(expected)}.")
    for wrong, hint in (hints or {}).items():
        if _same(given, _plain(wrong)):
            return NOT_YET + hint
    if _form(given) != _form(expected):
        return NOT_YET + (f"write {name} in the form {_form(expected)}, with a number in place of each ...; "
                          f"your answer {_show(given)} has another form.")
    return NOT_YET + f"{_show(given)} is not {name}. Check your reasoning step by step, then try again."


def _function_message(fn: Any, reference: Callable, cases: Sequence[tuple], *, name: str, arg_names: Sequence[str],
                      hints: Mapping[Callable, str] | None, success: str, mutation_hint: str | None = None,
                      keywords: bool = False) -> str:
    if not callable(fn):
        return _not_callable(fn, name)
    for args in cases:
        where = _describe_case(arg_names, args, keywords)
        expected = reference(*_copy(args))
        given_args = _copy(args)
        try:
            got = fn(*given_args)
        except NotImplementedError:
            return NOT_YET + (f"{name} still raises NotImplementedError. Write its body in the cell above (delete "
                              f"the raise line), run that cell, then run this one again.")
        except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
            return NOT_YET + _explain_error(error, name, where, arg_names if not keywords else list(args[0]))
        if mutation_hint and not all(_same(a, b) for a, b in zip(given_args, args, strict=True)):
            return NOT_YET + mutation_hint
        if _same(got, expected):
            continue
        for wrong, hint in (hints or {}).items():
            try:
                candidate = wrong(*_copy(args))
            except Exception:  # noqa: BLE001 - a wrong variant that cannot run on this case cannot match
                continue
            if not _same(candidate, expected) and _same(got, candidate):
                return NOT_YET + hint.format(shape=_shape(got), expected_shape=_shape(expected))
        return NOT_YET + _difference(got, expected, name, where)
    return CORRECT + (success or f"{name} agrees with the reference on {len(cases)} inputs.")


def _not_callable(fn: Any, name: str) -> str:
    if fn is ... or fn is None:
        return NOT_YET + f"pass your function {name} itself (no brackets), e.g. check_...({name})."
    return NOT_YET + f"pass a function (e.g. {name}, without brackets), got {type(fn).__name__}."


def _explain_error(error: Exception, name: str, where: str, arg_names: Sequence[str]) -> str:
    message = str(error).split("\n")[0].rstrip(".")
    kind = type(error).__name__
    if isinstance(error, TypeError) and ("positional argument" in message or "unexpected keyword" in message):
        return (f"{name} could not be called with {len(arg_names)} arguments ({kind}: {message}). "
                f"It should take ({', '.join(arg_names)}), in this order.")
    if "without overflow" in message:
        return (f"a fill value in {name} does not fit in the dtype of the scores ({where}): {message}. A number "
                f"like -1e9 is outside the float16 range; use torch.finfo(X.dtype).min, the dtype's own minimum.")
    if "view size is not compatible" in message:
        return (f"view(...) failed in {name} ({where}) because the tensor is not contiguous: after a transpose "
                f"or permute its elements are out of memory order. Use reshape(...), or .contiguous() before view.")
    if "is invalid for input of size" in message:
        return (f"a view/reshape in {name} asked for a shape that does not hold the same number of elements "
                f"({where}): {message}. Compute the sizes from the input, e.g. head_dim = num_hiddens // num_heads.")
    if "cannot be multiplied" in message or "Expected size for first two dimensions" in message \
            or "must match the size of tensor" in message or "Expected batch2_sizes" in message:
        return (f"the shapes did not fit in {name} ({where}): {message}. In queries @ keys^T the keys must be "
                f"transposed over their last two axes: keys.transpose(-2, -1).")
    if isinstance(error, NameError):
        return (f"{name} uses a name that does not exist ({kind}: {message}). Use only its arguments and names "
                f"defined in the notebook.")
    return f"{name} raised {kind}: {message} ({where}). Fix the cell above, run it, then run this cell again."


def _difference(got: Any, expected: Any, name: str, where: str) -> str:
    if isinstance(expected, tuple) and not isinstance(got, tuple):
        return (f"{name} should return {len(expected)} results as a tuple, ({', '.join(['...'] * len(expected))}), "
                f"got a {type(got).__name__} ({where}).")
    if isinstance(expected, tuple):
        if len(got) != len(expected):
            return f"{name} should return {len(expected)} results, got {len(got)} ({where})."
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if not _same(g, e):
                return _difference(g, e, f"result {i} of {name}", where)
    if got is None:
        return f"{name} returned None ({where}). Did you forget the return statement?"
    if isinstance(expected, Tensor):
        if not isinstance(got, Tensor):
            return f"{name} should return a tensor, got {type(got).__name__} ({where})."
        if got.shape != expected.shape:
            return f"your output has shape {_shape(got)} but should have {_shape(expected)} ({where})."
        if torch.isnan(got.double()).any() and not torch.isnan(expected.double()).any():
            return f"your output contains NaN ({where}); the reference has none."
        diff = (got.double() - expected.double()).abs()
        index = tuple(int(i) for i in (diff == diff.max()).nonzero()[0])
        return (f"your output has the right shape {_shape(got)} but different values ({where}): at index {index} "
                f"it is {_number(got[index])}, expected {_number(expected[index])}.")
    return f"{name} gave {_show(_plain(got))}, expected {_show(expected)} ({where})."


def _describe_case(arg_names: Sequence[str], args: tuple, keywords: bool) -> str:
    if keywords:
        return "for " + ", ".join(f"{k}={v!r}" for k, v in args[0].items())
    parts = []
    for arg_name, value in zip(arg_names, args, strict=True):
        if isinstance(value, Tensor):
            unusual = "" if value.dtype in (torch.float32, torch.int64) else f" in {str(value.dtype)[6:]}"
            parts.append(f"{arg_name} of shape {_shape(value)}{unusual}" if value.dim() != 1 or value.numel() > 8
                         else f"{arg_name} = {value.tolist()}")
        elif isinstance(value, torch.nn.Module):
            continue
        else:
            parts.append(f"{arg_name}={value!r}")
    return "for " + ", ".join(parts)


def _copy(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, Tensor) else a for a in args)


def _same(a: Any, b: Any) -> bool:
    """Equal values: tensors of equal shape (close for floats), numbers (close), sequences element by element."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.shape != b.shape:
            return False
        low_precision = {a.dtype, b.dtype} & {torch.float16, torch.bfloat16}
        tolerance = 2e-3 if low_precision else 1e-5
        a, b = a.detach().double(), b.detach().double()
        return bool(torch.allclose(a, b, rtol=10 * tolerance, atol=tolerance, equal_nan=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _plain(x: Any) -> Any:
    """An answer in plain Python: torch.Size and lists become tuples, small tensors nested tuples of numbers."""
    if isinstance(x, Tensor):
        return x.item() if x.dim() == 0 else tuple(_plain(row) for row in x)
    if isinstance(x, (tuple, list)):  # torch.Size is a tuple
        return tuple(_plain(item) for item in x)
    return x


def _contains_ellipsis(x: Any) -> bool:
    return x is ... or (isinstance(x, (tuple, list)) and any(_contains_ellipsis(item) for item in x))


def _form(x: Any) -> str:
    """The form of an answer with ... for each number: ((6, 1), 2) -> '((..., ...), ...)'."""
    if isinstance(x, tuple):
        return "(" + ", ".join(_form(item) for item in x) + ("," if len(x) == 1 else "") + ")"
    return "..." if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def _show(x: Any) -> str:
    return repr(x)


def _shape(x: Any) -> str:
    return str(tuple(x.shape)) if isinstance(x, Tensor) else type(x).__name__


def _number(x: Tensor) -> str:
    value = x.item()
    return str(value) if isinstance(value, int) else f"{value:.4g}"
