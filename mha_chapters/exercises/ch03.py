"""The exercises of chapter 03, splitting heads.

``check_samples_by_hand``, ``check_folded_sample``, ``check_transpose_qkv``, ``check_transpose_output``,
``check_repeat_valid_lens``
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from mha_lib.functional import transpose_output, transpose_qkv

from ..i18n import _
from ._engine import check_answer, check_function, int_cases

__all__ = ['check_folded_sample', 'check_repeat_valid_lens', 'check_samples_by_hand', 'check_transpose_output',
           'check_transpose_qkv']


def check_samples_by_hand(answer: Any) -> None:
    """Exercise: the 10..27 tensor of section 1 through ``transpose_qkv(X, 2)``: samples 1 and 2 of the result."""
    check_answer(answer, (((12, 13), (16, 17)), ((20, 21), (24, 25))), name=_("samples 1 and 2"), hints={
        (((14, 15), (16, 17)), ((20, 21), (22, 23))): _(
            "that is X.reshape(4, 2, 2), a reshape alone: it cuts memory in order, so sample 1 is token 1 of "
            "sentence 0. The permute(0, 2, 1, 3) first puts each head's columns of all tokens together."),
        (((20, 21), (24, 25)), ((12, 13), (16, 17))): _(
            "your samples are in head-major order (h * batch_size + b): head 0 of both sentences, then head 1. The "
            "permute keeps the sentence first: sample = b * num_heads + h, so sample 1 is sentence 0, head 1."),
        (((10, 11), (14, 15)), ((12, 13), (16, 17))): _(
            "samples are counted from 0: sample 1 is the second sample, sentence 0, head 1 (1 = 0 * 2 + 1), and "
            "sample 2 is sentence 1, head 0."),
        (((12, 16), (13, 17)), ((20, 24), (21, 25))): _(
            "you wrote each sample with its features as rows; the tokens stay rows (seq_len, head_dim): token 0's "
            "two features, then token 1's."),
        (((12, 13), (16, 17)), ((22, 23), (26, 27))): _(
            "sample 1 is right; sample 2 is sentence 1, head 0 (2 = 1 * 2 + 0): features 0-1 of sentence 1, not "
            "features 2-3."),
    }, success=_("sample b * num_heads + h holds sentence b's tokens, head h's features: sample 1 is sentence 0, "
                 "head 1, and sample 2 sentence 1, head 0."))


def check_folded_sample(answer: Any) -> None:
    """Exercise: X of shape (3, 2, 6), num_heads = 3: the folded shape, and the sample of sentence 2, head 1."""
    check_answer(answer, ((9, 2, 2), 7), name=_("the folded shape and sample"), hints={
        ((9, 2, 2), 5): _("sample 5 is head-major order (h * batch_size + b). After permute(0, 2, 1, 3) the heads of "
                          "one sentence sit next to each other: sample = b * num_heads + h."),
        ((9, 2, 2), 6): _("samples are counted from 0: sentence 2, head 1 is 2 * 3 + 1."),
        ((9, 2, 2), 8): _("Python counts from 0: the first sample is sample 0, so sentence 2, head 1 is 2 * 3 + 1 = 7, "
                          "not 8."),
        ((9, 2, 2), 3): _("sentence 2 and head 1 are indices counted from 0 (as in X[2]), not the second sentence and "
                          "the first head: sample = 2 * 3 + 1."),
        ((3, 3, 2, 2), 7): _("that is the shape after the permute; the last reshape folds batch and heads into "
                             "one axis of 3 * 3 = 9 samples."),
        ((9, 2, 3), 7): _("head_dim = num_hiddens // num_heads = 6 // 3 = 2, not 3."),
        ((6, 2, 3), 7): _("there are 3 heads (num_heads = 3), so 3 * 3 = 9 samples of head_dim = 2 features."),
    }, success=_("(3, 2, 6) -> (9, 2, 2), and sentence b, head h is sample b * num_heads + h = 7."))


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
    return int_cases([(2, 3, 8, 4), (3, 5, 6, 3), (2, 2, 4, 2), (1, 4, 6, 2)])


def check_transpose_qkv(fn: Any) -> None:
    """Exercise: ``my_transpose_qkv(X, num_heads)``: ``(b, n, h*d) -> (b*h, n, d)``."""
    check_function(fn, transpose_qkv, _qkv_cases(), name="my_transpose_qkv", arg_names=["X", "num_heads"], hints={
        _transpose_qkv_no_permute: _("your output has shape {shape}, the right one, but heads should come before "
                                     "tokens: a reshape alone cuts the memory in order and mixes tokens and heads. "
                                     "Did you permute(0, 2, 1, 3) before the last reshape?"),
        _transpose_qkv_head_major: _("your samples are in head-major order (head 0 of every sentence, then head 1, "
                                     "...): permute(2, 0, 1, 3) puts heads before sentences. Use permute(0, 2, 1, 3) "
                                     "so that sentence b, head h is sample b * num_heads + h."),
        _transpose_qkv_no_fold: _("your output has 4 axes {shape}, the (b, h, n, d) layout: finish with a reshape "
                                  "that folds batch and heads into one axis, (b * h, n, d)."),
        _transpose_qkv_tokens_folded: _("your output has shape {shape} but should have {expected_shape}: you folded "
                                        "tokens into the batch. Keep the tokens axis; fold (sentence, head) pairs."),
    }, success=_("(b, n, h*d) -> (b, n, h, d) -> (b, h, n, d) -> (b*h, n, d), sentence-major."))


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
        _transpose_output_no_permute: _("your output has the right shape {shape}, but a reshape alone glues the "
                                        "heads together in memory order. Unfold to (b, h, n, d), permute(0, 2, 1, 3), "
                                        "then reshape to (b, n, h*d)."),
        _transpose_output_head_major: _("you unfolded the first axis as (heads, batch); transpose_qkv folded it as "
                                        "(batch, heads): reshape to (b, num_heads, n, d)."),
    }, success=_("transpose_output(transpose_qkv(X, h), h) gives X back."))


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
        _repeat_tiled: _("you used repeat, which tiles the whole tensor: [1, 2] -> [1, 2, 1, 2]. The heads of one "
                         "sentence sit next to each other, so each length must repeat in place: repeat_interleave."),
        _repeat_not_at_all: _("your result has one length per sentence, {shape}; the folded batch has "
                              "batch_size * num_heads samples, {expected_shape}."),
    }, success=_("repeat_interleave: [1, 2] -> [1, 1, 2, 2], one length per (sentence, head) sample."))
