"""The exercises of chapter 02, scaled dot-product attention.

``check_score_variance``, ``check_causal_counts``, ``check_attention``, ``check_masked_softmax``
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib.functional import dot_product_attention, masked_softmax

from ..i18n import _
from ._engine import check_answer, check_function

__all__ = ['check_attention', 'check_causal_counts', 'check_masked_softmax', 'check_score_variance']


def check_score_variance(answer: Any) -> None:
    """Exercise: Var(q . k) for d_k = 64 when every feature has variance 4, and the number to divide by."""
    check_answer(answer, (1024, 32), name=_("the variance and the divisor"), hints={
        (64, 8): _("the features have variance 4 here, not 1: each product q_i k_i has variance 4 * 4 = 16."),
        (256, 16): _("both q_i and k_i have variance 4, so each product q_i k_i has variance 4 * 4 = 16, "
                     "not 4; the sum of 64 of them has 64 * 16."),
        (1024, 1024): _("dividing a number by c divides its variance by c squared. To bring 1024 down to 1, "
                        "divide by the standard deviation, sqrt(1024)."),
        (1024, 8): _("sqrt(d_k) = 8 only brings the variance back to 1 when the features have variance 1. Here "
                     "the variance is 1024, so divide by sqrt(1024)."),
    }, success=_("Var(q . k) = d_k * 4 * 4 = 1024; dividing by its standard deviation 32 brings it back to 1."))


def check_causal_counts(answer: Any) -> None:
    """Exercise: how many keys each query may see in ``causal_mask(3, 5)``."""
    check_answer(answer, (1, 2, 3), name=_("the number of visible keys per query"), hints={
        (3, 4, 5): _("that is the bottom-right alignment (the last query sees every key). causal_mask and "
                     "PyTorch's is_causal=True align the triangle top-left: query i sees keys 0..i."),
        (0, 1, 2): _("query i may see key i itself, not only the keys before it: the diagonal is True."),
        (1, 2, 3, 3, 3): _("causal_mask(3, 5) has 3 rows, one per query: give 3 numbers."),
    }, success=_("query i sees keys 0..i: 1, 2 and 3 keys; keys 3 and 4 stay hidden from every query."))


def _attention_right(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    return dot_product_attention(queries, keys, values)


def _attention_variant(queries: Tensor, keys: Tensor, values: Tensor, *, scale: float | None = None,
                       dim: int = -1) -> tuple[Tensor, Tensor]:
    d_k = queries.shape[-1]
    scale = 1 / math.sqrt(d_k) if scale is None else scale
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


def _attention_swapped(queries: Tensor, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    output, weights = _attention_variant(queries, keys, values)
    return weights, output


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
        _attention_no_scale: _("the scores are not scaled: divide queries @ keys^T by sqrt(d_k), where d_k is the "
                               "number of features of a query."),
        _attention_scale_by_d: _("you divided the scores by d_k; divide by sqrt(d_k) (math.sqrt(d_k)), which brings "
                                 "their variance back to 1."),
        _attention_softmax_over_queries: _("the softmax runs over the wrong axis: the weights of each QUERY (each "
                                           "row) must sum to 1, so use softmax(..., dim=-1), over the keys."),
        _attention_weights_only: _("your function returned only the weights. Return a pair: "
                                   "(weights @ values, weights)."),
        _attention_output_only: _("your function returned only the output. Return a pair: (output, weights)."),
        _attention_swapped: _("your function returned (weights, output); the order is (output, weights), as "
                              "dot_product_attention and nn.MultiheadAttention return them."),
    }, success=_("softmax(Q K^T / sqrt(d_k)) V, with the weights of each query summing to 1."))


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


def _masked_softmax_renormalised(X: Tensor, valid_lens: Tensor) -> Tensor:
    keep = torch.arange(X.shape[-1]) < valid_lens[:, None, None]  # (b, 1, k)
    weights = F.softmax(X, dim=-1) * keep
    return weights / weights.sum(dim=-1, keepdim=True)


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
        _masked_softmax_zero_fill: _("you filled the hidden scores with 0, but exp(0) = 1: hidden keys still get "
                                     "weight. Fill with a very negative number, torch.finfo(X.dtype).min."),
        _masked_softmax_large_negative: _("almost: a row whose valid length is 0 gets the same weight on every "
                                          "hidden key. Set the weights of hidden keys to 0 after the softmax "
                                          "(e.g. masked_fill(~mask, 0.0))."),
        _masked_softmax_minus_inf: _("a row whose valid length is 0 comes out NaN: with a -inf fill its scores "
                                     "are all -inf, and renormalising softmax(X) * mask divides 0 by 0. Keep "
                                     "your approach but set the weights of hidden keys to 0 afterwards (e.g. "
                                     "torch.nan_to_num(weights, nan=0.0) or masked_fill(~mask, 0.0))."),
        _masked_softmax_renormalised: _("a row whose valid length is 0 comes out NaN: renormalising softmax(X) * mask "
                                        "divides 0 by 0 there. Set the weights of such rows to 0 afterwards (e.g. "
                                        "torch.nan_to_num(weights, nan=0.0))."),
        _masked_softmax_off_by_one: _("each row keeps one key too many: key j is valid when j < valid_len, "
                                      "not j <= valid_len."),
    }, success=_("hidden keys get weight exactly 0, and a row with valid length 0 is all zeros, not NaN."),
        mutation_hint=_("your function changed its input X (an in-place fill like X[~mask] = ...). Use the "
                        "out-of-place X.masked_fill(~mask, value), which leaves the caller's scores intact."))
