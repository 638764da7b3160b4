"""The exercises of chapter 08, pitfalls.

``check_fixed_masked_softmax``, ``check_lens_that_hide_bug4``, ``check_finfo_min_minus_100``
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..i18n import _
from ._engine import CORRECT, NOT_YET, check_answer, check_function, contains_ellipsis, report

__all__ = ["check_finfo_min_minus_100", "check_fixed_masked_softmax", "check_lens_that_hide_bug4"]


def _softmax_right(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min), dim=-1)


def _softmax_dim1(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min), dim=1)


def _softmax_inverted(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask != 0, torch.finfo(scores.dtype).min), dim=-1)


def _softmax_cases() -> list[tuple]:
    generator = torch.Generator().manual_seed(8)
    cases = []
    for batch_size, num_queries, num_kvpairs in [(2, 3, 4), (1, 5, 2), (3, 2, 6)]:
        scores = torch.randn(batch_size, num_queries, num_kvpairs, generator=generator).half()  # float16
        mask = (torch.rand(batch_size, num_queries, num_kvpairs, generator=generator) > 0.4).long()
        mask[..., 0] = 1  # every query sees at least one key: no fully masked row in this exercise
        cases.append((scores, mask))
    return cases


def check_fixed_masked_softmax(fn: Any) -> None:
    """Exercise 1: ``fixed_softmax(scores, mask)`` for float16 scores ``(batch_size, num_queries, num_kvpairs)``."""
    check_function(fn, _softmax_right, _softmax_cases(), name="fixed_softmax", arg_names=["scores", "mask"], hints={
        _softmax_dim1: _("the softmax still runs over dim=1, the queries (section 9): each query's weights over the "
                         "keys must sum to 1, so use dim=-1."),
        _softmax_inverted: _("the mask is inverted (section 6): mask == 0 marks the keys to HIDE, so fill where "
                             "mask == 0, not where mask != 0."),
    }, success=_("a fill the dtype can hold (torch.finfo(scores.dtype).min) and the softmax over the keys, dim=-1."))


def check_lens_that_hide_bug4(answer: Any) -> None:
    """Exercise 3: two different ``valid_lens`` of batch_size 2 for which repeat and repeat_interleave agree."""
    if contains_ellipsis(answer):
        report(_(NOT_YET) + _("replace each ... with a number, then run this cell again."))
        return
    try:
        pair = [torch.as_tensor(lens).reshape(-1).tolist() for lens in answer]
    except (TypeError, ValueError, RuntimeError):
        pair = None
    if pair is None or len(pair) != 2 or any(len(lens) != 2 for lens in pair):
        report(_(NOT_YET) + _("give two valid_lens, each with batch_size = 2 numbers, e.g. ([..., ...], [..., ...])."))
        return
    if pair[0] == pair[1]:
        report(_(NOT_YET) + _("the two valid_lens must differ from each other."))
        return
    for lens in pair:
        if torch.tensor(lens).repeat(2).tolist() != torch.tensor(lens).repeat_interleave(2).tolist():
            a, b = lens
            report(_(NOT_YET) + _("{lens}.repeat(2) gives {tiled}, but repeat_interleave(2) gives {interleaved}: they "
                                 "agree only when the two lengths are the same.").format(
                lens=lens, tiled=[a, b, a, b], interleaved=[a, a, b, b]))
            return
    report(_(CORRECT) + _("repeat and repeat_interleave agree whenever every sentence has the same length, as in a "
            "quick test with no padding: the bug hides exactly there."))


def check_finfo_min_minus_100(answer: Any) -> None:
    """Exercise 4: ``torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16) - 100``."""
    value = answer.item() if isinstance(answer, Tensor) and answer.numel() == 1 else answer
    if isinstance(value, float) and value != value:  # NaN is the one number not equal to itself
        report(_(NOT_YET) + _("nothing here is undefined: a finite number minus 100 overflows to -inf, not NaN."))
        return
    check_answer(answer, float("-inf"), name=_("the result"), hints={
        -65604: _("float16 cannot hold -65604: its most negative finite number is -65504, and anything below "
                  "about -65520 rounds to -inf."),
        -65504: _("the step between float16 numbers near 65504 is 32, so 100 is not lost in rounding here: "
                  "-65604 is past the most negative float16 and becomes -inf."),
    }, success=_("-inf: the fill value was already the most negative float16, so any further step overflows."))
