"""The exercises of chapter 08, pitfalls.

``check_fixed_masked_softmax``, ``check_lens_that_hide_bug4``, ``check_finfo_min_minus_100``
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..i18n import _
from ._engine import CORRECT, NOT_YET, _function_message, _plain, check_answer, contains_ellipsis, report

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
        mask[..., 0] = 1  # every query sees at least one key here; _nothing_to_see probes the other case
        cases.append((scores, mask))
    return cases


def _nothing_to_see() -> tuple[Tensor, Tensor]:
    """float16 scores (2, 3, 4) in which query 1 of sentence 1 may see no key at all (section 8)."""
    scores, mask = _softmax_cases()[0]
    mask = mask.clone()
    mask[1, 1] = 0
    return scores, mask


VISIBLE_MAX = -65440.0  # the largest visible score of the probe: the third most negative float16 (steps of 32)


def _low_scores() -> tuple[Tensor, Tensor]:
    """float16 scores at the bottom of the range, keys 0-1 visible: only a fill at finfo.min (or -inf) stays below."""
    scores = torch.tensor([[[VISIBLE_MAX - 32, VISIBLE_MAX, 0.5, 1.0]]], dtype=torch.float16)  # (1, 1, 4)
    mask = torch.tensor([[[1, 1, 0, 0]]])
    return scores, mask


def _fully_masked_message(fn: Any) -> str:
    """The verdict on a query with no visible key: NaN is wrong; zeros or even weights are described."""
    scores, mask = _nothing_to_see()
    try:
        weights = torch.as_tensor(fn(scores.clone(), mask.clone())).float()
    except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
        return _(NOT_YET) + _("fixed_softmax raised {error} for a query whose keys are all hidden (section 8): "
                              "such a row must give numbers, not an error.").format(
            error=f"{type(error).__name__}: {error}")
    hidden_row = weights[1, 1]
    if weights.isnan().any():
        return _(NOT_YET) + _("a query whose keys are all hidden gets NaN weights: your fill is -inf (or rounds to "
                              "it in float16), and the softmax computes 0/0 (section 8). Fill with "
                              "torch.finfo(scores.dtype).min, a number float16 can hold.")
    visible = torch.ones_like(mask, dtype=torch.bool)
    visible[1, 1] = False
    if not torch.allclose(weights[visible], _softmax_right(scores, mask).float()[visible], atol=1e-3):
        return _(NOT_YET) + _("one query with no visible key changed the weights of the other queries: each row's "
                              "softmax must depend on its own scores only.")
    if torch.equal(hidden_row, torch.zeros_like(hidden_row)):
        row = _("a query with no visible key gets all-zero weights, as mha_lib's masked_softmax does (section 8)")
    else:
        row = _("a query with no visible key gets even weights over its hidden keys: finite, no NaN "
                "(mha_lib's masked_softmax would set them to 0, section 8)")
    low_fill = _fill_above_the_bottom(fn)
    if low_fill:
        return _(NOT_YET) + low_fill
    fill = _("your fill is at the bottom of the range, like torch.finfo(scores.dtype).min: no real score lies below it")
    return _(CORRECT) + _("the softmax runs over the keys (dim=-1); {fill}; and {row}.").format(fill=fill, row=row)


def _fill_above_the_bottom(fn: Any) -> str:
    """A hint when visible scores at the bottom of the float16 range lose to the hidden keys; '' when they do not.

    A constant fill such as -100 or -1e4 passes every ordinary case (real scores lie above it), but a visible score
    below the fill then counts for less than a hidden key: the hidden keys take the weight. Section 5's fill,
    torch.finfo(scores.dtype).min, lies below every real score, and so does -inf (made safe as in section 8).
    """
    scores, mask = _low_scores()
    try:
        weights = torch.as_tensor(fn(scores.clone(), mask.clone())).float()
        hidden_share = float(weights[0, 0, 2:].sum())
    except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
        return _("fixed_softmax raised {error} for float16 scores at the bottom of the range, (1, 1, 4) = "
                 "[[[{low}, {lowest}, 0.5, 1.0]]] with the last two keys hidden.").format(
            error=f"{type(error).__name__}: {error}", low=f"{VISIBLE_MAX - 32:g}", lowest=f"{VISIBLE_MAX:g}")
    if math.isnan(hidden_share):
        return _("your output contains NaN for float16 scores at the bottom of the range; the reference has none.")
    if hidden_share < 1e-3:
        return ""
    return _("your fill is a constant above the bottom of the range, and real scores below it lose to the hidden "
             "keys: a query that may see only scores near {lowest} (float16) gives {share} of its weight to hidden "
             "keys. No real score lies below torch.finfo(scores.dtype).min (section 5): fill with it.").format(
        lowest=f"{VISIBLE_MAX:g}", share=f"{hidden_share:.0%}")


def check_fixed_masked_softmax(fn: Any) -> None:
    """Exercise 1: ``fixed_softmax(scores, mask)`` for float16 scores ``(batch_size, num_queries, num_kvpairs)``.

    Its ordinary cases must equal a fill at ``finfo.min`` and a softmax over the keys; then a query with no
    visible key must get no NaN, and the verdict says what the answer did with it; last, visible scores at the
    bottom of the float16 range must keep their weight (a constant fill such as -1e4 gives it to the hidden keys).
    """
    message = _function_message(fn, _softmax_right, _softmax_cases(), name="fixed_softmax",
                                arg_names=["scores", "mask"], hints={
        _softmax_dim1: _("the softmax still runs over dim=1, the queries (section 9): each query's weights over the "
                         "keys must sum to 1, so use dim=-1."),
        _softmax_inverted: _("the mask is inverted (section 6): mask == 0 marks the keys to HIDE, so fill where "
                             "mask == 0, not where mask != 0."),
    }, success="")
    report(_fully_masked_message(fn) if message.startswith(_(CORRECT)) else message)


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
    if any(not float(length).is_integer() or length < 0 for lens in pair for length in lens):
        report(_(NOT_YET) + _("a valid length counts keys, so each one is a whole number, 0 or more; your valid_lens "
                              "are {pair}.").format(pair=pair))
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
    value = answer.item() if isinstance(answer, Tensor) and answer.numel() == 1 else _plain(answer)
    if isinstance(answer, str):
        report(_(NOT_YET) + _("write the result as a number, not as text: float('-inf') for minus infinity, "
                              "-65504.0 for a finite number."))
        return
    if isinstance(value, float) and value != value:  # NaN is the one number not equal to itself
        report(_(NOT_YET) + _("nothing here is undefined: a finite number minus 100 overflows to -inf, not NaN."))
        return
    check_answer(answer, float("-inf"), name=_("the result"), hints={
        -65604: _("float16 cannot hold -65604: its most negative finite number is -65504, and anything below "
                  "about -65520 rounds to -inf."),
        -65504: _("the step between float16 numbers near 65504 is 32, so only a change smaller than 16 is lost in "
                  "rounding; 100 is not: -65604 is past the most negative float16 and becomes -inf."),
    }, success=_("-inf: -65504 is the most negative float16 and its neighbours are 32 apart, so subtracting 16 or "
                 "more rounds to -inf (less rounds back to -65504). A second mask or a negative bias added to a "
                 "filled score does exactly that."))
