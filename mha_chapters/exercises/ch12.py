"""The exercises of chapter 12, rotary position embedding.

``check_rotate_half``, ``check_interleaved_to_halves``, ``check_shift_answer``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from mha_lib.rope import _permute_rows, _rotate_half, _rotate_pairs, interleaved_to_halves, rotate_half

from ..i18n import _
from ._engine import CORRECT, NOT_YET, check_function, contains_ellipsis, report

__all__ = ["check_interleaved_to_halves", "check_rotate_half", "check_shift_answer"]


def _is_library(fn: Any, *functions: Any) -> bool:
    """True when fn is one of mha_lib's own functions that answer the exercise, under any name."""
    return any(fn is f for f in functions)


def _rotate_half_cases() -> list[tuple[Tensor]]:
    gen = torch.Generator().manual_seed(12)
    return [(torch.arange(1.0, 9.0),), (torch.randn(2, 3, 6, generator=gen),),
            (torch.randn(1, 2, 4, 16, generator=gen),)]


def check_rotate_half(fn: Any) -> None:
    """Exercise: ``my_rotate_half(x)``, ``(x1, x2) -> (-x2, x1)`` for the two halves of the last axis."""
    def halves(x: Tensor) -> tuple[Tensor, Tensor]:
        return x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]

    if _is_library(fn, rotate_half, _rotate_half):
        report(_(NOT_YET) + _("that is mha_lib's own rotate_half: write the function yourself, from x.chunk or "
                              "slices and torch.cat."))
        return
    wrong = {
        _rotate_pairs:
            _("you paired neighbours, features 2i and 2i+1: that is the interleaved convention (RoFormer, Meta's "
              "Llama code). rotate_half pairs feature i with feature i + head_dim/2: cut the last axis into two "
              "halves, x1, x2 = x.chunk(2, dim=-1)."),
        lambda x: torch.cat([halves(x)[1], -halves(x)[0]], dim=-1):
            _("the minus sign is on the wrong half: that turns every pair by -90 degrees. A quarter turn takes "
              "(a, b) to (-b, a), so the result starts with -x2: torch.cat([-x2, x1], dim=-1)."),
        lambda x: torch.cat([halves(x)[1], halves(x)[0]], dim=-1):
            _("you swapped the halves but negated nothing: a swap is a reflection, not a turn. The result starts "
              "with -x2: torch.cat([-x2, x1], dim=-1)."),
        lambda x: torch.cat([-halves(x)[0], halves(x)[1]], dim=-1):
            _("each half stays in its place: the two halves must change places, -x2 first, then x1."),
        lambda x: -x.flip(-1):
            _("flip reverses the order of all features: feature 0 then meets the last one. Keep each half in its "
              "order and exchange the halves: torch.cat([-x2, x1], dim=-1)."),
    }
    check_function(fn, _rotate_half, _rotate_half_cases(), name="my_rotate_half", arg_names=["x"], hints=wrong,
                   success=_("(x1, x2) -> (-x2, x1) turns every pair (i, i + head_dim/2) by a quarter turn, as in "
                             "GPT-NeoX and Hugging Face's Llama."),
                   mutation_hint=_("your function changed its argument x in place; build a new tensor instead "
                                   "(torch.cat)."))


def _weight_cases() -> list[tuple[Tensor, Tensor, int, int]]:
    """(W_q, W_k, num_heads, num_kv_heads): weights and biases, one key-value head per query head and fewer (GQA)."""
    cases = []
    for num_heads, num_kv_heads, head_dim, in_features in ((2, 2, 8, 3), (4, 2, 4, 5), (1, 1, 6, 2), (6, 2, 8, 1),
                                                           (4, 1, 4, 3)):
        q_rows, k_rows = num_heads * head_dim, num_kv_heads * head_dim
        W_q = torch.arange(float(q_rows * in_features)).reshape(q_rows, in_features)
        W_k = -torch.arange(float(k_rows * in_features)).reshape(k_rows, in_features) - 1
        cases.append((W_q, W_k, num_heads, num_kv_heads))
    cases.append((torch.arange(16.0), -torch.arange(8.0) - 1, 4, 2))  # the biases of a GQA layer, 1-D
    return cases


def _reference_conversion(W_q: Tensor, W_k: Tensor, num_heads: int, num_kv_heads: int) -> tuple[Tensor, Tensor]:
    return _permute_rows(W_q, num_heads, to_halves=True), _permute_rows(W_k, num_kv_heads, to_halves=True)


def check_interleaved_to_halves(fn: Any) -> None:
    """Exercise: ``my_interleaved_to_halves(W_q, W_k, num_heads, num_kv_heads)``: the rows of an interleaved
    checkpoint's ``W_q`` and ``W_k`` (or of their biases), in the order that the halves convention needs."""
    if _is_library(fn, interleaved_to_halves, _permute_rows):
        report(_(NOT_YET) + _("that is mha_lib's own interleaved_to_halves: write the permutation yourself, with "
                              "reshape and permute."))
        return

    def each(convert: Any) -> Any:  # one projection's mistake, made on both
        return lambda W_q, W_k, num_heads, num_kv_heads: (convert(W_q, num_heads), convert(W_k, num_kv_heads))

    def whole_matrix(W: Tensor, num_heads: int) -> Tensor:
        return W.reshape(W.shape[0] // 2, 2, *W.shape[1:]).transpose(0, 1).reshape(W.shape)

    def inverse(W: Tensor, num_heads: int) -> Tensor:
        return _permute_rows(W, num_heads, to_halves=False)

    def no_transpose(W: Tensor, num_heads: int) -> Tensor:
        return W.reshape(num_heads, -1, 2, *W.shape[1:]).reshape(W.shape)

    def k_with_num_heads(W_q: Tensor, W_k: Tensor, num_heads: int, num_kv_heads: int) -> tuple[Tensor, Tensor]:
        return _permute_rows(W_q, num_heads, to_halves=True), _permute_rows(W_k, num_heads, to_halves=True)

    def k_unchanged(W_q: Tensor, W_k: Tensor, num_heads: int, num_kv_heads: int) -> tuple[Tensor, Tensor]:
        return _permute_rows(W_q, num_heads, to_halves=True), W_k

    wrong = {
        k_with_num_heads:
            _("W_k was cut into num_heads heads: under grouped-query attention W_k holds num_kv_heads heads, so its "
              "pairs were taken across two heads. Convert W_q with num_heads and W_k with num_kv_heads, as Hugging "
              "Face's script permutes k_proj with num_key_value_heads."),
        k_unchanged:
            _("W_k kept its rows: the keys are rotated too, so W_k needs the same permutation as W_q, with "
              "num_kv_heads heads (only W_v keeps its rows)."),
        each(whole_matrix):
            _("you reordered the rows of the whole matrix as if it were one head: the pairs of head 1 then move into "
              "head 0. Pairs live inside a head, as RoPE acts after the head split: reshape to (heads, "
              "head_dim // 2, 2, ...) first."),
        each(inverse):
            _("that is the inverse permutation, from halves to interleaved: row i of a head went to row 2i. Here pair "
              "i sits in rows 2i and 2i+1 and must move to rows i and i + head_dim/2: reshape (heads, "
              "head_dim // 2, 2, ...), then transpose(1, 2)."),
        each(no_transpose):
            _("the rows are unchanged: reshape alone never moves an element. Exchange the pair axis and the member "
              "axis with transpose(1, 2) between the two reshapes (chapter 03's reshape -> permute -> reshape)."),
    }
    check_function(fn, _reference_conversion, _weight_cases(), name="my_interleaved_to_halves",
                   arg_names=["W_q", "W_k", "num_heads", "num_kv_heads"], hints=wrong,
                   success=_("inside each head row 2i + j moved to row j * head_dim/2 + i, W_q with num_heads and "
                             "W_k with num_kv_heads, weights and biases alike: what Hugging Face's Llama conversion "
                             "script does (never to W_v)."),
                   mutation_hint=_("your function changed W_q or W_k in place; return new tensors instead."))


CHOICES = "abcd"  # the largest change of a score: (a) < 1e-6, (b) 1e-6 .. 1e-3, (c) 1e-3 .. 1, (d) > 1


def _letters(answer: Any) -> str | None:
    """The answer as a sorted string of distinct letters, or None when it is not made of letters."""
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if isinstance(answer, str):
        items = [ch for ch in answer.lower() if not ch.isspace() and ch not in ",;()[]'\""]
    elif isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(item, str) for item in answer):
        items = [ch for item in answer for ch in item.lower().strip("() ")]
    else:
        return None
    return "".join(sorted(set(items)))


def check_shift_answer(answer: Any) -> None:
    """Exercise (predict): section 2's shift check in float32, every position + 1,000,000. The largest change of a
    score is (a) below 1e-6, (b) between 1e-6 and 1e-3, (c) between 1e-3 and 1, (d) above 1? One letter."""
    if contains_ellipsis(answer):
        report(_(NOT_YET) + _("replace ... with one letter, e.g. answer = \"b\", then run this cell again."))
        return
    letters = _letters(answer)
    if letters is None or len(letters) != 1 or letters not in CHOICES:
        report(_(NOT_YET) + _("answer with one letter among a, b, c, d, e.g. answer = \"b\"; got {answer!r}.").format(
            answer=answer))
        return
    if letters == "c":
        report(_(CORRECT) + _("positions near 1,000,000 are whole numbers, exact in float32, and so is the first "
                              "pair's angle m * theta_0 = m. The next pair's angle m * theta_1, about 316,000 at "
                              "head_dim 16, lies where float32 numbers are 0.03 apart: it is rounded by up to 0.016 "
                              "radians, so the turned queries and keys move by about a percent and the scores by more "
                              "than 1e-3, less than 1. The relative-position identity is exact; float32 angles at "
                              "large positions are not (real models compute m * theta_i in float32 at least)."))
        return
    hints = {
        "a": _("float32 has a 24-bit significand, about 7 significant digits: the angle m * theta_1, about 316,000 "
               "at head_dim 16, lies where float32 numbers are 0.03 apart, so it is rounded by up to 0.016 "
               "radians, far from 1e-6."),
        "b": _("the angle m * theta_1, about 316,000 at head_dim 16, lies where float32 numbers are 0.03 apart: "
               "rounded by up to 0.016 radians, it moves a score by more than 1e-3."),
        "d": _("the rounding of each angle is at most 0.016 radians, a small turn: the turned vectors move by about a "
               "percent of their length, so the scores move by less than 1."),
    }
    report(_(NOT_YET) + hints[letters])
