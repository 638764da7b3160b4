"""The exercises of chapter 08, pitfalls.

``check_fixed_masked_softmax``, ``check_missing_batch_axis``, ``check_lens_that_hide_bug4``,
``check_finfo_min_minus_100``
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..i18n import _
from ._engine import CORRECT, NOT_YET, _function_message, _plain, check_answer, contains_ellipsis, report

__all__ = ["check_finfo_min_minus_100", "check_fixed_masked_softmax", "check_lens_that_hide_bug4",
           "check_missing_batch_axis"]


def _softmax_right(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min), dim=-1)


def _softmax_dim1(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min), dim=1)


def _softmax_inverted(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(mask != 0, torch.finfo(scores.dtype).min), dim=-1)


def _softmax_cases() -> list[tuple]:
    """Three float16 cases, then one float32 case: a fill must suit the dtype of the scores it is given."""
    generator = torch.Generator().manual_seed(8)
    cases = []
    for (batch_size, num_queries, num_kvpairs), dtype in [((2, 3, 4), torch.float16), ((1, 5, 2), torch.float16),
                                                           ((3, 2, 6), torch.float16), ((2, 4, 5), torch.float32)]:
        scores = torch.randn(batch_size, num_queries, num_kvpairs, generator=generator).to(dtype)
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
VISIBLE_MAX_32 = -3.0e38  # the float32 probe's largest visible score, below every constant a reader might write


def _low_scores(dtype: torch.dtype = torch.float16) -> tuple[Tensor, Tensor]:
    """Scores at the bottom of the range of ``dtype``, keys 0-1 visible: only a fill at finfo.min (or -inf) stays below.

    float16: two visible scores 32 and 64 above finfo.min (-65504); float32: -3.1e38 and -3.0e38 (finfo.min is
    about -3.4e38), far below -1e9, -1e30 or float16's -65504 written as a constant.
    """
    low, high = (VISIBLE_MAX - 32, VISIBLE_MAX) if dtype == torch.float16 else (-3.1e38, VISIBLE_MAX_32)
    scores = torch.tensor([[[low, high, 0.5, 1.0]]], dtype=dtype)  # (1, 1, 4)
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
    fill = _("your fill stays below every real score, in float16 and in float32 alike (the checker gave it scores "
             "at the bottom of both ranges), as torch.finfo(scores.dtype).min or -inf made safe does")
    verdict = _("the softmax runs over the keys (dim=-1); {fill}; and {row}.").format(fill=fill, row=row)
    returned = _returned_dtype(fn)
    if returned is not None:
        verdict += " " + _("One detail: for float16 scores your function returns {dtype}, twice the memory; "
                           ".to(scores.dtype) returns the dtype it was given.").format(dtype=returned)
    return _(CORRECT) + verdict


def _returned_dtype(fn: Any) -> str | None:
    """The dtype ``fn`` returns for float16 scores when it is not float16 (an answer that computes in float32)."""
    scores, mask = _softmax_cases()[0]
    result = fn(scores.clone(), mask.clone())
    if isinstance(result, Tensor) and result.dtype != scores.dtype:
        return str(result.dtype).removeprefix("torch.")
    return None


def _fill_above_the_bottom(fn: Any) -> str:
    """A hint when visible scores at the bottom of the float16 or float32 range lose to the hidden keys; '' if not.

    A constant fill such as -100 or -1e4 passes every ordinary case (real scores lie above it), but a visible score
    below the fill then counts for less than a hidden key: the hidden keys take the weight. Section 5's fill,
    torch.finfo(scores.dtype).min, lies below every real score, and so does -inf (made safe as in section 8). The
    float32 probe catches a constant that is right for float16 only (-65504, or -1e9 after an upcast).
    """
    shares = {}
    for dtype in (torch.float16, torch.float32):
        scores, mask = _low_scores(dtype)
        name = str(dtype).removeprefix("torch.")
        try:
            weights = torch.as_tensor(fn(scores.clone(), mask.clone())).float()
            shares[dtype] = float(weights[0, 0, 2:].sum())
        except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
            return _("fixed_softmax raised {error} for {dtype} scores at the bottom of the range, (1, 1, 4) = "
                     "[[[{low}, {lowest}, 0.5, 1.0]]] with the last two keys hidden.").format(
                error=f"{type(error).__name__}: {error}", dtype=name, low=f"{float(scores[0, 0, 0]):g}",
                lowest=f"{float(scores[0, 0, 1]):g}")
        if math.isnan(shares[dtype]):
            return _("your output contains NaN for {dtype} scores at the bottom of the range; the reference has "
                     "none.").format(dtype=name)
    low16, low32 = (shares[dtype] >= 1e-3 for dtype in (torch.float16, torch.float32))
    if low16:
        return _("your fill is a constant above the bottom of the range, and real scores below it lose to the hidden "
                 "keys: a query that may see only scores near {lowest} (float16) gives {share} of its weight to hidden "
                 "keys. No real score lies below torch.finfo(scores.dtype).min (section 5): fill with it.").format(
            lowest=f"{VISIBLE_MAX:g}", share=f"{shares[torch.float16]:.0%}")
    if low32:
        return _("your fill is right for float16 but is a fixed number: float32 scores reach far lower, and a query "
                 "that may see only scores near {lowest} (float32) gives {share} of its weight to hidden keys. "
                 "torch.finfo(scores.dtype).min follows the dtype of the scores (section 5).").format(
            lowest=f"{VISIBLE_MAX_32:g}", share=f"{shares[torch.float32]:.0%}")
    return ""


def check_fixed_masked_softmax(fn: Any) -> None:
    """Exercise 1: ``fixed_softmax(scores, mask)`` for scores ``(batch_size, num_queries, num_kvpairs)``.

    Its ordinary cases (three float16, one float32) must equal a fill at ``finfo.min`` and a softmax over the keys;
    then a query with no visible key must get no NaN, and the verdict says what the answer did with it; last,
    visible scores at the bottom of the float16 and of the float32 range must keep their weight (a constant fill
    such as -1e4 gives it to the hidden keys in float16, -65504 or an upcast -1e9 in float32). The success line
    names only what was detected, and says so when float16 scores come back in another dtype.
    """
    message = _function_message(fn, _softmax_right, _softmax_cases(), name="fixed_softmax",
                                arg_names=["scores", "mask"], hints={
        _softmax_dim1: _("the softmax still runs over dim=1, the queries (section 9): each query's weights over the "
                         "keys must sum to 1, so use dim=-1."),
        _softmax_inverted: _("the mask is inverted (section 6): mask == 0 marks the keys to HIDE, so fill where "
                             "mask == 0, not where mask != 0."),
    }, success="")
    report(_fully_masked_message(fn) if message.startswith(_(CORRECT)) else message)


def split_without_unpacking(X: Tensor, num_heads: int) -> Tensor:
    """Exercise 2's split: ``view(X.size(0), -1, num_heads, head_dim).transpose(1, 2)``, which never checks X.dim()."""
    head_dim = X.shape[-1] // num_heads
    return X.view(X.size(0), -1, num_heads, head_dim).transpose(1, 2)  # (b, n, d) -> (b, h, n, head_dim)


def _missing_batch_axis_answer() -> tuple[tuple[int, ...], int]:
    """Exercise 2, computed: the split of 4 words (4, 64) without a batch axis, and the keys each word attends to."""
    words = torch.randn(4, 64, generator=torch.Generator().manual_seed(8))  # (seq_len, num_hiddens), no batch axis
    queries = split_without_unpacking(words, num_heads=8)  # (4, 64) -> (4, 1, 8, 8) -> (4, 8, 1, 8)
    return tuple(queries.shape), queries.shape[-2]  # the keys split the same way: num_kvpairs per "sentence"


def check_missing_batch_axis(answer: Any) -> None:
    """Exercise 2: ``(shape, keys)``: the split queries of ``torch.randn(4, 64)`` and how many keys each word sees."""
    shape, keys = _missing_batch_axis_answer()
    batch_size, num_heads, num_queries, head_dim = shape
    check_answer(answer, (shape, keys), name=_("(the shape, the keys per word)"), hints={
        ((1, num_heads, batch_size, head_dim), batch_size): _(
            "that is what the layer does WITH a batch axis, torch.randn(1, 4, 64). view(X.size(0), ...) takes the "
            "first axis as the batch, and without a batch axis that axis holds the 4 words."),
        ((batch_size, num_queries, num_heads, head_dim), keys): _(
            "that is the shape after the view, before transpose(1, 2), which swaps the heads in front: "
            "(4, 1, 8, 8) -> (4, 8, 1, 8)."),
        (shape, batch_size): _(
            "the shape is right, and it answers the second question: the key axis (the third) has length 1. Each "
            "word is a sentence of one token, so it attends to one key, itself."),
        (shape, num_heads): _(
            "8 is the number of heads; within each head a word attends over the key axis, the third one, of "
            "length 1."),
        (shape, 0): _("each word still attends to one key: itself, with weight 1 (a softmax over one score)."),
    }, success=_("{shape} and {keys}: view reads the 4 words as 4 sentences of one token, so each word attends "
                 "only to itself, with weight 1, and the layer returns W_o(W_v(x)) word by word: no error and no "
                 "context. Unpacking batch_size, seq_len, _ = X.shape, as FixedMHA does, turns this into an "
                 "error.").format(shape=shape, keys=keys))


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
